// Device-independent pieces shared by the backends: send-queue slot
// accounting, request checking, the latency histogram, wr_id encoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "base/histogram.h"
#include "r2/common/region_table.h"
#include "r2/common/send_queue.h"

namespace drtmx::r2 {
namespace {

TEST(SendQueue, SignaledCompletionFreesItsRunOfUnsignaled) {
  SendQueue q(8);
  bool forced = false;
  EXPECT_FALSE(q.on_post(false, &forced));
  EXPECT_FALSE(q.on_post(false, &forced));
  EXPECT_TRUE(q.on_post(true, &forced));
  EXPECT_FALSE(forced);
  EXPECT_EQ(q.used(), 3u);
  q.on_signaled_completion();
  EXPECT_EQ(q.used(), 0u);
}

TEST(SendQueue, LongUnsignaledRunsAreForcedToSignal) {
  SendQueue q(8);
  bool forced = false;
  int forced_count = 0;
  for (int i = 0; i < 4; ++i) {
    bool sig = q.on_post(false, &forced);
    forced_count += forced;
    EXPECT_EQ(sig, forced);
  }
  EXPECT_EQ(forced_count, 1);  // the 4th of a run (depth / 2) is signaled
  EXPECT_EQ(q.pending_signals(), 1u);
  q.on_signaled_completion();
  EXPECT_EQ(q.used(), 0u);
}

TEST(SendQueue, RandomizedNeverOverflowsAndDrainsToZero) {
  std::mt19937 rng(7);
  SendQueue q(16);
  uint32_t inflight_signals = 0;
  for (int i = 0; i < 100000; ++i) {
    if (q.has_room() && rng() % 3 != 0) {
      bool forced = false;
      if (q.on_post(rng() % 5 == 0, &forced)) ++inflight_signals;
    } else if (inflight_signals > 0) {
      q.on_signaled_completion();
      --inflight_signals;
    }
    ASSERT_LE(q.used(), q.depth());
    // Whenever it is full, something signaled is in flight to free it.
    if (!q.has_room()) {
      ASSERT_GT(inflight_signals, 0u);
    }
  }
}

TEST(RegionTable, ChecksEveryField) {
  RegionTable t;
  t.reset(2);
  alignas(8) static uint8_t mem[256];
  t.add_local(mem, sizeof mem);
  t.set(1, 3, {0x10000, 4096});
  WorkRequest w;
  w.verb = Verb::kRead;
  w.local = mem;
  w.len = 16;
  w.remote = {1, 3, 0};
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kOk);
  w.remote.offset = 4080;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kOk);
  w.remote.offset = 4081;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kOutOfBounds);
  w.remote.offset = ~0ull;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kOutOfBounds);
  w.remote = {1, 4, 0};
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kBadRegion);
  w.remote = {2, 3, 0};
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kBadNode);
  w.remote = {1, 3, 0};
  w.local = mem + 250;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kBadLocalBuffer);
  w.local = mem;
  w.len = 2 << 20;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kBadLength);
  w.verb = Verb::kFaa;
  w.remote.offset = 12;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kMisaligned);
  w.remote.offset = 16;
  EXPECT_EQ(t.check(w, 1 << 20), OpStatus::kOk);
}

// Local buffers against many registered regions, added in random order
// (is_local binary-searches them): every byte of each region passes, a
// buffer running past a region's end or in a gap between regions fails,
// and a buffer inside a region that overlaps an earlier-starting one
// (registered twice) still passes.
TEST(RegionTable, LocalBuffersAgainstManyRegionsInAnyOrder) {
  static uint8_t mem[64 * 256];
  std::vector<int> order(32);
  for (int i = 0; i < 32; ++i) order[i] = i;
  std::mt19937 rng(3);
  std::shuffle(order.begin(), order.end(), rng);
  RegionTable t;
  for (int i : order) t.add_local(mem + i * 512, 256);  // [512 i, 512 i + 256)
  t.add_local(mem + 100, 40);                           // inside region 0
  t.add_local(mem + 200, 200);                          // overlaps region 0's end
  for (int i = 0; i < 32; ++i) {
    uint8_t* b = mem + i * 512;
    EXPECT_TRUE(t.is_local(b, 256)) << i;
    EXPECT_TRUE(t.is_local(b + 255, 1)) << i;
    if (i == 0) continue;                        // (overlapped: below)
    EXPECT_FALSE(t.is_local(b + 200, 57)) << i;  // past the end
    EXPECT_FALSE(t.is_local(b - 100, 8)) << i;   // in the gap before
  }
  EXPECT_TRUE(t.is_local(mem + 110, 20));   // region 0 and the one inside it
  EXPECT_TRUE(t.is_local(mem + 150, 10));   // region 0, not the one starting last below
  EXPECT_TRUE(t.is_local(mem + 300, 100));  // only the overlapping one holds it
  EXPECT_FALSE(t.is_local(mem + 300, 101));
  EXPECT_FALSE(t.is_local(mem + 64 * 256, 1));
  // Through a hint: the same answers, whatever the hint holds (a hit must
  // still cover the whole buffer; more regions than the hint has ways).
  RegionTable::LocalHint hint;
  for (int round = 0; round < 3; ++round) {
    for (int i : order) {
      uint8_t* b = mem + i * 512;
      EXPECT_TRUE(t.is_local(b + 8, 64, &hint)) << i;
      if (i == 0) continue;
      EXPECT_FALSE(t.is_local(b + 200, 57, &hint)) << i;
      EXPECT_FALSE(t.is_local(b - 100, 8, &hint)) << i;
    }
  }
  EXPECT_TRUE(t.is_local(mem + 150, 10, &hint));
  EXPECT_FALSE(t.is_local(mem + 300, 101, &hint));
}

TEST(LatencyHistogram, QuantilesWithinBucketErrorAndRoundTrip) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.record(v);
  auto near = [](uint64_t got, double want) { return got >= want * 0.93 && got <= want * 1.07; };
  EXPECT_TRUE(near(h.quantile(0.5), 50000)) << h.quantile(0.5);
  EXPECT_TRUE(near(h.quantile(0.99), 99000)) << h.quantile(0.99);
  EXPECT_EQ(h.quantile(1.0), 100000u);
  LatencyHistogram back;
  ASSERT_TRUE(back.decode(h.encode()));
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.quantile(0.5), h.quantile(0.5));
  EXPECT_FALSE(back.decode("max:1,99999:1"));
  EXPECT_FALSE(back.decode("garbage"));
  for (uint64_t v : {0ull, 1ull, 15ull, 16ull, 17ull, 1000ull, 123456789ull, ~0ull}) {
    EXPECT_GE(LatencyHistogram::bucket_upper(LatencyHistogram::bucket(v)), v);
  }
}

}  // namespace
}  // namespace drtmx::r2
