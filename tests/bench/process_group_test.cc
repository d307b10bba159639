// ProcessGroup (src/launch/process_group.h): which failure it names.
#include "process_group.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace drtmx::bench {
namespace {

using namespace std::chrono_literals;

// Children of this process that have ended and are not reaped yet (state Z
// in /proc/<pid>/stat: "pid (comm) state ppid ...").
int zombie_children() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && state == 'Z' && ppid == getpid()) ++n;
  }
  return n;
}

TEST(ProcessGroup, AllExitZeroIsOk) {
  ProcessGroup g;
  ASSERT_TRUE(g.spawn("node 0", "/bin/sh", {"-c", "exit 0"}).is_ok());
  ASSERT_TRUE(g.spawn("node 1", "/bin/sh", {"-c", "exit 0"}).is_ok());
  EXPECT_TRUE(g.wait_all(10s).is_ok());
}

// Node 1 is killed and node 0 fails; both have ended when the group looks:
// the killed node is named, though node 0 comes first in the group.
TEST(ProcessGroup, AKilledNodeIsNamedBeforeTheNodesThatFailedBecauseOfIt) {
  ProcessGroup g;
  ASSERT_TRUE(g.spawn("node 0", "/bin/sh", {"-c", "exit 1"}).is_ok());
  ASSERT_TRUE(g.spawn("node 1", "/bin/sh", {"-c", "kill -9 $$"}).is_ok());
  // Both have ended — zombies until reaped — before the group looks.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (zombie_children() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(zombie_children(), 2);
  const Status s = g.wait_all(10s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 1 was killed by signal 9"), std::string::npos) << s.message();
}

// The killed node ends a moment after node 0 failed because of it (its
// peers see its connections close while the kernel tears it down): still
// the killed node is named, not node 0.
TEST(ProcessGroup, AKilledNodeThatEndsJustAfterItsPeerFailedIsNamed) {
  ProcessGroup g;
  ASSERT_TRUE(g.spawn("node 0", "/bin/sh", {"-c", "exit 1"}).is_ok());
  ASSERT_TRUE(g.spawn("node 1", "/bin/sh", {"-c", "sleep 0.05; kill -9 $$"}).is_ok());
  const Status s = g.wait_all(10s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 1 was killed by signal 9"), std::string::npos) << s.message();
}

TEST(ProcessGroup, AFailingNodeStopsTheOthersAndIsNamed) {
  ProcessGroup g;
  ASSERT_TRUE(g.spawn("node 0", "/bin/sh", {"-c", "exec sleep 30"}).is_ok());
  ASSERT_TRUE(g.spawn("node 1", "/bin/sh", {"-c", "exit 3"}).is_ok());
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = g.wait_all(20s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);  // node 0 was stopped
  EXPECT_NE(s.message().find("node 1 exited with status 3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace drtmx::bench
