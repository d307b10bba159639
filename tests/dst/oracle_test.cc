// GtsOracle: StableTS covers exactly the timestamps issued and installed
// without a gap — out of order, and with installers racing on threads —
// and INSTALLs that are not of an outstanding timestamp are refused.
#include "dst/oracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace drtmx::dst {
namespace {

struct Words {
  alignas(64) uint8_t bytes[GtsOracle::kRegionBytes] = {};
  // Issues the next timestamp as a one-sided FAA on the counter would.
  Timestamp issue() {
    auto* c = reinterpret_cast<uint64_t*>(bytes + GtsOracle::kCounterOffset);
    return __atomic_add_fetch(c, 1, __ATOMIC_SEQ_CST);
  }
};

TEST(GtsOracle, StableCoversTheInstalledPrefixOnly) {
  Words w;
  GtsOracle o(w.bytes);
  EXPECT_EQ(o.stable(), 0u);
  for (int i = 0; i < 5; ++i) w.issue();  // 1..5 in flight
  ASSERT_TRUE(o.install(2).is_ok());
  ASSERT_TRUE(o.install(3).is_ok());
  EXPECT_EQ(o.stable(), 0u);  // 1 is still in flight
  ASSERT_TRUE(o.install(1).is_ok());
  EXPECT_EQ(o.stable(), 3u);
  ASSERT_TRUE(o.install(5).is_ok());
  EXPECT_EQ(o.stable(), 3u);
  ASSERT_TRUE(o.install(4).is_ok());
  EXPECT_EQ(o.stable(), 5u);
  EXPECT_EQ(o.installs(), 5u);
  // The region word itself is what a one-sided READ of StableTS returns.
  uint64_t word;
  std::memcpy(&word, w.bytes + GtsOracle::kStableOffset, 8);
  EXPECT_EQ(word, 5u);
}

TEST(GtsOracle, RefusesInstallsOfTimestampsNotOutstanding) {
  Words w;
  GtsOracle o(w.bytes);
  w.issue();
  w.issue();
  EXPECT_FALSE(o.install(0).is_ok());  // never issued (0 is the load's)
  EXPECT_FALSE(o.install(3).is_ok());  // not issued yet
  ASSERT_TRUE(o.install(2).is_ok());
  EXPECT_FALSE(o.install(2).is_ok());  // twice
  ASSERT_TRUE(o.install(1).is_ok());
  EXPECT_FALSE(o.install(1).is_ok());  // already stable
  EXPECT_EQ(o.stable(), 2u);
}

// Failover: timestamp 2's coordinator died before INSTALL; the survivors
// settle the oracle, StableTS moves past it, and installing goes on above.
TEST(GtsOracle, SettlingAfterANodeLossMovesStablePastTheLostTimestamps) {
  Words w;
  GtsOracle o(w.bytes);
  for (int i = 0; i < 4; ++i) w.issue();  // 1..4
  ASSERT_TRUE(o.install(1).is_ok());
  ASSERT_TRUE(o.install(3).is_ok());
  ASSERT_TRUE(o.install(4).is_ok());
  EXPECT_EQ(o.stable(), 1u);  // 2 will never come
  o.settle_issued();
  EXPECT_EQ(o.stable(), 4u);
  EXPECT_FALSE(o.install(2).is_ok());  // a late INSTALL of the lost one: already stable
  w.issue();                           // 5
  const Timestamp six = w.issue();
  ASSERT_TRUE(o.install(six).is_ok());
  EXPECT_EQ(o.stable(), 4u);
  ASSERT_TRUE(o.install(5).is_ok());
  EXPECT_EQ(o.stable(), 6u);
}

// A coordinator holding timestamp 1 is descheduled while others issue and
// install more than a window's worth: theirs wait above the window, and
// StableTS covers them all once 1 arrives — none is lost, none refused.
TEST(GtsOracle, InstallsAboveTheWindowWaitAndAreNotLost) {
  Words w;
  GtsOracle o(w.bytes);
  constexpr uint64_t kN = GtsOracle::kWindow + 100;
  for (uint64_t i = 0; i < kN; ++i) w.issue();
  for (uint64_t ts = kN; ts >= 2; --ts) ASSERT_TRUE(o.install(ts).is_ok()) << ts;
  EXPECT_EQ(o.stable(), 0u);
  EXPECT_EQ(o.overflowed(), kN - GtsOracle::kWindow + 1);
  EXPECT_FALSE(o.install(kN).is_ok());  // twice, while waiting above the window
  ASSERT_TRUE(o.install(1).is_ok());
  EXPECT_EQ(o.stable(), kN);
}

// Threads take timestamps and install them after a random delay (some
// hold theirs much longer), wrapping the window several times. Each
// checks, just before its INSTALL, that StableTS is below its timestamp
// (StableTS must never pass one still in flight); at the end StableTS is
// the last issued. (A descheduled thread may leave the others a window
// ahead: their installs then take the overflow path.)
TEST(GtsOracle, ConcurrentInstallersNeverLetStablePassOneInFlight) {
  Words w;
  GtsOracle o(w.bytes);
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 3 * GtsOracle::kWindow / kThreads;
  std::atomic<uint64_t> passed{0}, refused{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      std::vector<Timestamp> held;
      for (uint64_t i = 0; i < kEach; ++i) {
        held.push_back(w.issue());
        // Install some of the held ones, in a shuffled order.
        if (held.size() >= 1 + rng() % 16 || i + 1 == kEach) {
          std::shuffle(held.begin(), held.end(), rng);
          for (Timestamp x : held) {
            passed += o.stable() >= x;
            refused += !o.install(x).is_ok();
          }
          held.clear();
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(passed.load(), 0u);
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_EQ(o.stable(), kThreads * kEach);
  EXPECT_EQ(o.installs(), kThreads * kEach);
}

}  // namespace
}  // namespace drtmx::dst
