// SnapshotFloor and the hybrid clock: the floor never passes a running or
// later snapshot's timestamp, also while snapshots begin concurrently with
// the publisher; LocalClock never goes back.
#include "dst/floor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "dst/timestamp.h"

namespace drtmx::dst {
namespace {

TEST(SnapshotFloor, ActiveSnapshotsHoldTheFloorAndLaterOnesStartAboveIt) {
  SnapshotFloor f(2, 3);
  EXPECT_EQ(f.begin(0, 1, 100), 100u);
  EXPECT_EQ(f.compute(500), 100u);     // held by the snapshot at 100
  EXPECT_EQ(f.begin(1, 0, 50), 500u);  // proposes below the base: raised
  f.end(0, 1);
  EXPECT_EQ(f.compute(600), 500u);
  f.end(1, 0);
  EXPECT_EQ(f.compute(700), 700u);
  EXPECT_EQ(f.compute(650), 700u);  // never goes back (a clock step back)
  EXPECT_EQ(f.active(), 0u);
}

// Coroutine threads begin snapshots at their own (slightly lagging) clocks
// while a publisher computes floors: no snapshot's timestamp is ever below
// a floor published before its end.
TEST(SnapshotFloor, ConcurrentBeginsNeverFallBelowAPublishedFloor) {
  SnapshotFloor f(2, 2);
  std::atomic<uint64_t> clock{1000};
  std::atomic<uint64_t> published{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, snaps{0};
  auto worker = [&](uint16_t w) {
    for (int i = 0; i < 1000000 && !stop.load(); ++i) {
      const uint64_t proposed = clock.load() - 50;  // a lagging local clock
      const uint64_t ts = f.begin(w, static_cast<uint16_t>(i % 2), proposed);
      // Whatever was published before begin() returned is <= ts; and any
      // floor published while it runs stays <= ts.
      for (int k = 0; k < 3; ++k) {
        if (published.load() > ts) ++bad;
      }
      f.end(w, static_cast<uint16_t>(i % 2));
      ++snaps;
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  std::thread pub([&] {
    // Publishes until the workers have begun 40 000 snapshots (on a loaded
    // machine they may start late); bounded by 2 000 000 rounds or 5 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int i = 0; (i < 20000 || snaps.load() < 40000) && i < 2000000 &&
                    std::chrono::steady_clock::now() < until;
         ++i) {
      published.store(f.compute(clock.fetch_add(7) + 7));
    }
    stop = true;
  });
  a.join();
  b.join();
  pub.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(snaps.load(), 1000u);
}

TEST(Timestamp, LocalClockIsMonotonicAndFollowsCommits) {
  LocalClock c;
  const Timestamp a = c.now();
  EXPECT_GT(a, 0u);
  EXPECT_EQ(a & ((1u << kLogicalBits) - 1), 0u);        // logical part 0 at start
  c.observe(a + (uint64_t{1000} << kLogicalBits) + 5);  // a commit in the future
  EXPECT_EQ(c.now(), a + (uint64_t{1000} << kLogicalBits) + 5);
  c.observe(1);
  EXPECT_GE(c.now(), a);
  EXPECT_NEAR(ts_to_us(us_to_ts(1000)), 1000, 9);
}

}  // namespace
}  // namespace drtmx::dst
