// The OCC record steps under contention: transfers between random records
// of 3 nodes, locked and validated one-sided (fused CAS+READ), by RPC, or
// both at once, while audits read every record and validate the read set
// (READ checks, or RPC); money is conserved, every commit bumps exactly its
// records' versions, every validated audit saw a consistent sum, nothing
// stays locked, every record still verifies. Each also with the lock words
// apart (durable nodes, H8: a lock region beside the records), where no
// slot's own lock word is ever written; and the check's two READs on a
// lock word apart, interleaved with a writer step by step.
#include "txn/record_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "r2/support/worker_cluster.h"
#include "store/record.h"
#include "store/tables/plan.h"

namespace drtmx::txn {
namespace {

using r2::Co;
using r2::OpBatch;
using r2::OpStatus;

constexpr r2::RegionId kData = 1, kScratch = 2, kLocks = 3;
constexpr uint32_t kValue = 16;  // int64 balance + 8 bytes of padding
constexpr uint32_t kRecords = 24;
const size_t kSlot = store::record_slot_size(kValue);
constexpr size_t kScratchPer = 16384;  // per coroutine
constexpr size_t kLockBytes = kRecords * store::kLockEntryBytes;

enum class Path { kOneSided, kRpc, kMixed };

struct Totals {
  std::atomic<uint64_t> commits{0}, aborts{0}, bad{0};
  std::atomic<uint64_t> audits{0}, bad_audits{0};
};

// Lock words apart: record i of kData has its entry i in kLocks (one area).
store::tables::LockPlan lock_plan() {
  store::tables::LockPlan p;
  p.set(kData, {kLocks, kRecords * kSlot, 0, kSlot, kLockBytes});
  return p;
}

// Where a transfer or audit finds the lock words: in the slots (null) or
// apart.
struct Locks {
  const store::tables::LockPlan* plan = nullptr;
  void lock(OpBatch& b, const RecordRef& r, uint64_t me, uint64_t* old, LockState* st) const {
    plan ? add_lock(b, r, plan->lock_of(r.addr), me, old, st) : add_lock(b, r, me, old, st);
  }
  void check(OpBatch& b, const RecordRef& r, LockState* st) const {
    plan ? add_check(b, r, plan->lock_of(r.addr), st) : add_check(b, r, st);
  }
  void commit(OpBatch& b, const RecordRef& r, const uint8_t* image, const uint64_t* zero) const {
    plan ? add_commit(b, r, plan->lock_of(r.addr), image, zero, false)
         : add_commit(b, r, image, zero, false);
  }
  void unlock(OpBatch& b, const RecordRef& r, const uint64_t* zero) const {
    plan ? add_unlock(b, plan->lock_of(r.addr), zero, false) : add_unlock(b, r, zero, false);
  }
};

// The primary's side: its regions, and with the lock words apart, where
// the lock word of (region, offset) is.
LocalRegions local_regions(r2::testing::InProcCluster& c, r2::NodeId n, bool apart) {
  LocalRegions lr;
  lr.lookup = [&c, n](r2::RegionId id) -> std::pair<uint8_t*, size_t> {
    const r2::Region* r = c.f(n).region(id);
    return r ? std::make_pair(r->base, r->size) : std::make_pair(nullptr, size_t{0});
  };
  if (apart) {
    lr.lock_word = [&c, n](r2::RegionId region, uint64_t offset, uint32_t vs) -> uint64_t* {
      if (region != kData || vs != kValue || offset % kSlot != 0 || offset / kSlot >= kRecords) {
        return nullptr;
      }
      return reinterpret_cast<uint64_t*>(c.base(n, kLocks) +
                                         offset / kSlot * store::kLockEntryBytes);
    };
  }
  return lr;
}

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
bool transfer(Co& co, uint8_t* scratch, RecordRef a, RecordRef b, bool rpc, const Locks& locks,
              Totals& t) {
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
    for (int k = 0; k < 2; ++k) locks.lock(lb, refs[k], me, &old[k], &st[k]);
    if (co.run(lb) != OpStatus::kOk) return ++t.bad, false;
    bool ok = true;
    for (int k = 0; k < 2; ++k) ok &= lock_acquired(old[k]) && unchanged(st[k], refs[k], me);
    if (!ok) {
      OpBatch ub;
      for (int k = 0; k < 2; ++k) {
        if (lock_acquired(old[k])) locks.unlock(ub, refs[k], zero);
      }
      if (co.run(ub) != OpStatus::kOk) ++t.bad;
      return ++t.aborts, false;
    }
    OpBatch cb;
    for (int k = 0; k < 2; ++k) locks.commit(cb, refs[k], image[k], zero);
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

// A read-only audit of every record of `nodes` nodes: READ them all, then
// validate the read set (one-sided checks, or RPC). A validated audit must
// see the money conserved.
void audit(Co& co, uint8_t* scratch, uint16_t nodes, bool rpc, const Locks& locks, Totals& t) {
  const size_t n = size_t{nodes} * kRecords;
  std::vector<RecordRef> refs(n);
  OpBatch rb;
  for (size_t i = 0; i < n; ++i) {
    refs[i].addr = {static_cast<r2::NodeId>(i / kRecords), kData, (i % kRecords) * kSlot};
    refs[i].value_size = kValue;
    rb.read(refs[i].addr, scratch + i * kSlot, static_cast<uint32_t>(kSlot));
  }
  if (co.run(rb) != OpStatus::kOk) return void(++t.bad);
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* copy = scratch + i * kSlot;
    if (store::verify(copy, kValue) != store::RecordCheck::kOk) return;  // torn: not validated
    store::RecordHeader h;
    std::memcpy(&h, copy, sizeof h);
    refs[i].version = h.version;
    int64_t v;
    std::memcpy(&v, copy + sizeof h, 8);
    sum += v;
  }
  bool valid = true;
  if (rpc) {
    std::vector<ItemResult> res;
    if (!rpc_check(co, refs, /*my_lock=*/0, &res).is_ok()) return void(++t.bad);
    for (const ItemResult& r : res) valid &= r.valid;
  } else {
    auto* st = reinterpret_cast<LockState*>(scratch + n * kSlot);
    OpBatch cb;
    for (size_t i = 0; i < n; ++i) locks.check(cb, refs[i], &st[i]);
    if (co.run(cb) != OpStatus::kOk) return void(++t.bad);
    for (size_t i = 0; i < n; ++i) valid &= unchanged(st[i], refs[i], /*my_lock=*/0);
  }
  if (!valid) return;
  ++t.audits;
  if (sum != 0) ++t.bad_audits;
}

void run_transfers(Path path, bool apart) {
  constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 4;
  constexpr int kPerCo = 300, kAuditTries = 2000;
  static_assert(kNodes * kRecords * (kSlot + sizeof(LockState)) <= kScratchPer);
  std::vector<std::pair<r2::RegionId, size_t>> regions = {
      {kData, kRecords * kSlot}, {kScratch, size_t{kThreads} * kCos * kScratchPer}};
  if (apart) regions.emplace_back(kLocks, kLockBytes);
  auto c = r2::testing::InProcCluster::make(kNodes, kThreads, regions);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  init_records(*c, kNodes);
  const store::tables::LockPlan plan = lock_plan();
  const Locks locks{apart ? &plan : nullptr};
  Totals t;
  // Movers still transferring. The last one to finish audits until one
  // validates (nothing writes any more): the auditors' tries may all have
  // met transfers in flight on a loaded machine.
  std::atomic<int> movers{kNodes * kThreads * (kCos - 1)};
  r2::WorkerConfig wc;
  wc.coroutines = kCos;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    ASSERT_TRUE(register_record_handlers(w, local_regions(*c, w.node(), apart)).is_ok());
    for (uint16_t k = 0; k < kCos; ++k) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     uint8_t* scratch = c->base(co.node(), kScratch) +
                                        (co.thread() * kCos + co.id()) * kScratchPer;
                     std::mt19937 rng(co.node() * 100 + co.thread() * 10 + co.id());
                     const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                     const bool rpc =
                         path == Path::kRpc || (path == Path::kMixed && (co.thread() % 2 == 1));
                     if (co.id() == 0) {
                       // The auditor of this worker: until enough validated, bounded.
                       for (int i = 0;
                            (i < kAuditTries || movers.load() > 0) && t.audits.load() < 60 &&
                            std::chrono::steady_clock::now() < until;
                            ++i) {
                         audit(co, scratch, kNodes, rpc, locks, t);
                         co.yield();
                       }
                       return;
                     }
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
                       const bool by_rpc =
                           path == Path::kRpc || (path == Path::kMixed && (co.id() % 2 == 1));
                       if (transfer(co, scratch, a, b, by_rpc, locks, t)) ++i;
                       co.yield();
                     }
                     if (--movers == 0) {
                       for (int i = 0; i < 100 && t.audits.load() == 0; ++i) {
                         audit(co, scratch, kNodes, rpc, locks, t);
                         co.yield();
                       }
                     }
                   }).is_ok());
    }
  });
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(t.bad.load(), 0u);
  EXPECT_EQ(t.commits.load(), uint64_t{kNodes} * kThreads * (kCos - 1) * kPerCo);
  EXPECT_GT(t.aborts.load(), 0u) << "no conflict ever happened: the test proves nothing";
  EXPECT_GT(t.audits.load(), 0u) << "no audit validated: the test proves nothing";
  EXPECT_EQ(t.bad_audits.load(), 0u) << "a validated audit saw money in flight";
  int64_t sum = 0;
  uint64_t versions = 0;
  for (uint16_t n = 0; n < kNodes; ++n) {
    for (uint32_t i = 0; i < kRecords; ++i) {
      const uint8_t* rec = c->base(n, kData) + i * kSlot;
      ASSERT_EQ(store::verify(rec, kValue), store::RecordCheck::kOk);
      store::RecordHeader h;
      std::memcpy(&h, rec, sizeof h);
      EXPECT_EQ(h.lock, 0u) << (apart ? "a slot's own lock word was written"
                                      : "record left locked");
      if (apart) {
        uint64_t entry[2];
        std::memcpy(entry, c->base(n, kLocks) + i * store::kLockEntryBytes, sizeof entry);
        EXPECT_EQ(entry[0], 0u) << "record left locked";
        EXPECT_EQ(entry[1], 0u) << "a tuple timestamp without MVCC";
      }
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
  run_transfers(Path::kOneSided, false);
}
TEST(RecordOps, RpcTransfersConserveMoney) {
  run_transfers(Path::kRpc, false);
}
TEST(RecordOps, MixedOneSidedAndRpcOnACoherentFabric) {
  run_transfers(Path::kMixed, false);
}
TEST(RecordOps, OneSidedTransfersConserveMoneyWithLockWordsApart) {
  run_transfers(Path::kOneSided, true);
}
TEST(RecordOps, RpcTransfersConserveMoneyWithLockWordsApart) {
  run_transfers(Path::kRpc, true);
}
TEST(RecordOps, MixedOneSidedAndRpcWithLockWordsApart) {
  run_transfers(Path::kMixed, true);
}

// The ops of `b` executed one by one, in the order queued (what one
// channel does), on local memory by region; between(i) runs before op i:
// another node's writer acting between two ops of one doorbell.
void execute_in_order(const OpBatch& b, const std::map<r2::RegionId, uint8_t*>& mem,
                      const std::function<void(size_t)>& between) {
  for (size_t i = 0; i < b.size(); ++i) {
    between(i);
    const r2::WorkRequest& op = b.op(i);
    uint8_t* remote = mem.at(op.remote.region) + op.remote.offset;
    switch (op.verb) {
      case r2::Verb::kRead:
        std::memcpy(op.local, remote, op.len);
        break;
      case r2::Verb::kWrite:
        std::memcpy(remote, op.local, op.len);
        break;
      case r2::Verb::kCas: {
        uint64_t cur;
        std::memcpy(&cur, remote, 8);
        std::memcpy(op.local, &cur, 8);
        if (cur == op.compare) std::memcpy(remote, &op.operand, 8);
        break;
      }
      default:
        FAIL() << "execute_in_order: an op this test does not model";
    }
  }
}

// With the lock word apart, a check is two READs: the lock word, then the
// version. A writer acting between them, step by step: every writer that
// serializes before the checker (it held the lock when the check began)
// is caught; one that locks only after the lock READ serializes after the
// checker and may pass — unless it also committed before the version READ
// (then caught). The reverse order misses the first case.
TEST(RecordOps, ACheckOfALockWordApartReadsItBeforeTheVersion) {
  alignas(64) uint8_t slot[256] = {};
  alignas(16) uint64_t entry[2] = {0, 0};
  const int64_t value[2] = {7, 0};
  build_image(slot, 5, 1, 1, value, kValue);
  const std::map<r2::RegionId, uint8_t*> mem = {{kData, slot},
                                                {kLocks, reinterpret_cast<uint8_t*>(entry)}};
  const store::tables::LockPlan plan = lock_plan();
  RecordRef r;
  r.addr = {0, kData, 0};
  r.value_size = kValue;
  r.version = 1;  // what Execute read
  const r2::RemoteAddr lock = plan.lock_of(r.addr);
  ASSERT_EQ(lock.region, kLocks);
  ASSERT_EQ(lock.offset, 0u);
  const uint64_t writer = store::lock_word(1, 0, 0, 1);
  auto w_lock = [&] { entry[0] = writer; };
  auto w_commit = [&] {  // write back version 2, then unlock (record.h)
    const uint64_t v2 = 2;
    std::memcpy(slot + store::kBodyOffset, &v2, 8);
    entry[0] = 0;
  };
  auto reset = [&] {
    const uint64_t v1 = 1;
    std::memcpy(slot + store::kBodyOffset, &v1, 8);
    entry[0] = 0;
  };

  LockState st;
  OpBatch b;
  add_check(b, r, lock, &st);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.op(0).remote.region, kLocks) << "the lock word first";
  EXPECT_EQ(b.op(0).local, &st.lock);
  EXPECT_EQ(b.op(0).len, 8u);
  EXPECT_EQ(b.op(1).remote.region, kData);
  EXPECT_EQ(b.op(1).remote.offset, store::kBodyOffset) << "then the version";
  EXPECT_EQ(b.op(1).local, &st.version);
  EXPECT_EQ(b.op(1).len, 8u);

  // No writer: valid.
  reset();
  execute_in_order(b, mem, [](size_t) {});
  EXPECT_TRUE(unchanged(st, r, 0));
  // The writer held the lock when the check began and commits between the
  // READs (it serializes before us; we read its predecessor): caught.
  reset();
  w_lock();
  execute_in_order(b, mem, [&](size_t i) {
    if (i == 1) w_commit();
  });
  EXPECT_FALSE(unchanged(st, r, 0));
  // It locks and commits between the READs: caught by the version.
  reset();
  execute_in_order(b, mem, [&](size_t i) {
    if (i == 1) w_lock(), w_commit();
  });
  EXPECT_FALSE(unchanged(st, r, 0));
  // It only locks between them: it serializes after us (it took its lock
  // after our check began, so after every lock of ours): passes, rightly.
  reset();
  execute_in_order(b, mem, [&](size_t i) {
    if (i == 1) w_lock();
  });
  EXPECT_TRUE(unchanged(st, r, 0));
  // It held the lock and commits while the check runs — a single READ of
  // both words (in the slot) could only see before or after. The reverse
  // order (version, then lock word) would miss it:
  reset();
  w_lock();
  OpBatch wrong;
  wrong.read({0, kData, store::kBodyOffset}, &st.version, 8);
  wrong.read(lock, &st.lock, 8);
  execute_in_order(wrong, mem, [&](size_t i) {
    if (i == 1) w_commit();
  });
  EXPECT_TRUE(unchanged(st, r, 0)) << "the reverse order misses it (why add_check does not use it)";

  // add_lock: the CAS on the lock word, then the version (8 B).
  uint64_t old = 0;
  OpBatch lb;
  add_lock(lb, r, lock, writer, &old, &st);
  ASSERT_EQ(lb.size(), 2u);
  EXPECT_EQ(lb.op(0).verb, r2::Verb::kCas);
  EXPECT_EQ(lb.op(0).remote.region, kLocks);
  EXPECT_EQ(lb.op(1).verb, r2::Verb::kRead);
  EXPECT_EQ(lb.op(1).remote.offset, store::kBodyOffset);
  EXPECT_EQ(st.lock, 0u) << "add_lock leaves only the version to compare";
  // add_commit: the body, then the unlock WRITE to the lock word.
  OpBatch cb;
  const uint64_t zero = 0;
  add_commit(cb, r, lock, slot, &zero, false);
  ASSERT_EQ(cb.size(), 2u);
  EXPECT_EQ(cb.op(0).remote.region, kData);
  EXPECT_EQ(cb.op(0).remote.offset, 8u);
  EXPECT_EQ(cb.op(1).remote.region, kLocks);
  EXPECT_EQ(cb.op(1).remote.offset, 0u);
}

// One-sided MVCC: a snapshot's raise of a record's ts, made while a writer
// holds the lock, survives that writer's commit. The snapshot's doorbell
// is CAS(ts -> read_ts), READ lock word, READ record (snapshot_onesided.cc);
// the writer (commit ts below read_ts) writes back and unlocks between the
// CAS and the lock READ. The snapshot then sees the lock free and reads the
// writer's version (its wts is below read_ts) — so ts must still be
// read_ts, or a next writer collects the lower ts, commits below read_ts
// and changes what the snapshot already read. add_commit_keep_ts keeps the
// raise; a write-back over the whole header (add_commit) loses it.
TEST(RecordOps, AOneSidedMvccCommitKeepsARaiseMadeUnderItsLock) {
  constexpr uint64_t kTs0 = 10, kCommit = 20, kReadTs = 100;
  const uint64_t writer = store::lock_word(1, 0, 0, 1);
  const int64_t v1[2] = {7, 0}, v2[2] = {8, 0};
  RecordRef r;
  r.addr = {0, kData, 0};
  r.value_size = kValue;
  r.version = 1;
  alignas(64) uint8_t image[256] = {};  // the writer's new version
  build_image(image, 5, 1, 2, v2, kValue);
  reinterpret_cast<store::RecordHeader*>(image)->wts = kCommit;
  reinterpret_cast<store::RecordHeader*>(image)->ts = kCommit;
  store::seal(image, kValue);
  const uint64_t zero = 0;

  // Runs the interleaving with the writer's commit batch `commit`; returns
  // the record's ts afterwards, and checks what the snapshot read.
  auto run = [&](const OpBatch& commit) {
    alignas(64) uint8_t slot[256] = {};
    build_image(slot, 5, 1, 1, v1, kValue);
    reinterpret_cast<store::RecordHeader*>(slot)->wts = 5;
    reinterpret_cast<store::RecordHeader*>(slot)->ts = kTs0;
    store::seal(slot, kValue);
    reinterpret_cast<store::RecordHeader*>(slot)->lock = writer;  // the writer holds it
    const std::map<r2::RegionId, uint8_t*> mem = {{kData, slot}};
    uint64_t seen_ts = 0, old_ts = 0, lock = 1;
    alignas(64) uint8_t got[256] = {};
    OpBatch snap;
    snap.read({0, kData, store::kTsOffset}, &seen_ts, 8);
    snap.cas({0, kData, store::kTsOffset}, kTs0, kReadTs, &old_ts, false);
    snap.read({0, kData, 0}, &lock, 8);
    snap.read({0, kData, 0}, got, static_cast<uint32_t>(kSlot));
    execute_in_order(snap, mem, [&](size_t i) {
      if (i == 2) execute_in_order(commit, mem, [](size_t) {});
    });
    EXPECT_EQ(old_ts, kTs0) << "the raise took place";
    EXPECT_EQ(lock, 0u);
    EXPECT_EQ(store::verify(got, kValue, 5, 1), store::RecordCheck::kOk);
    store::RecordHeader h;
    std::memcpy(&h, got, sizeof h);
    EXPECT_EQ(h.version, 2u) << "the snapshot reads the writer's version";
    EXPECT_LE(h.wts, kReadTs);
    return *store::ts_word(slot);
  };
  OpBatch keep;
  add_commit_keep_ts(keep, r, image, &zero, false);
  EXPECT_EQ(run(keep), kReadTs) << "the commit lowered the ts a snapshot raised";
  OpBatch over;  // why the one-sided MVCC commit does not use add_commit
  add_commit(over, r, image, &zero, false);
  EXPECT_EQ(run(over), kCommit) << "a write over the ts word loses the raise";
}

// On a fabric: a lock taken one-sided or by RPC is in the lock region, by
// address, while the slot's own lock word stays 0; another's check sees
// it; commit and release clear it there.
TEST(RecordOps, LocksApartAreTakenInTheLockRegionNotInTheSlot) {
  auto c = r2::testing::InProcCluster::make(
      2, 1, {{kData, kRecords * kSlot}, {kScratch, kScratchPer}, {kLocks, kLockBytes}});
  ASSERT_TRUE(c->error.is_ok());
  init_records(*c, 2);
  const store::tables::LockPlan plan = lock_plan();
  std::atomic<int> checks{0};
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    ASSERT_TRUE(register_record_handlers(w, local_regions(*c, w.node(), true)).is_ok());
    if (w.node() != 0) return;
    ASSERT_TRUE(
        w.spawn([&](Co& co) {
           uint8_t* scratch = c->base(0, kScratch);
           auto entry = [&](uint32_t i) {
             return __atomic_load_n(
                 reinterpret_cast<uint64_t*>(c->base(1, kLocks) + i * store::kLockEntryBytes),
                 __ATOMIC_ACQUIRE);
           };
           auto slot_lock = [&](uint32_t i) {
             return __atomic_load_n(reinterpret_cast<uint64_t*>(c->base(1, kData) + i * kSlot),
                                    __ATOMIC_ACQUIRE);
           };
           const uint64_t me = store::lock_word(0, 0, 0, 1);
           RecordRef r;
           r.addr = {1, kData, 5 * kSlot};
           r.value_size = kValue;
           r.version = 1;
           auto* old = reinterpret_cast<uint64_t*>(scratch);
           auto* st = reinterpret_cast<LockState*>(scratch + 16);
           auto* zero = reinterpret_cast<uint64_t*>(scratch + 16 + sizeof(LockState));
           *zero = 0;
           // One-sided.
           OpBatch b;
           add_lock(b, r, plan.lock_of(r.addr), me, old, st);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_TRUE(lock_acquired(*old));
           EXPECT_TRUE(unchanged(*st, r, me));
           EXPECT_EQ(entry(5), me);
           EXPECT_EQ(slot_lock(5), 0u);
           b.clear();
           add_check(b, r, plan.lock_of(r.addr), st);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_FALSE(unchanged(*st, r, 0)) << "another's check must see the lock";
           std::vector<ItemResult> res;
           ASSERT_TRUE(rpc_check(co, std::span<const RecordRef>(&r, 1), 0, &res).is_ok());
           EXPECT_FALSE(res[0].valid) << "the RPC check too";
           // Held one-sided: another's RPC lock and one-sided lock fail.
           const uint64_t other = store::lock_word(0, 0, 1, 1);
           ASSERT_TRUE(rpc_lock(co, std::span<const RecordRef>(&r, 1), other, &res).is_ok());
           EXPECT_FALSE(res[0].locked) << "an RPC lock of a record held in the lock region";
           b.clear();
           add_lock(b, r, plan.lock_of(r.addr), other, old + 1, st);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_EQ(old[1], me) << "a one-sided lock of a record held in the lock region";
           EXPECT_EQ(entry(5), me);
           uint8_t* image = scratch + 64;
           const int64_t v[2] = {3, 0};
           build_image(image, 1005, 1, 2, v, kValue);
           b.clear();
           add_commit(b, r, plan.lock_of(r.addr), image, zero, false);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_EQ(entry(5), 0u);
           EXPECT_EQ(slot_lock(5), 0u);
           // By RPC.
           r.version = 2;
           ASSERT_TRUE(rpc_lock(co, std::span<const RecordRef>(&r, 1), me, &res).is_ok());
           EXPECT_TRUE(res[0].locked && res[0].valid);
           // Held by RPC: another's one-sided lock and RPC lock fail.
           b.clear();
           add_lock(b, r, plan.lock_of(r.addr), other, old + 1, st);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_EQ(old[1], me) << "a one-sided lock of a record the owner locked";
           ASSERT_TRUE(rpc_lock(co, std::span<const RecordRef>(&r, 1), other, &res).is_ok());
           EXPECT_FALSE(res[0].locked);
           EXPECT_EQ(entry(5), me);
           EXPECT_EQ(slot_lock(5), 0u);
           ASSERT_TRUE(rpc_unlock(co, std::span<const RecordRef>(&r, 1), me, false).is_ok());
           EXPECT_EQ(entry(5), 0u);
           // Release by CAS clears only our own lock.
           b.clear();
           add_lock(b, r, plan.lock_of(r.addr), me, old, st);
           add_release(b, plan.lock_of(r.addr), me + 1, old + 1, false);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_EQ(entry(5), me);
           b.clear();
           add_release(b, plan.lock_of(r.addr), me, old, false);
           ASSERT_EQ(co.run(b), OpStatus::kOk);
           EXPECT_EQ(entry(5), 0u);
           for (uint32_t i = 0; i < kRecords; ++i) EXPECT_EQ(slot_lock(i), 0u);
           ++checks;
         }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
}

TEST(RecordOps, MalformedRequestsGetErrorsNotCrashes) {
  auto c = r2::testing::InProcCluster::make(
      2, 1, {{kData, kRecords * kSlot}, {kScratch, 4096}, {kLocks, kLockBytes}});
  ASSERT_TRUE(c->error.is_ok());
  init_records(*c, 2);
  std::atomic<int> checks{0};
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    // Node 1 keeps its lock words apart: a request for an offset that is
    // inside the region but no record slot is refused too.
    ASSERT_TRUE(register_record_handlers(w, local_regions(*c, w.node(), w.node() == 1)).is_ok());
    if (w.node() != 0) return;
    ASSERT_TRUE(
        w.spawn([&](Co& co) {
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
           EXPECT_FALSE(rpc_check(co, std::span<const RecordRef>(&bad_region, 1), 7, &res).is_ok());
           RecordRef mid_slot = outside;
           mid_slot.addr = {1, kData, kSlot + 8};  // registered, but no slot starts there
           s = rpc_lock(co, std::span<const RecordRef>(&mid_slot, 1), 7, &res);
           EXPECT_NE(s.message().find("not a record slot"), std::string::npos) << s.to_string();
           ++checks;
         }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
}

// The steps run at once on the caller's own record (validate.cc) give what
// add_lock and add_check give: the lock taken only when free, the word
// found when not, the lock word and version read — with the lock word in
// the slot and apart from it.
TEST(RecordOps, StepsOnTheCallersOwnRecordMatchTheQueuedOnes) {
  for (const bool apart : {false, true}) {
    SCOPED_TRACE(apart ? "lock word apart" : "lock word in the slot");
    alignas(64) uint8_t rec[128] = {};
    uint64_t lock_apart = 0;
    store::RecordHeader h{};
    h.version = 41;
    std::memcpy(rec, &h, sizeof h);
    store::SlotRef s = store::SlotRef::in_slot(rec);
    if (apart) s.lock = &lock_apart;
    LockState st{};
    uint64_t old = ~uint64_t{0};
    check_here(s, &st);
    EXPECT_EQ(st.lock, 0u);
    EXPECT_EQ(st.version, 41u);
    lock_here(s, /*lock_word=*/7, &old, &st);
    EXPECT_EQ(old, 0u) << "a free lock was not taken";
    EXPECT_EQ(*s.lock, 7u);
    EXPECT_EQ(st.version, 41u);
    EXPECT_EQ(st.lock, 0u);
    lock_here(s, /*lock_word=*/9, &old, &st);
    EXPECT_EQ(old, 7u) << "a held lock was taken again";
    EXPECT_EQ(*s.lock, 7u);
    check_here(s, &st);
    EXPECT_EQ(st.lock, 7u);
    EXPECT_FALSE(unchanged(st, RecordRef{{}, 8, 41}, /*my_lock=*/9));
    EXPECT_TRUE(unchanged(st, RecordRef{{}, 8, 41}, /*my_lock=*/7));
    uint64_t in_slot = 0;
    std::memcpy(&in_slot, rec, 8);
    EXPECT_EQ(in_slot, apart ? 0u : 7u) << "the lock went to the wrong word";
  }
}

// commit_here stores what add_commit (keep_ts: add_commit_keep_ts) WRITEs
// and then frees the lock: the new header and value, the ts word kept when
// asked (a raise made while we held the lock must survive), the lock 0.
TEST(RecordOps, CommitOnTheCallersOwnRecordWritesBackThenUnlocks) {
  constexpr uint32_t kVs = 20;
  for (const bool keep_ts : {false, true}) {
    SCOPED_TRACE(keep_ts ? "ts kept" : "ts written");
    alignas(64) uint8_t rec[store::record_slot_size(kVs)] = {};
    store::RecordHeader h{};
    h.lock = 7;
    h.version = 41;
    h.key = 5;
    h.ts = 55;  // raised by a reader while we held the lock
    std::memcpy(rec, &h, sizeof h);
    alignas(64) uint8_t image[store::record_slot_size(kVs)] = {};
    uint8_t value[kVs];
    for (uint32_t i = 0; i < kVs; ++i) value[i] = static_cast<uint8_t>(i + 1);
    build_image(image, /*key=*/5, /*incarnation=*/0, /*version=*/42, value, kVs);
    commit_here(store::SlotRef::in_slot(rec), image, kVs, keep_ts);
    store::RecordHeader after;
    std::memcpy(&after, rec, sizeof after);
    EXPECT_EQ(after.lock, 0u) << "not unlocked";
    EXPECT_EQ(after.version, 42u);
    EXPECT_EQ(after.key, 5u);
    EXPECT_EQ(after.ts, keep_ts ? 55u : 0u);
    EXPECT_EQ(std::memcmp(rec + store::kValueOffset, value, kVs), 0) << "value not written";
    if (!keep_ts) {
      EXPECT_EQ(std::memcmp(rec + 8, image + 8, sizeof(rec) - 8), 0);
    }
  }
}

}  // namespace
}  // namespace drtmx::txn
