// drtmx-bench --hosts: a multi-host cluster started through a remote shell.
// The "remote shell" here runs the command on this machine (shm fabric) and,
// like ssh, leaves the command running when it is itself killed — so only
// the launcher's own cleanup on the hosts can stop a node it started.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/bench_run.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using drtmx::bench::testing::Outcome;
using drtmx::bench::testing::run;
using drtmx::bench::testing::slurp;
using namespace std::chrono_literals;

class MultiHost : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short (cluster names have at most 64 characters), unique per test.
    name_ =
        std::string("mh") + std::to_string(getpid()) + "_" +
        std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()).substr(0, 12);
    dir_ = (fs::temp_directory_path() / name_).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    log_ = dir_ + "/shell.log";
    shell_ = dir_ + "/remote_shell.sh";
    std::ofstream(shell_) << "#!/bin/sh\n"
                             "host=\"$1\"; shift\n"
                             "echo \"$host $*\" >> '"
                          << log_
                          << "'\n"
                             // Like ssh, it hands the command its input (the
                             // cluster key); a background job's would be
                             // /dev/null.
                             "exec 3<&0\n"
                             "sh -c \"$*\" 0<&3 3<&- &\n"
                             "trap 'exit 143' TERM INT\n"
                             "wait $!\n";
    fs::permissions(shell_, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string hosts(const std::string& text) {
    const std::string f = dir_ + "/hosts" + std::to_string(++files_);
    std::ofstream(f) << text;
    return f;
  }
  std::string args(const std::string& hosts_file, const std::string& extra) const {
    return "--hosts=" + hosts_file + " --remote-shell=" + shell_ +
           " --coordinator-host=127.0.0.1 --cluster=" + name_ + " --warmup=0.2 " + extra;
  }
  // Processes of this machine whose command line names our cluster.
  int processes() const {
    const Outcome o = run("pgrep", "-f -c -- '[-]-cluster=" + name_ + " '", 10);
    return o.output.empty() ? 0 : std::atoi(o.output.c_str());
  }
  int segments() const {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
      n += e.path().filename().string().find(name_) != std::string::npos;
    }
    return n;
  }
  std::string name_, dir_, log_, shell_;
  int files_ = 0;
};

TEST_F(MultiHost, EveryNodeStartsOnItsHostWithItsOwnOptionsAndIsStoppedThere) {
  const std::string f =
      hosts("# node 0 first\nhost-a\n\nhost-b --xstore-refresh-keys=4\nhost-c  \n");
  const Outcome o = run(DRTMX_BENCH_PATH, args(f, "--seconds=1"), 120);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("nodes=3"), std::string::npos) << o.output;  // from the file
  const std::string log = slurp(log_);
  int started = 0, stopped = 0;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string host = line.substr(0, line.find(' '));
    if (line.find("exec '" DRTMX_NODE_PATH "'") != std::string::npos) {
      ++started;
      const size_t node = line.find("'--node=");
      ASSERT_NE(node, std::string::npos) << line;
      const char id = line[node + 8];
      EXPECT_EQ(host, std::string("host-") + static_cast<char>('a' + (id - '0'))) << line;
      // Its own option replaced the launcher's, once.
      const bool b = host == "host-b";
      EXPECT_EQ(line.find("--xstore-refresh-keys=4") != std::string::npos, b) << line;
      EXPECT_EQ(line.find("--xstore-refresh-keys=16") != std::string::npos, !b) << line;
    } else if (line.find("pkill") != std::string::npos) {
      ++stopped;
    }
  }
  EXPECT_EQ(started, 3) << log;
  EXPECT_EQ(stopped, 3) << log;
  EXPECT_EQ(processes(), 0);
  EXPECT_EQ(segments(), 0);
}

// SIGINT to the launcher alone: it stops every node (the remote shells die
// and leave theirs running: the cleanup on the hosts must kill them).
TEST_F(MultiHost, InterruptStopsEveryNodeOnEveryHost) {
  const std::string f = hosts("host-a\nhost-b\nhost-c\n");
  const std::string out = dir_ + "/out";
  const std::string cmd =
      std::string(DRTMX_BENCH_PATH) + " " + args(f, "--seconds=60") + " > " + out + " 2>&1";
  pid_t pid = 0;
  const char* argv[] = {"/bin/sh", "-c", nullptr, nullptr};
  const std::string exec_cmd = "exec " + cmd;
  argv[2] = exec_cmd.c_str();
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  // Until the run measures (bounded).
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (slurp(out).find("[1 s]") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(slurp(out).find("[1 s]"), std::string::npos) << slurp(out);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int st = 0;
  const auto end = std::chrono::steady_clock::now() + 60s;
  pid_t r = 0;
  while ((r = waitpid(pid, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    FAIL() << "drtmx-bench did not stop after SIGINT\n" << slurp(out);
  }
  ASSERT_TRUE(WIFEXITED(st)) << slurp(out);
  EXPECT_EQ(WEXITSTATUS(st), 1) << slurp(out);
  EXPECT_NE(slurp(out).find("interrupted by signal 2: stopped every node"), std::string::npos)
      << slurp(out);
  EXPECT_EQ(processes(), 0) << "a node outlived the launcher";
  EXPECT_EQ(segments(), 0);
}

// --kill-node across hosts: the node is killed on its host through the
// remote shell (as over ssh, where killing the local client would kill
// nothing there); the survivors fail over and the check holds.
TEST_F(MultiHost, KillNodeSignalsTheNodeOnItsHost) {
  const std::string f = hosts("host-a\nhost-b\nhost-c\n");
  const Outcome o =
      run(DRTMX_BENCH_PATH, args(f, "--seconds=3 --coroutines=4 --accounts=2000 --kill-node=2@1.5"),
          120);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("every partition served by a primary after"), std::string::npos)
      << o.output;
  const std::string log = slurp(log_);
  EXPECT_NE(log.find("host-c pkill -KILL -f -- '[-]-cluster=" + name_ + " .*[-]-node=2 "),
            std::string::npos)
      << log;
  EXPECT_EQ(processes(), 0);
  EXPECT_EQ(segments(), 0);
}

TEST_F(MultiHost, BadHostFilesAndOptionsAreRefusedWithTheReason) {
  const std::pair<std::string, std::string> cases[] = {
      {"--hosts=" + dir_ + "/none", "cannot read the file"},
      {"--hosts=" + hosts("\n# nothing\n"), "no host in the file"},
      {"--hosts=" + hosts("a\nb;rm\n"), "line 2: host 'b;rm' holds a character"},
      {"--hosts=" + hosts("a\nb seconds=3\n"), "line 2: 'seconds=3' is not an option"},
      {"--hosts=" + hosts("a\nb\n") + " --nodes=3", "lists 2 hosts but --nodes=3"},
      {"--hosts=" + hosts("a\nb --nosuch=1\n"), "line 2 (node 1 on b): unrecognised option"},
      {"--hosts=" + hosts("a\nb --coroutines=0\n"), "line 2 (node 1 on b): --coroutines must"},
      {"--hosts=" + hosts("a\nb\n") + " --inprocess", "not with --inprocess"},
      {"--remote-exe=/x/drtmx-node", "--remote-exe needs --hosts"},
      {"--coordinator-host=h", "--coordinator-host needs --hosts"},
      {"--partition-node=1@0.2+100", "--partition-node needs --hosts"},
      {"--hosts=" + hosts("a\nb\n") + " --partition-node=1@0.2+100",
       "--partition-node=1@0.2+100 needs --link-shell=CMD"},
      {"--hosts=" + hosts("a\nb\n") + " --partition-node=1@0.2 --link-shell=x", "expected N@S+MS"},
      {"--hosts=" + hosts("a\nb\n") +
           " --crash-point=logged:1:10 --durability=pmem "
           "--pmem-dir=/tmp/x",
       "--crash-point: a node's own crash is judged by its process's signal: not with --hosts"},
      {"--hosts=" + hosts("a\nb\n") + " --durability=pmem", "on every host's line"},
  };
  for (const auto& [a, message] : cases) {
    const Outcome o = run(DRTMX_BENCH_PATH, a + " --seconds=0.5", 60);
    EXPECT_EQ(o.exit_code, 2) << a << "\n" << o.output;
    EXPECT_NE(o.output.find(message), std::string::npos) << a << "\n" << o.output;
  }
  EXPECT_EQ(slurp(log_), "") << "a refused command line started something";
}

}  // namespace
