// The OCC engine end to end on 3 nodes with 3-way replication, for every
// policy preset: transfers under contention and audits (read-only
// transactions summing a set of accounts that only transfers among
// themselves move) that must always see the same total; money conserved;
// nothing left locked; every backup copy equal to its primary.
#include "txn/engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>

#include "r2/support/worker_cluster.h"
#include "store/record.h"

namespace drtmx::txn {
namespace {

using r2::Co;

constexpr r2::RegionId kTable = 20, kLog = 21, kScratch = 22;
constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 4;
constexpr uint32_t kAccounts = 60, kAudit = 8;  // accounts [0, kAudit) form the audit set
constexpr uint32_t kValue = 16;
constexpr int64_t kInitial = 1000;
constexpr uint16_t kReadRpc = 120;
const size_t kSlot = store::record_slot_size(kValue);
constexpr size_t kArena = 32 * 1024;

struct Account {
  int64_t balance;
  int64_t pad;
};

// A dense "array table": key k's slot is at k * kSlot in every node's table
// region; its primary is k % kNodes and its backups the next two nodes.
class ArrayLocator final : public Locator {
 public:
  ArrayLocator() = default;
  uint32_t value_size(TableId) const override { return kValue; }
  r2::NodeId primary(TableId, Key k) const override { return k % kNodes; }
  size_t backups(TableId, Key k, r2::NodeId* out, size_t max) const override {
    size_t n = 0;
    for (uint16_t i = 1; i < kNodes && n < max; ++i) out[n++] = (k + i) % kNodes;
    return n;
  }
  Abort read(Co& co, ReadPath path, TableId, Key k, RecordRef* ref, uint8_t* copy) override {
    ref->addr = {primary(0, k), kTable, k * kSlot};
    ref->value_size = kValue;
    for (int attempt = 0; attempt < 32; ++attempt) {
      if (path == ReadPath::kRpc) {
        r2::RpcBuffer reply;
        if (!co.call({ref->addr.node, co.thread()}, kReadRpc, &k, sizeof k, reply).is_ok() ||
            reply.size() != kSlot) {
          return Abort::kNodeFailure;
        }
        std::memcpy(copy, reply.data(), kSlot);
      } else if (co.read(ref->addr, copy, static_cast<uint32_t>(kSlot)) != r2::OpStatus::kOk) {
        return Abort::kNodeFailure;
      }
      const auto check = store::verify(copy, kValue, k, 1);
      if (check == store::RecordCheck::kTorn) continue;
      if (check != store::RecordCheck::kOk) return Abort::kRecordMissing;
      store::RecordHeader h;
      std::memcpy(&h, copy, sizeof h);
      ref->version = h.version;
      return Abort::kNone;
    }
    return Abort::kTornRead;
  }
  // One-sided reads of several keys behind one doorbell per primary.
  void read_many(Co& co, ReadPath path, std::span<const TableKey> keys, RecordRef* refs,
                 uint8_t* const* copies, Abort* results) override {
    if (path == ReadPath::kRpc) return Locator::read_many(co, path, keys, refs, copies, results);
    r2::OpBatch b;
    for (size_t i = 0; i < keys.size(); ++i) {
      refs[i].addr = {primary(0, keys[i].key), kTable, keys[i].key * kSlot};
      refs[i].value_size = kValue;
      b.read(refs[i].addr, copies[i], static_cast<uint32_t>(kSlot));
    }
    const bool ok = co.run(b) == r2::OpStatus::kOk;
    ++batched;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (ok && store::verify(copies[i], kValue, keys[i].key, 1) == store::RecordCheck::kOk) {
        store::RecordHeader h;
        std::memcpy(&h, copies[i], sizeof h);
        refs[i].version = h.version;
        results[i] = Abort::kNone;
      } else {  // torn (or failed): read this one again on its own
        results[i] = read(co, path, keys[i].table, keys[i].key, &refs[i], copies[i]);
      }
    }
  }
  uint64_t batched = 0;
};

Abort transfer(Txn& tx, Key from, Key to, int64_t amount, bool outstanding) {
  Account a, b;
  if (outstanding) {
    // Both reads in one round trip; the gets below are served locally.
    const TableKey both[2] = {{0, from}, {0, to}};
    if (Abort r = tx.prefetch(both, /*for_update=*/true); r != Abort::kNone) return r;
  }
  if (Abort r = tx.get_for_update(0, from, &a); r != Abort::kNone) return r;
  if (Abort r = tx.get_for_update(0, to, &b); r != Abort::kNone) return r;
  if (a.balance < amount) return tx.user_abort();
  a.balance -= amount;
  b.balance += amount;
  tx.put(0, from, &a);
  tx.put(0, to, &b);
  return Abort::kNone;
}

void run_bank(const std::string& preset) {
  auto policy = make_policy(preset, {}, /*coherent=*/true);
  ASSERT_TRUE(policy.is_ok()) << policy.status().to_string();
  ReplicationConfig rc;
  rc.layout = {kNodes, kThreads, 16384};
  rc.log_region = kLog;
  const size_t img = Replicator::image_bytes(rc);
  const size_t per_co = kArena + img;
  auto c = r2::testing::InProcCluster::make(kNodes, kThreads,
                                            {{kTable, kAccounts * kSlot},
                                             {kLog, rc.layout.region_bytes()},
                                             {kScratch, kThreads * kCos * per_co}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  for (uint16_t n = 0; n < kNodes; ++n) {
    for (Key k = 0; k < kAccounts; ++k) {
      Account v{kInitial, 0};
      build_image(c->base(n, kTable) + k * kSlot, k, 1, 1, &v, kValue);
    }
  }
  std::atomic<uint64_t> committed{0}, audits{0}, bad_audits{0}, running{0};
  std::atomic<uint64_t> aborts[kAbortKinds] = {};
  std::vector<std::unique_ptr<Replicator>> reps(kNodes * kThreads);
  std::vector<std::unique_ptr<BackupApplier>> apps(kNodes * kThreads);
  std::mutex install_mu[kNodes];
  std::vector<std::unique_ptr<ArrayLocator>> locs(kNodes * kThreads);
  r2::WorkerConfig wc;
  wc.coroutines = kCos + 1;
  running = kNodes * kThreads * kCos;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    const size_t wi = w.node() * kThreads + w.thread();
    uint8_t* table = c->base(w.node(), kTable);
    LocalRegions lr{[&, n = w.node()](r2::RegionId id) -> std::pair<uint8_t*, size_t> {
                      const r2::Region* r = c->f(n).region(id);
                      return r ? std::make_pair(r->base, r->size)
                               : std::make_pair(nullptr, size_t{0});
                    },
                    /*lock_word=*/{}, /*flush=*/{}, /*drain=*/{}};
    ASSERT_TRUE(register_record_handlers(w, lr).is_ok());
    ASSERT_TRUE(w.register_handler(kReadRpc, [table](r2::RpcRequest& r) {
                   Key k;
                   if (r.payload().size() != sizeof k) return r.reply_error("bad read request");
                   std::memcpy(&k, r.payload().data(), sizeof k);
                   if (k >= kAccounts) return r.reply_error("no such account");
                   r.reply(table + k * kSlot, static_cast<uint32_t>(kSlot));
                 }).is_ok());
    reps[wi] = std::make_unique<Replicator>(w, rc);
    ASSERT_TRUE(reps[wi]->attach().is_ok());
    apps[wi] = std::make_unique<BackupApplier>(
        w, rc, c->base(w.node(), kLog), [table, &mu = install_mu[w.node()]](const RedoRecord& r) {
          // The node's appliers (one per thread) may install the same
          // account at once: compare and copy under the node's latch, as
          // the engine's stores do under their chain latches.
          std::lock_guard<std::mutex> g(mu);
          uint8_t* slot = table + r.key * kSlot;
          store::RecordHeader h;
          std::memcpy(&h, slot, sizeof h);
          if (r.version <= h.version) return;
          // A backup copy: [version..end] only.
          uint8_t image[128];
          build_image(image, r.key, 1, r.version, r.value.data(), kValue);
          std::memcpy(slot + 8, image + 8, kSlot - 8);
        });
    locs[wi] = std::make_unique<ArrayLocator>();
    for (uint16_t k = 0; k < kCos; ++k) {
      ASSERT_TRUE(
          w.spawn([&, wi, k](Co& co) {
             uint8_t* mem = c->base(co.node(), kScratch) + (co.thread() * kCos + k) * per_co;
             Engine eng(co, *locs[wi], reps[wi].get(), *policy, mem, per_co);
             // Commit images that a fabric read after the next attempt
             // began would land poisoned: the money check would see them.
             eng.set_arena_poison(0xa5);
             std::mt19937 rng(static_cast<uint32_t>(wi * 31 + k));
             const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
             for (int i = 0; i < 150 && std::chrono::steady_clock::now() < until; ++i) {
               const unsigned dice = rng() % 10;
               Abort r;
               int attempt = 0;
               do {
                 if (dice == 0) {  // audit
                   int64_t sum = 0;
                   r = eng.run([&](Txn& tx) {
                     sum = 0;
                     for (Key a = 0; a < kAudit; ++a) {
                       Account v;
                       if (Abort e = tx.get(0, a, &v); e != Abort::kNone) return e;
                       sum += v.balance;
                     }
                     return Abort::kNone;
                   });
                   if (r == Abort::kNone) {
                     ++audits;
                     if (sum != kInitial * kAudit) ++bad_audits;
                   }
                 } else {
                   // Within the audit set, or among the others.
                   const bool inside = dice < 3;
                   const Key base = inside ? 0 : kAudit;
                   const Key span = inside ? kAudit : kAccounts - kAudit;
                   const Key a = base + rng() % span;
                   Key b = base + rng() % span;
                   if (b == a) b = base + (b - base + 1) % span;
                   const bool outstanding = rng() % 2 == 0;
                   r = eng.run(
                       [&](Txn& tx) { return transfer(tx, a, b, 1 + rng() % 5, outstanding); });
                 }
                 if (r != Abort::kNone) ++aborts[static_cast<int>(r)];
                 if (r == Abort::kUserAbort) break;
                 // Retry with randomized exponential back-off (the
                 // caller's policy): let the conflicting ones finish.
                 if (r != Abort::kNone) {
                   const int spins = 1 + static_cast<int>(rng() % (1u << std::min(++attempt, 8)));
                   for (int s = 0; s < spins; ++s) co.yield_idle();
                 }
               } while (r != Abort::kNone && std::chrono::steady_clock::now() < until);
               if (r == Abort::kNone) ++committed;
             }
             --running;
           }).is_ok());
    }
    // Keep serving until every coordinator finished and every entry is applied.
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(40);
                   auto done = [&] {
                     if (running.load() != 0) return false;
                     uint64_t sent = 0, got = 0;
                     for (auto& r : reps) sent += r ? r->entries() : 0;
                     for (auto& a : apps) got += a ? a->applied() : 0;
                     return got == sent;  // entries written == entries applied
                   };
                   while (!done() && std::chrono::steady_clock::now() < until) co.yield_idle();
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out) << preset;
  std::string summary = preset + ": committed " + std::to_string(committed.load());
  for (int i = 1; i < kAbortKinds; ++i) {
    if (aborts[i])
      summary += std::string(", ") + abort_name(static_cast<Abort>(i)) + " " +
                 std::to_string(aborts[i].load());
  }
  uint64_t timeouts = 0, stale = 0, malformed = 0;
  for (auto& w : run.workers) {
    timeouts += w->stats().timeouts;
    stale += w->stats().stale_replies;
    malformed += w->stats().malformed;
  }
  summary += ", rpc timeouts " + std::to_string(timeouts) + ", stale replies " +
             std::to_string(stale) + ", malformed " + std::to_string(malformed);
  std::printf("%s\n", summary.c_str());
  EXPECT_EQ(timeouts, 0u);
  EXPECT_EQ(malformed, 0u);
  EXPECT_GT(committed.load(), 0u);
  if (preset != "fasst") {
    uint64_t batched = 0;
    for (auto& l : locs) batched += l->batched;
    EXPECT_GT(batched, 0u) << "outstanding reads were never batched";
  }
  EXPECT_EQ(bad_audits.load(), 0u) << preset << ": an audit saw money in flight";
  EXPECT_GT(audits.load(), 0u);
  uint64_t conflicts =
      aborts[static_cast<int>(Abort::kLockHeld)] + aborts[static_cast<int>(Abort::kVersionChanged)];
  EXPECT_GT(conflicts, 0u) << preset << ": no conflicts: the test proves little";
  EXPECT_EQ(aborts[static_cast<int>(Abort::kNodeFailure)].load(), 0u);
  // Money is conserved at the primaries; backups equal primaries.
  int64_t total = 0;
  for (Key k = 0; k < kAccounts; ++k) {
    const uint8_t* prim = c->base(k % kNodes, kTable) + k * kSlot;
    ASSERT_EQ(store::verify(prim, kValue, k, 1), store::RecordCheck::kOk);
    store::RecordHeader ph;
    std::memcpy(&ph, prim, sizeof ph);
    EXPECT_EQ(ph.lock, 0u) << "account " << k << " left locked";
    Account v;
    std::memcpy(&v, prim + sizeof ph, sizeof v);
    total += v.balance;
    for (uint16_t i = 1; i < kNodes; ++i) {
      const uint8_t* back = c->base((k + i) % kNodes, kTable) + k * kSlot;
      store::RecordHeader bh;
      std::memcpy(&bh, back, sizeof bh);
      EXPECT_EQ(bh.version, ph.version) << preset << ": backup of account " << k;
      EXPECT_EQ(std::memcmp(back + sizeof bh, prim + sizeof ph, kValue), 0)
          << preset << ": backup value of account " << k;
    }
  }
  EXPECT_EQ(total, int64_t{kAccounts} * kInitial) << preset << ": money created or destroyed";
}

TEST(Engine, DrtmhBankWithAuditsAndReplication) {
  run_bank("drtmh");
}
TEST(Engine, FarmBankWithAuditsAndReplication) {
  run_bank("farm");
}
TEST(Engine, DrtmRBankWithAuditsAndReplication) {
  run_bank("drtm-r");
}
TEST(Engine, FasstBankWithAuditsAndReplication) {
  run_bank("fasst");
}

}  // namespace
}  // namespace drtmx::txn
