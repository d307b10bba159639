// Node processes whose launcher (and with it the coordinator) is gone end
// by themselves within about a lease, remove their shared-memory segments
// and say why on stderr — whether the launcher was killed (its connections
// close), stopped (the connections stay open but the coordinator falls
// silent), or its host became unreachable (its network link taken down,
// between two network namespaces the test makes).
//
// The test watches each node through a pidfd (readable when the process
// ends, whoever reaps it) to time its end, bounded; it is a child subreaper,
// so once the launcher is gone the nodes become its children and it reads
// their exit codes.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "r2/node_runtime.h"
#include "support/bench_run.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using drtmx::bench::testing::slurp;
using namespace std::chrono_literals;

constexpr int kLeaseMs = 400;

// What /dev/shm holds of cluster `name`.
std::vector<std::string> segments_of(const std::string& name) {
  std::vector<std::string> out;
  const std::string prefix = "drtmx." + name + ".";
  for (const auto& e : fs::directory_iterator("/dev/shm")) {
    const std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0) out.push_back(f);
  }
  return out;
}

class OrphanNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    cluster_ = "orph" + std::to_string(getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    out_ = (fs::temp_directory_path() / (cluster_ + ".log")).string();
  }
  void TearDown() override {
    // Whatever is left (a failed assertion): killed and reaped, segments
    // removed.
    if (launcher_ > 0) {
      kill(launcher_, SIGKILL);
      kill(launcher_, SIGCONT);
    }
    for (pid_t p : nodes_) {
      if (p > 0) kill(p, SIGKILL);  // (reaped ones are -1: never kill(-1))
    }
    const auto until = Clock::now() + 10s;
    while (Clock::now() < until && waitpid(-1, nullptr, WNOHANG) >= 0) {
      std::this_thread::sleep_for(5ms);
    }
    for (const std::string& s : segments_of(cluster_)) fs::remove("/dev/shm/" + s);
    fs::remove(out_);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
  }

  // Starts `exe` with `args`, stdout and stderr to out_.
  void start(const std::string& exe, std::vector<std::string> args) {
    args.insert(args.begin(), exe);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    ASSERT_EQ(posix_spawn(&launcher_, exe.c_str(), &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
  }

  // Waits (bounded) until the launcher's output holds `what`.
  bool wait_output(const std::string& what, std::chrono::seconds limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until) {
      if (slurp(out_).find(what) != std::string::npos) return true;
      int st = 0;
      if (waitpid(launcher_, &st, WNOHANG) == launcher_) {
        launcher_ = -1;
        return false;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // The launcher's children: its node processes.
  std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string stat = slurp(e.path().string() + "/stat");
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      char state = 0;
      int ppid = 0;
      if (sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
        out.push_back(static_cast<pid_t>(std::stoi(name)));
      }
    }
    return out;
  }

  struct Ended {
    int code = -1;
    std::chrono::milliseconds after{0};
  };
  // When each node ended (a pidfd turns readable when its process exits,
  // reaped or not), at most `limit` after `from`; then, once they have
  // become our children (the launcher gone), their exit codes.
  std::vector<Ended> wait_nodes(Clock::time_point from, std::chrono::milliseconds limit) {
    std::vector<Ended> out(nodes_.size());
    std::vector<pollfd> fds;
    for (pid_t p : nodes_) {
      fds.push_back({static_cast<int>(syscall(SYS_pidfd_open, p, 0)), POLLIN, 0});
    }
    size_t ended = 0;
    const auto until = from + limit;
    while (ended < nodes_.size() && Clock::now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) {
        continue;
      }
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & POLLIN)) continue;
        out[i].after = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - from);
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores it from now on
        ++ended;
      }
    }
    for (pollfd& f : fds) {
      if (f.fd >= 0) close(f.fd);
    }
    if (ended < nodes_.size()) return {};
    // The launcher goes (if it has not), and its zombies come to us.
    if (launcher_ > 0) {
      kill(launcher_, SIGKILL);
      waitpid(launcher_, nullptr, 0);
      launcher_ = -1;
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      int st = 0;
      if (waitpid(nodes_[i], &st, 0) == nodes_[i]) {
        out[i].code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        nodes_[i] = -1;
      }
    }
    return out;
  }

  void start_smallbank() {
    start(DRTMX_BENCH_PATH, {"--bench=smallbank", "--nodes=3", "--replicas=3", "--threads=1",
                             "--coroutines=2", "--seconds=60", "--warmup=0.2", "--accounts=2000",
                             "--lease-ms=" + std::to_string(kLeaseMs), "--cluster=" + cluster_});
    ASSERT_TRUE(wait_output("[1 s]", 60s)) << slurp(out_);
    nodes_ = children_of(launcher_);
    ASSERT_EQ(nodes_.size(), 3u) << "the launcher's children";
    EXPECT_FALSE(segments_of(cluster_).empty());
  }

  // `why`: what the nodes' lines say (any of them).
  void expect_nodes_ended(const std::vector<Ended>& ended, std::chrono::milliseconds bound,
                          const std::vector<std::string>& why) {
    ASSERT_EQ(ended.size(), 3u) << "nodes still running " << bound.count()
                                << " ms after the coordinator was lost\n"
                                << slurp(out_);
    for (const Ended& e : ended) {
      std::printf("a node ended %lld ms after its coordinator was lost\n",
                  static_cast<long long>(e.after.count()));
      EXPECT_EQ(e.code, drtmx::r2::kOrphanExitCode) << slurp(out_);
      EXPECT_LE(e.after, bound);
    }
    EXPECT_TRUE(segments_of(cluster_).empty()) << segments_of(cluster_).front();
    const std::string out = slurp(out_);
    for (int n = 0; n < 3; ++n) {
      const std::string line = "drtmx-node node " + std::to_string(n) + ": lost the coordinator";
      EXPECT_NE(out.find(line), std::string::npos) << out;
    }
    bool said = false;
    for (const std::string& w : why) said |= out.find(w) != std::string::npos;
    EXPECT_TRUE(said) << "none of the reasons expected (" << why.front() << ", ...) in:\n" << out;
    EXPECT_NE(out.find("stopping this node (removed its"), std::string::npos) << out;
  }

  std::string cluster_, out_;
  pid_t launcher_ = -1;
  std::vector<pid_t> nodes_;
};

TEST_F(OrphanNodes, NodesEndWhenTheirLauncherIsKilled) {
  start_smallbank();
  const auto killed = Clock::now();
  ASSERT_EQ(kill(launcher_, SIGKILL), 0);
  ASSERT_EQ(waitpid(launcher_, nullptr, 0), launcher_);
  launcher_ = -1;
  // The closed connections tell at once; the bound leaves room for a
  // loaded machine, and is still far below the run's 60 s. A node whose
  // heartbeat the launcher had not read when it died sees a reset instead
  // of a close (the kernel resets a socket closed with unread data).
  const auto ended = wait_nodes(killed, 5000ms);
  expect_nodes_ended(ended, 5000ms, {"connection closed by the peer", "Connection reset by peer"});
}

TEST_F(OrphanNodes, NodesEndWhenTheirCoordinatorFallsSilent) {
  start_smallbank();
  // Stopped, the launcher keeps its connections open and says nothing: to
  // the nodes it looks like a coordinator whose host became unreachable.
  const auto stopped = Clock::now();
  ASSERT_EQ(kill(launcher_, SIGSTOP), 0);
  const auto ended = wait_nodes(stopped, std::chrono::milliseconds(kLeaseMs + 5000));
  expect_nodes_ended(ended, std::chrono::milliseconds(kLeaseMs + 5000), {"nothing from it for"});
  // Not before the lease ran out: the last frame came at most a period
  // before the stop.
  for (const Ended& e : ended) EXPECT_GE(e.after.count(), kLeaseMs - kLeaseMs / 4 - 5);
}

// The coordinator's host becomes unreachable: the launcher runs in one
// network namespace and the three nodes in another (shm still spans both:
// namespaces of the network, not of /dev/shm), joined by a veth pair; the
// test takes the launcher's end of the link down mid-run. No FIN, no reset:
// the nodes only stop hearing the coordinator's heartbeats, and must end
// one lease later. Needs root (CI is) and iproute2; only addresses inside
// the two namespaces the test makes, removed on every exit path.
class UnreachableCoordinator : public OrphanNodes {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || system("ip netns list > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "needs root and iproute2 (ip netns) to make its test hosts";
    }
    OrphanNodes::SetUp();
    const std::string id = std::to_string(getpid());
    ns_c_ = "drtmxc" + id;
    ns_h_ = "drtmxh" + id;
    veth_c_ = "dxc" + id;
    veth_h_ = "dxh" + id;
    cleanup_network();
    made_ = true;
    for (const std::string& cmd :
         {"ip netns add " + ns_c_, "ip netns add " + ns_h_,
          "ip link add " + veth_c_ + " type veth peer name " + veth_h_,
          "ip link set " + veth_c_ + " netns " + ns_c_,
          "ip link set " + veth_h_ + " netns " + ns_h_,
          "ip -n " + ns_c_ + " addr add 10.77.0.1/24 dev " + veth_c_,
          "ip -n " + ns_h_ + " addr add 10.77.0.2/24 dev " + veth_h_,
          "ip -n " + ns_c_ + " link set lo up", "ip -n " + ns_h_ + " link set lo up",
          "ip -n " + ns_c_ + " link set " + veth_c_ + " up",
          "ip -n " + ns_h_ + " link set " + veth_h_ + " up"}) {
      ASSERT_EQ(system((cmd + " 2>&1").c_str()), 0) << cmd;
    }
    // The "remote shell": every host is the nodes' namespace.
    shell_ = (fs::temp_directory_path() / (cluster_ + ".sh")).string();
    std::ofstream(shell_) << "#!/bin/sh\nshift\nexec ip netns exec " << ns_h_ << " sh -c \"$*\"\n";
    fs::permissions(shell_, fs::perms::owner_all);
    hosts_ = (fs::temp_directory_path() / (cluster_ + ".hosts")).string();
    std::ofstream(hosts_) << "10.77.0.2\n10.77.0.2\n10.77.0.2\n";
  }
  void TearDown() override {
    if (!made_) return;  // skipped: nothing was set up
    // The nodes run in the other namespace, not as our children: by name.
    (void)!system(("pkill -KILL -f -- '[-]-cluster=" + cluster_ + " ' 2>/dev/null").c_str());
    OrphanNodes::TearDown();
    cleanup_network();
    fs::remove(shell_);
    fs::remove(hosts_);
  }
  void cleanup_network() {
    if (ns_c_.empty()) return;
    (void)!system(("ip netns del " + ns_c_ + " 2>/dev/null").c_str());
    (void)!system(("ip netns del " + ns_h_ + " 2>/dev/null").c_str());
  }
  // The node processes: their command lines name our cluster.
  std::vector<pid_t> nodes_of_cluster() {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmd = slurp(e.path().string() + "/cmdline");
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      if (cmd.find("drtmx-node ") != std::string::npos &&
          cmd.find("--cluster=" + cluster_ + " ") != std::string::npos) {
        out.push_back(static_cast<pid_t>(std::stoi(name)));
      }
    }
    return out;
  }
  std::string ns_c_, ns_h_, veth_c_, veth_h_, shell_, hosts_;
  bool made_ = false;
};

TEST_F(UnreachableCoordinator, NodesEndOneLeaseAfterTheirCoordinatorsLinkGoesDown) {
  start("/usr/sbin/ip",
        {"netns", "exec", ns_c_, DRTMX_BENCH_PATH, "--hosts=" + hosts_, "--remote-shell=" + shell_,
         "--coordinator-host=10.77.0.1", "--cluster=" + cluster_, "--bench=smallbank",
         "--accounts=2000", "--coroutines=2", "--seconds=60", "--warmup=0.2",
         "--lease-ms=" + std::to_string(kLeaseMs)});
  ASSERT_TRUE(wait_output("[1 s]", 60s)) << slurp(out_);
  const std::vector<pid_t> nodes = nodes_of_cluster();
  ASSERT_EQ(nodes.size(), 3u) << slurp(out_);
  std::vector<pollfd> fds;
  for (pid_t p : nodes) fds.push_back({static_cast<int>(syscall(SYS_pidfd_open, p, 0)), POLLIN, 0});
  const auto down = Clock::now();
  ASSERT_EQ(system(("ip -n " + ns_c_ + " link set " + veth_c_ + " down").c_str()), 0);
  // Each node ends one lease after the last heartbeat it got, bounded.
  const auto until = down + std::chrono::milliseconds(kLeaseMs + 5000);
  size_t ended = 0;
  std::vector<std::chrono::milliseconds> after;
  while (ended < fds.size() && Clock::now() < until) {
    if (poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (pollfd& f : fds) {
      if (f.fd < 0 || !(f.revents & POLLIN)) continue;
      after.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - down));
      close(f.fd);
      f.fd = -1;
      ++ended;
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  ASSERT_EQ(ended, 3u) << "nodes still running after their coordinator became unreachable\n"
                       << slurp(out_);
  for (auto a : after) {
    std::printf("a node ended %lld ms after its coordinator's link went down\n",
                static_cast<long long>(a.count()));
    EXPECT_GE(a.count(), kLeaseMs - kLeaseMs / 4 - 5);
  }
  // The launcher learns it from its node processes' ends (status 69); its
  // output holds the nodes' reasons.
  int st = 0;
  const auto end = Clock::now() + 30s;
  while (waitpid(launcher_, &st, WNOHANG) == 0 && Clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
  const std::string out = slurp(out_);
  for (int n = 0; n < 3; ++n) {
    EXPECT_NE(
        out.find("drtmx-node node " + std::to_string(n) + ": lost the coordinator at 10.77.0.1:"),
        std::string::npos)
        << out;
  }
  EXPECT_NE(out.find("nothing from it for"), std::string::npos) << out;
  EXPECT_NE(out.find("exited with status 69"), std::string::npos) << out;
  EXPECT_TRUE(segments_of(cluster_).empty());
  launcher_ = -1;
}

}  // namespace
