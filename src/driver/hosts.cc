#include "hosts.h"

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
