#include "hosts.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace drtmx::bench {

Result<std::vector<HostLine>> read_hosts(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return invalid_argument("--hosts=" + path +
                            ": cannot read the file (one host per line, node 0 first)");
  }
  std::vector<HostLine> out;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    std::istringstream words(text);
    std::string host;
    if (!(words >> host) || host[0] == '#') continue;
    const std::string where = "--hosts=" + path + " line " + std::to_string(line);
    for (char c : host) {
      const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                      c == '_' || c == '@' || c == ':' || c == '[' || c == ']';
      if (!ok) {
        return invalid_argument(where + ": host '" + host +
                                "' holds a character a remote shell would misread");
      }
    }
    if (host[0] == '-') {
      return invalid_argument(where + ": the line must start with a host name, not '" + host + "'");
    }
    HostLine h{host, {}, line};
    std::string opt;
    while (words >> opt) {
      if (opt.rfind("--", 0) != 0 || opt.size() < 3) {
        return invalid_argument(where + ": '" + opt +
                                "' is not an option (after the host: --key=value words for "
                                "that node)");
      }
      h.options.push_back(opt);
    }
    out.push_back(std::move(h));
  }
  if (out.empty()) return invalid_argument("--hosts=" + path + ": no host in the file");
  return out;
}

namespace {

// The source address of a route to `host` (IPv4), or an error.
Result<std::string> source_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (int e = getaddrinfo(host.c_str(), "9", &hints, &res); e != 0) {
    return not_found("cannot resolve host '" + host + "' (" + gai_strerror(e) + ")");
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  // A UDP connect sends nothing: it only picks the route.
  const bool routed = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  const int err = errno;
  freeaddrinfo(res);
  sockaddr_in me{};
  socklen_t len = sizeof me;
  const bool named = routed && getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0;
  if (fd >= 0) close(fd);
  if (!named) {
    return unavailable("no route to host '" + host + "' (" + std::strerror(err) + ")");
  }
  char ip[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &me.sin_addr, ip, sizeof ip);
  return std::string(ip);
}

}  // namespace

Result<std::string> coordinator_bind_address(const std::vector<HostLine>& hosts) {
  const std::string give =
      "; give --coordinator-bind=ADDR (this machine's address on the hosts' network, or '*' "
      "for every interface) or --coordinator-host=ADDR";
  std::string chosen, first_host;
  for (const HostLine& h : hosts) {
    const size_t at = h.host.rfind('@');
    const std::string host = at == std::string::npos ? h.host : h.host.substr(at + 1);
    auto a = source_toward(host);
    if (!a) {
      return invalid_argument("--hosts: cannot tell which local address reaches the hosts: " +
                              a.status().message() + give);
    }
    if (chosen.empty()) {
      chosen = *a;
      first_host = host;
    } else if (*a != chosen) {
      return invalid_argument("--hosts: this machine reaches " + first_host + " from " + chosen +
                              " but " + host + " from " + *a + give);
    }
  }
  return chosen;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string remote_start(const std::string& remote_shell, const std::string& host,
                         const std::string& exe, const std::vector<std::string>& args) {
  // Quoted twice: once for the remote shell, which parses the command
  // text, then the whole text once more for the local /bin/sh -c.
  std::string cmd = "exec " + shell_quote(exe);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  // exec: the launcher's signals reach the remote shell itself.
  return "exec " + remote_shell + " " + shell_quote(host) + " " + shell_quote(cmd);
}

std::string remote_stop(const std::string& remote_shell, const std::string& host,
                        const std::string& cluster, int timeout_s) {
  // pkill's pattern is a regular expression: the cluster name holds only
  // characters that are literal in one (FabricConfig checks it). Only node
  // command lines hold --cluster= and then --coordinator= (node_args'
  // order; the launcher never has --coordinator), and "[-]" keeps the
  // pattern from matching the shell that runs pkill with it.
  const std::string cmd =
      "pkill -KILL -f -- " + shell_quote("[-]-cluster=" + cluster + " .*[-]-coordinator=");
  return "timeout -k 2 " + std::to_string(timeout_s) + " " + remote_shell + " " +
         shell_quote(host) + " " + shell_quote(cmd) + " >/dev/null 2>&1";
}

std::string remote_signal(const std::string& remote_shell, const std::string& host,
                          const std::string& cluster, int node, const std::string& signal,
                          int timeout_s) {
  // As remote_stop, narrowed to one node: node_args puts --node=N right
  // before --coordinator=.
  const std::string cmd = "pkill -" + signal + " -f -- " +
                          shell_quote("[-]-cluster=" + cluster +
                                      " .*[-]-node=" + std::to_string(node) + " [-]-coordinator=");
  return "timeout -k 2 " + std::to_string(timeout_s) + " " + remote_shell + " " +
         shell_quote(host) + " " + shell_quote(cmd) + " >/dev/null 2>&1";
}

std::string all_at_once(const std::vector<std::string>& cmds) {
  std::string s;
  for (const std::string& c : cmds) s += "(" + c + ") & ";
  return s + "wait";
}

}  // namespace drtmx::bench
