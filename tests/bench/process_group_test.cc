// ProcessGroup (benchmarks/common/process_group.h): which failure it names.
#include "process_group.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace drtmx::bench {
namespace {

using namespace std::chrono_literals;

TEST(ProcessGroup, AllExitZeroIsOk) {
  ProcessGroup g;
  ASSERT_TRUE(g.spawn("node 0", "/bin/sh", {"-c", "exit 0"}).is_ok());
  ASSERT_TRUE(g.spawn("node 1", "/bin/sh", {"-c", "exit 0"}).is_ok());
  EXPECT_TRUE(g.wait_all(10s).is_ok());
}

// Node 1 is killed; node 0 then fails because of it. Both have ended when
// the group looks: the killed node is named, though node 0 comes first.
TEST(ProcessGroup, AKilledNodeIsNamedBeforeTheNodesThatFailedBecauseOfIt) {
  ProcessGroup g;
  ASSERT_TRUE(g.spawn("node 0", "/bin/sh", {"-c", "sleep 0.2; exit 1"}).is_ok());
  ASSERT_TRUE(g.spawn("node 1", "/bin/sh", {"-c", "kill -9 $$"}).is_ok());
  std::this_thread::sleep_for(600ms);  // both have ended (zombies until reaped)
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
