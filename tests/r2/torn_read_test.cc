// A one-sided READ racing a writer on the target can observe a half-written
// copy — on an RNIC and on shm alike. This test shows it happens, which is
// why the store must detect torn reads (versions/checksums), not assume them
// away.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "r2/support/inproc_cluster.h"

namespace drtmx::r2 {
namespace {

TEST(TornRead, ReadRacingAWriterSeesMixedCopies) {
  constexpr size_t kBytes = 64 * 1024;
  constexpr RegionId kData = 1, kScratch = 2;
  auto c = testing::InProcCluster::make(2, 1, {{kData, kBytes}, {kScratch, kBytes}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto served = c->serve({1});
  auto* target = reinterpret_cast<std::atomic<uint64_t>*>(c->base(1, kData));
  std::atomic<bool> stop{false};
  // The owner rewrites the whole area with one value per pass.
  std::thread writer([&] {
    for (uint64_t pass = 1; !stop.load(std::memory_order_relaxed); ++pass) {
      for (size_t i = 0; i < kBytes / 8; ++i) target[i].store(pass, std::memory_order_relaxed);
    }
  });
  Endpoint* ep = c->f(0).endpoint(0);
  auto* local = reinterpret_cast<uint64_t*>(c->base(0, kScratch));
  uint64_t reads = 0, torn = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (torn < 10 && reads < 200000 && std::chrono::steady_clock::now() < until) {
    WorkRequest w;
    w.verb = Verb::kRead;
    w.remote = {1, kData, 0};
    w.local = local;
    w.len = kBytes;
    ASSERT_EQ(ep->post(w), PostResult::kOk);
    ep->doorbell(1);
    ASSERT_EQ(testing::poll_n(ep, 1).size(), 1u);
    ++reads;
    for (size_t i = 1; i < kBytes / 8; ++i) {
      if (local[i] != local[0]) {
        ++torn;
        break;
      }
    }
  }
  stop = true;
  writer.join();
  EXPECT_GT(torn, 0u) << "no torn copy in " << reads << " reads";
}

}  // namespace
}  // namespace drtmx::r2
