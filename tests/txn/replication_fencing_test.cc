// The Log phase across a membership change (failover, txn/failover.h): the
// fabric fences a removed node a moment before a worker's membership view
// moves. A log whose WRITE to the removed node was refused in that moment
// must complete once the view says the node is gone (its other entries
// landed and will be applied: giving up would abort a transaction that the
// backups apply) — and must never complete when it is this node that was
// removed. Each coroutine's log() judges its own batch, also while other
// coroutines of the worker log to the same backups in another order.
#include <gtest/gtest.h>

#include <atomic>

#include "r2/control/membership.h"
#include "r2/support/worker_cluster.h"
#include "txn/log/replication.h"

namespace drtmx::txn {
namespace {

using r2::Co;

constexpr r2::RegionId kLog = 1, kScratch = 2;
constexpr int kCos = 2, kLogs = 20;

r2::NodeSet set_of(std::initializer_list<uint16_t> nodes) {
  r2::NodeSet s;
  for (uint16_t n : nodes) s.set(n);
  return s;
}

struct Outcome {
  std::atomic<int> ok{0}, failed{0};
  std::atomic<uint64_t> applied_at_1{0};
  bool timed_out = false;
};

// Node 0 logs from kCos coroutines to backups 1 and 2 (coroutine k in the
// order {1, 2} or {2, 1}); `before` runs on the fabrics before the workers
// start; a further coroutine of node 0 moves node 0's view to `after` once
// the loggers have met the fence.
void run(const std::function<void(r2::testing::InProcCluster&)>& before, const r2::NodeSet& after,
         Outcome* out) {
  ReplicationConfig cfg;
  cfg.layout = {3, 1, 1 << 16};
  cfg.log_region = kLog;
  cfg.fence_wait_ms = 3000;
  const size_t img = Replicator::image_bytes(cfg);
  auto c = r2::testing::InProcCluster::make(
      3, 1, {{kLog, cfg.layout.region_bytes()}, {kScratch, kCos * img}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  before(*c);
  r2::MembershipView view0(3);
  std::unique_ptr<Replicator> rep;
  std::unique_ptr<BackupApplier> app1;
  std::atomic<int> done{0};
  r2::WorkerConfig wc;
  wc.coroutines = kCos + 1;
  auto r = r2::testing::run_workers(
      *c, wc,
      [&](r2::Worker& w) {
        if (w.node() == 1) {
          app1 =
              std::make_unique<BackupApplier>(w, cfg, c->base(1, kLog), [&](const RedoRecord&) {});
          ASSERT_TRUE(w.spawn([&](Co& co) {
                         // Serve until node 0's loggers are done and every
                         // entry they completed was applied here, then a
                         // while longer (an entry that should not be here
                         // would be applied meanwhile).
                         const auto until =
                             std::chrono::steady_clock::now() + std::chrono::seconds(30);
                         while ((done.load() < kCos ||
                                 app1->applied() < static_cast<uint64_t>(out->ok.load())) &&
                                std::chrono::steady_clock::now() < until) {
                           co.yield();
                         }
                         for (int i = 0; i < 200; ++i) co.yield();
                       }).is_ok());
          return;
        }
        if (w.node() != 0) return;
        w.set_membership(&view0);
        rep = std::make_unique<Replicator>(w, cfg);
        ASSERT_TRUE(rep->attach().is_ok());
        for (int k = 0; k < kCos; ++k) {
          ASSERT_TRUE(w.spawn([&, k](Co& co) {
                         LogBuffers buf;
                         buf.images = c->base(0, kScratch) + k * img;
                         std::vector<uint8_t> v(16 + 8 * k, static_cast<uint8_t>(k));
                         RedoRecord rec;
                         rec.key = static_cast<uint64_t>(k);
                         rec.value = v;
                         for (int i = 0; i < kLogs; ++i) {
                           rec.version = static_cast<uint64_t>(i + 1);
                           const r2::NodeId a = k % 2 == 0 ? 1 : 2, b = k % 2 == 0 ? 2 : 1;
                           const BackupEntry entries[2] = {{a, {&rec, 1}}, {b, {&rec, 1}}};
                           (rep->log(co, entries, buf).is_ok() ? out->ok : out->failed)++;
                         }
                         ++done;
                       }).is_ok());
        }
        ASSERT_TRUE(w.spawn([&](Co& co) {
                       // Let the loggers post into the fence, then move the view.
                       for (int i = 0; i < 200; ++i) co.yield();
                       view0.apply(1, after);
                     }).is_ok());
      },
      std::chrono::seconds(60));
  out->timed_out = r.timed_out;
  out->applied_at_1 = app1 ? app1->applied() : 0;
}

TEST(ReplicationFencing, ALogFencedByARemovedTargetCompletesOnceTheViewMoves) {
  Outcome o;
  // Node 0's fabric removes node 2 (as NodeRuntime does first); its view
  // follows 200 yields later.
  run(
      [](r2::testing::InProcCluster& c) {
        c.f(0).apply_membership(1, set_of({0, 1}));
      },
      set_of({0, 1}), &o);
  ASSERT_FALSE(o.timed_out);
  EXPECT_EQ(o.failed.load(), 0);
  EXPECT_EQ(o.ok.load(), kCos * kLogs);
  // Every entry reached node 1 (and was applied there): none was given up.
  EXPECT_EQ(o.applied_at_1.load(), uint64_t{kCos} * kLogs);
}

TEST(ReplicationFencing, ALogFencedBecauseThisNodeWasRemovedNeverCompletes) {
  Outcome o;
  // Node 1 removed node 0 (its fence word refuses node 0's ops); node 0
  // learns it 200 yields later.
  run(
      [](r2::testing::InProcCluster& c) {
        c.f(1).apply_membership(1, set_of({1, 2}));
      },
      set_of({1, 2}), &o);
  ASSERT_FALSE(o.timed_out);
  EXPECT_EQ(o.ok.load(), 0);
  EXPECT_EQ(o.failed.load(), kCos * kLogs);
  EXPECT_EQ(o.applied_at_1.load(), 0u);
}

}  // namespace
}  // namespace drtmx::txn
