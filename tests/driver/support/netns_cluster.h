// NetnsCluster: network hosts as Linux network namespaces on this machine,
// for tests that run drtmx-bench --hosts across a real (virtual) network.
//
// The contract:
// - Names. Every namespace of one cluster is named "<prefix>-<member>" with
//   prefix "dxn<pid>x<k>" (this process, its k-th cluster): "-sw" holds the
//   switch (a bridge br0), "-c" the launcher (drtmx-bench and its
//   coordinator run there) and "-h0" .. "-h<N-1>" the hosts. The host names
//   of the hosts file are the namespaces' names.
// - Network. Each of "-c" and the hosts has loopback up and one interface,
//   eth0, a veth pair whose other end (named "c", "h0", ...) is a port of
//   br0 in "-sw". Addresses only inside these namespaces: 10.A.B.0/24 with
//   A.B from the pid; the launcher .1, host i .(10+i). Nothing is created
//   or changed in any namespace the fixture did not make.
// - Remote shell. remote_shell() is a script used as ssh would be:
//   `<script> HOST COMMAND...` runs COMMAND with /bin/sh in HOST's namespace
//   (`ip netns exec`, which execs: the process stays the same one). It
//   refuses a host of another cluster.
// - Links. link_shell() is `<script> down|up HOST`: sets HOST's port on the
//   switch down or up (a cable pulled at the switch: the host's eth0 loses
//   its carrier, its addresses and routes stay). link(i, up) does the same.
// - Removal. The destructor kills every process in the cluster's
//   namespaces (SIGKILL) and deletes them, which removes their interfaces;
//   so does SIGINT/SIGTERM/SIGHUP to the test process (a handler runs the
//   prepared removal command, then the signal's default action). Before it
//   starts, a cluster removes what is left of an earlier one with its own
//   prefix or the prefix of a process that no longer runs (a test that was
//   SIGKILLed).
// - Failure. create() returns null and says why when namespaces cannot be
//   made (not root, no `ip`, no namespace support): tests skip with that.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace drtmx::bench::testing {

class NetnsCluster {
 public:
  // Runs `cmd` with /bin/sh, bounded by `limit_s`; stdout and stderr in
  // *out. The exit status (-1 when it could not run).
  static int sh(const std::string& cmd, std::string* out = nullptr, int limit_s = 30) {
    const std::string full =
        "timeout -k 2 " + std::to_string(limit_s) + " /bin/sh -c '" + quote_inner(cmd) + "' 2>&1";
    FILE* p = popen(full.c_str(), "r");
    if (p == nullptr) return -1;
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    const int st = pclose(p);
    if (out != nullptr) *out = text;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  // A cluster of `hosts` hosts; its scripts and hosts file go into `dir`
  // (created). Null and *why set when it cannot be made.
  static std::unique_ptr<NetnsCluster> create(int hosts, const std::string& dir, std::string* why) {
    if (geteuid() != 0) {
      *why = "network namespaces need root (ip netns add); this test runs as uid " +
             std::to_string(geteuid());
      return nullptr;
    }
    static int instances = 0;
    std::unique_ptr<NetnsCluster> c(new NetnsCluster());
    c->prefix_ = "dxn" + std::to_string(getpid()) + "x" + std::to_string(instances++);
    c->hosts_ = hosts;
    c->dir_ = dir;
    const unsigned pid = static_cast<unsigned>(getpid());
    c->subnet_ = "10." + std::to_string((pid >> 8) & 255) + "." + std::to_string(pid & 255);
    std::filesystem::create_directories(dir);
    remove_leftovers(c->prefix_);
    c->arm_signals();
    std::string out;
    if (!c->build(&out)) {
      *why = "cannot make network namespaces here: " + out;
      return nullptr;  // the destructor removes what was made
    }
    return c;
  }

  ~NetnsCluster() {
    remove_prefix(prefix_);
    disarm_signals();
  }
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  int hosts() const { return hosts_; }
  const std::string& prefix() const { return prefix_; }
  std::string host(int i) const { return prefix_ + "-h" + std::to_string(i); }
  std::string launcher_ns() const { return prefix_ + "-c"; }
  std::string switch_ns() const { return prefix_ + "-sw"; }
  // The launcher's address on the switch: --coordinator-host.
  std::string launcher_address() const { return subnet_ + ".1"; }
  std::string host_address(int i) const { return subnet_ + "." + std::to_string(10 + i); }
  std::string remote_shell() const { return dir_ + "/netns-shell"; }
  std::string link_shell() const { return dir_ + "/netns-link"; }
  // A hosts file: one host per line, each with `options[i]` when given.
  std::string hosts_file(const std::vector<std::string>& options = {}) const {
    const std::string f = dir_ + "/hosts" + std::to_string(++files_);
    std::ofstream out(f);
    for (int i = 0; i < hosts_; ++i) {
      out << host(i) << (i < static_cast<int>(options.size()) ? " " + options[i] : "") << "\n";
    }
    return f;
  }
  // The words that run a program in the launcher's namespace.
  std::string in_launcher() const { return "ip netns exec " + launcher_ns() + " "; }
  // Sets host i's port on the switch up or down.
  bool link(int i, bool up) const {
    return sh("ip -n " + switch_ns() + " link set dev h" + std::to_string(i) +
              (up ? " up" : " down")) == 0;
  }
  // Processes in the cluster's namespaces (the launcher's included).
  int processes() const {
    std::string out;
    sh("for n in $(ip netns list | awk '{print $1}' | grep '^" + prefix_ +
           "-'); do ip netns pids $n; done",
       &out);
    int n = 0;
    for (char ch : out) n += ch == '\n';
    return n;
  }
  // The cluster's namespaces that exist.
  static int namespaces_with(const std::string& prefix) {
    std::string out;
    sh("ip netns list | awk '{print $1}' | grep -c '^" + prefix + "-'", &out);
    return std::atoi(out.c_str());
  }

 private:
  NetnsCluster() = default;

  static std::string quote_inner(const std::string& s) {
    std::string q;
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q;
  }

  // The shell text that removes every namespace named "<prefix>-*": its
  // processes first (SIGKILL, waited for within 5 s), then the names.
  static std::string removal(const std::string& prefix) {
    return "for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^" + prefix +
           "-'); do p=$(ip netns pids $n 2>/dev/null); [ -n \"$p\" ] && kill -9 $p; done; "
           "i=0; while [ $i -lt 50 ]; do left=0; for n in $(ip netns list 2>/dev/null | awk "
           "'{print $1}' | grep '^" +
           prefix +
           "-'); do [ -n \"$(ip netns pids $n 2>/dev/null)\" ] && left=1; done; [ $left = 0 ] && "
           "break; sleep 0.1; i=$((i+1)); done; "
           "for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^" +
           prefix + "-'); do ip netns del $n; done; true";
  }
  static void remove_prefix(const std::string& prefix) { sh(removal(prefix), nullptr, 30); }

  // This prefix's leftovers, and those of test processes that are gone.
  static void remove_leftovers(const std::string& prefix) {
    remove_prefix(prefix);
    std::string out;
    sh("ip netns list 2>/dev/null | awk '{print $1}' | grep '^dxn[0-9]*x[0-9]*-' | "
       "sed 's/-.*//' | sort -u",
       &out);
    size_t at = 0;
    while (at < out.size()) {
      const size_t nl = out.find('\n', at);
      const std::string p = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
      at = nl == std::string::npos ? out.size() : nl + 1;
      const long pid = std::atol(p.c_str() + 3);
      if (pid > 0 && pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        remove_prefix(p);
      }
    }
  }

  bool build(std::string* out) {
    const std::string sw = switch_ns();
    std::string cmd = "set -e; ip netns add " + sw + "; ip -n " + sw + " link set lo up; ip -n " +
                      sw + " link add br0 type bridge; ip -n " + sw + " link set br0 up; ";
    auto member = [&](const std::string& port, const std::string& ns, const std::string& addr) {
      cmd += "ip netns add " + ns + "; ip -n " + ns + " link set lo up; ip -n " + sw +
             " link add " + port + " type veth peer name eth0 netns " + ns + "; ip -n " + sw +
             " link set " + port + " master br0; ip -n " + sw + " link set " + port +
             " up; ip -n " + ns + " addr add " + addr + "/24 dev eth0; ip -n " + ns +
             " link set eth0 up; ";
    };
    member("c", launcher_ns(), launcher_address());
    for (int i = 0; i < hosts_; ++i) member("h" + std::to_string(i), host(i), host_address(i));
    if (sh(cmd, out, 60) != 0) return false;
    // The scripts: a remote shell into the hosts, and the links' switch.
    {
      std::ofstream s(remote_shell());
      s << "#!/bin/sh\n"
           "# Runs COMMAND in HOST's network namespace, as ssh HOST COMMAND would.\n"
           "host=\"$1\"; shift\n"
           "case \"$host\" in\n"
           "  "
        << prefix_
        << "-h[0-9]*) ;;\n"
           "  *) echo \"netns-shell: '$host' is not a host of cluster "
        << prefix_
        << "\" >&2; exit 255 ;;\n"
           "esac\n"
           "exec ip netns exec \"$host\" /bin/sh -c \"$*\"\n";
    }
    {
      std::ofstream s(link_shell());
      s << "#!/bin/sh\n"
           "# down|up HOST: HOST's port on the switch of cluster "
        << prefix_
        << "\n"
           "case \"$1\" in up|down) ;; *) echo \"netns-link: expected up or down, not '$1'\" >&2; "
           "exit 2 ;; esac\n"
           "case \"$2\" in\n"
           "  "
        << prefix_
        << "-h[0-9]*) ;;\n"
           "  *) echo \"netns-link: '$2' is not a host of cluster "
        << prefix_
        << "\" >&2; exit 2 ;;\n"
           "esac\n"
           "exec ip -n "
        << sw << " link set dev \"${2##*-}\" \"$1\"\n";
    }
    chmod(remote_shell().c_str(), 0755);
    chmod(link_shell().c_str(), 0755);
    return true;
  }

  // SIGINT/SIGTERM/SIGHUP: the prepared removal, then the default action.
  void arm_signals() {
    removal_text_ = removal(prefix_);
    active() = this;
    struct sigaction sa {};
    sa.sa_handler = &NetnsCluster::on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  }
  void disarm_signals() {
    if (active() != this) return;
    active() = nullptr;
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  }
  static NetnsCluster*& active() {
    static NetnsCluster* a = nullptr;
    return a;
  }
  // Async-signal-safe: fork, execve, waitpid, signal, raise.
  static void on_signal(int sig) {
    NetnsCluster* c = active();
    if (c != nullptr) {
      const pid_t p = fork();
      if (p == 0) {
        const char* argv[] = {"/bin/sh", "-c", c->removal_text_.c_str(), nullptr};
        execv("/bin/sh", const_cast<char**>(argv));
        _exit(127);
      }
      if (p > 0) {
        int st = 0;
        waitpid(p, &st, 0);
      }
    }
    signal(sig, SIG_DFL);
    raise(sig);
  }

  std::string prefix_, dir_, subnet_, removal_text_;
  int hosts_ = 0;
  mutable int files_ = 0;
};

}  // namespace drtmx::bench::testing
