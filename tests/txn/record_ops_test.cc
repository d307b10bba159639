// The OCC record steps under contention: transfers between random records
// of 3 nodes, locked and validated one-sided (fused CAS+READ), by RPC, or
// both at once; money is conserved, every commit bumps exactly its
// records' versions, nothing stays locked, every record still verifies.
#include "txn/record_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "r2/support/worker_cluster.h"
#include "store/record.h"

namespace drtmx::txn {
namespace {

using r2::Co;
using r2::OpBatch;
using r2::OpStatus;

constexpr r2::RegionId kData = 1, kScratch = 2;
constexpr uint32_t kValue = 16;  // int64 balance + 8 bytes of padding
constexpr uint32_t kRecords = 24;
const size_t kSlot = store::record_slot_size(kValue);

enum class Path { kOneSided, kRpc, kMixed };

struct Totals {
  std::atomic<uint64_t> commits{0}, aborts{0}, bad{0};
};

void init_records(r2::testing::InProcCluster& c, uint16_t nodes) {
  for (uint16_t n = 0; n < nodes; ++n) {
    for (uint32_t i = 0; i < kRecords; ++i) {
      int64_t zero[2] = {0, 0};
      build_image(c.base(n, kData) + i * kSlot, n * 1000 + i, 1, 1, zero, kValue);
    }
  }
}

// One transfer attempt of 1 from record a to record b. Returns true when it
// committed.
bool transfer(Co& co, uint8_t* scratch, RecordRef a, RecordRef b, bool rpc, Totals& t) {
  const uint64_t me = store::lock_word(co.node(), co.thread(), co.id());
  uint8_t* copy[2] = {scratch, scratch + kSlot};
  RecordRef refs[2] = {a, b};
  // Execute: read both records (one batch), verify seals.
  OpBatch rb;
  for (int k = 0; k < 2; ++k) rb.read(refs[k].addr, copy[k], static_cast<uint32_t>(kSlot));
  if (co.run(rb) != OpStatus::kOk) return ++t.bad, false;
  int64_t bal[2];
  uint64_t key[2];
  for (int k = 0; k < 2; ++k) {
    if (store::verify(copy[k], kValue) != store::RecordCheck::kOk) return ++t.aborts, false;
    store::RecordHeader h;
    std::memcpy(&h, copy[k], sizeof h);
    refs[k].version = h.version;
    key[k] = h.key;
    std::memcpy(&bal[k], copy[k] + sizeof h, 8);
  }
  int64_t nv[2][2] = {{bal[0] - 1, 0}, {bal[1] + 1, 0}};
  uint8_t* image[2] = {scratch + 2 * kSlot, scratch + 3 * kSlot};
  for (int k = 0; k < 2; ++k) build_image(image[k], key[k], 1, refs[k].version + 1, nv[k], kValue);
  auto* zero = reinterpret_cast<uint64_t*>(scratch + 4 * kSlot);
  *zero = 0;
  if (!rpc) {
    // Validate: lock both, fused with the version READs, one doorbell per peer.
    auto* old = reinterpret_cast<uint64_t*>(scratch + 4 * kSlot + 8);
    auto* st = reinterpret_cast<LockState*>(scratch + 4 * kSlot + 32);
    OpBatch lb;
    for (int k = 0; k < 2; ++k) add_lock(lb, refs[k], me, &old[k], &st[k]);
    if (co.run(lb) != OpStatus::kOk) return ++t.bad, false;
    bool ok = true;
    for (int k = 0; k < 2; ++k) ok &= lock_acquired(old[k]) && unchanged(st[k], refs[k], me);
    if (!ok) {
      OpBatch ub;
      for (int k = 0; k < 2; ++k) {
        if (lock_acquired(old[k])) add_unlock(ub, refs[k], zero, false);
      }
      if (co.run(ub) != OpStatus::kOk) ++t.bad;
      return ++t.aborts, false;
    }
    OpBatch cb;
    for (int k = 0; k < 2; ++k) add_commit(cb, refs[k], image[k], zero, false);
    if (co.run(cb) != OpStatus::kOk) return ++t.bad, false;
  } else {
    std::vector<ItemResult> res;
    if (!rpc_lock(co, refs, me, &res).is_ok()) return ++t.bad, false;
    bool ok = true;
    std::vector<RecordRef> held;
    for (int k = 0; k < 2; ++k) {
      ok &= res[k].locked && res[k].valid;
      if (res[k].locked) held.push_back(refs[k]);
    }
    if (!ok) {
      if (!held.empty() && !rpc_unlock(co, held, me, false).is_ok()) ++t.bad;
      return ++t.aborts, false;
    }
    const uint8_t* imgs[2] = {image[0], image[1]};
    if (!rpc_commit(co, refs, imgs, false).is_ok()) return ++t.bad, false;
  }
  ++t.commits;
  return true;
}

void run_transfers(Path path) {
  constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 4;
  constexpr int kPerCo = 300;
  auto c = r2::testing::InProcCluster::make(kNodes, kThreads,
                                            {{kData, kRecords * kSlot}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  init_records(*c, kNodes);
  Totals t;
  r2::WorkerConfig wc;
  wc.coroutines = kCos;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    LocalRegions lr{[&, n = w.node()](r2::RegionId id) -> std::pair<uint8_t*, size_t> {
      const r2::Region* r = c->f(n).region(id);
      return r ? std::make_pair(r->base, r->size) : std::make_pair(nullptr, size_t{0});
    }};
    ASSERT_TRUE(register_record_handlers(w, lr).is_ok());
    for (uint16_t k = 0; k < kCos; ++k) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     uint8_t* scratch =
                         c->base(co.node(), kScratch) + (co.thread() * kCos + co.id()) * 4096;
                     std::mt19937 rng(co.node() * 100 + co.thread() * 10 + co.id());
                     const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                     for (int i = 0; i < kPerCo && std::chrono::steady_clock::now() < until;) {
                       auto pick = [&] {
                         RecordRef r;
                         r.addr = {static_cast<r2::NodeId>(rng() % kNodes), kData,
                                   (rng() % kRecords) * kSlot};
                         r.value_size = kValue;
                         return r;
                       };
                       RecordRef a = pick(), b = pick();
                       if (a.addr.node == b.addr.node && a.addr.offset == b.addr.offset) continue;
                       const bool rpc =
                           path == Path::kRpc || (path == Path::kMixed && (co.id() % 2 == 1));
                       if (transfer(co, scratch, a, b, rpc, t)) ++i;
                       co.yield();
                     }
                   }).is_ok());
    }
  });
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(t.bad.load(), 0u);
  EXPECT_EQ(t.commits.load(), uint64_t{kNodes} * kThreads * kCos * kPerCo);
  EXPECT_GT(t.aborts.load(), 0u) << "no conflict ever happened: the test proves nothing";
  int64_t sum = 0;
  uint64_t versions = 0;
  for (uint16_t n = 0; n < kNodes; ++n) {
    for (uint32_t i = 0; i < kRecords; ++i) {
      const uint8_t* rec = c->base(n, kData) + i * kSlot;
      ASSERT_EQ(store::verify(rec, kValue), store::RecordCheck::kOk);
      store::RecordHeader h;
      std::memcpy(&h, rec, sizeof h);
      EXPECT_EQ(h.lock, 0u) << "record left locked";
      int64_t v;
      std::memcpy(&v, rec + sizeof h, 8);
      sum += v;
      versions += h.version - 1;
    }
  }
  EXPECT_EQ(sum, 0) << "money was created or destroyed";
  EXPECT_EQ(versions, 2 * t.commits.load()) << "a commit was lost or applied twice";
}

TEST(RecordOps, OneSidedTransfersConserveMoney) {
  run_transfers(Path::kOneSided);
}
TEST(RecordOps, RpcTransfersConserveMoney) {
  run_transfers(Path::kRpc);
}
TEST(RecordOps, MixedOneSidedAndRpcOnACoherentFabric) {
  run_transfers(Path::kMixed);
}

TEST(RecordOps, MalformedRequestsGetErrorsNotCrashes) {
  auto c = r2::testing::InProcCluster::make(2, 1, {{kData, kRecords * kSlot}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok());
  init_records(*c, 2);
  std::atomic<int> checks{0};
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    LocalRegions lr{[&, n = w.node()](r2::RegionId id) -> std::pair<uint8_t*, size_t> {
      const r2::Region* r = c->f(n).region(id);
      return r ? std::make_pair(r->base, r->size) : std::make_pair(nullptr, size_t{0});
    }};
    ASSERT_TRUE(register_record_handlers(w, lr).is_ok());
    if (w.node() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   r2::RpcBuffer reply;
                   EXPECT_FALSE(co.call({1, 0}, kRpcLock, "xx", 2, reply).is_ok());
                   std::vector<ItemResult> res;
                   RecordRef outside;
                   outside.addr = {1, kData, kRecords * kSlot};  // one past the end
                   outside.value_size = kValue;
                   Status s = rpc_lock(co, std::span<const RecordRef>(&outside, 1), 7, &res);
                   EXPECT_NE(s.message().find("outside the registered memory"), std::string::npos)
                       << s.to_string();
                   RecordRef bad_region = outside;
                   bad_region.addr = {1, 77, 0};
                   EXPECT_FALSE(
                       rpc_check(co, std::span<const RecordRef>(&bad_region, 1), 7, &res).is_ok());
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
}

}  // namespace
}  // namespace drtmx::txn
