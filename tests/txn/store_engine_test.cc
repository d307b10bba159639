// The OCC engine over the real storage layer: a catalog with a hash table
// and an ordered table with records (accounts split between them), placed
// on 3 nodes with 3-way replication, StoreNode owners, StoreLocator reads,
// backups installed through StoreNode::install. Transfers under contention
// and audits (read-only sums over a set of accounts moved only among
// themselves) for every preset; afterwards money is conserved, nothing is
// left locked, and every backup copy equals its primary.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "r2/support/worker_cluster.h"
#include "store/catalog.h"
#include "store/record.h"
#include "store/tables/store_node.h"
#include "txn/engine.h"
#include "txn/store_locator.h"

namespace drtmx::txn {
namespace {

using r2::Co;
namespace st = store::tables;

constexpr uint16_t kNodes = 3, kThreads = 1, kCos = 4;
constexpr TableId kHashAcc = 1, kTreeAcc = 2;
constexpr uint32_t kPerTable = 30, kAudit = 8;  // keys [0, kAudit) of kHashAcc are audited
constexpr int64_t kInitial = 1000;
constexpr r2::RegionId kLog = 900, kArenaRegion = 901;
constexpr size_t kArena = 32 * 1024;

struct Account {
  int64_t balance;
  int64_t pad;
};

store::Catalog make_catalog() {
  std::vector<store::TableSpec> specs(2);
  specs[0].id = kHashAcc;
  specs[0].name = "checking";
  specs[0].kind = store::TableKind::kHash;
  specs[0].value_size = sizeof(Account);
  specs[0].capacity = 1000;
  specs[0].partitions = kNodes;
  specs[1].id = kTreeAcc;
  specs[1].name = "savings";
  specs[1].kind = store::TableKind::kOrdered;
  specs[1].value_size = sizeof(Account);
  specs[1].capacity = 1000;
  specs[1].scheme = store::PartitionScheme::kRange;
  specs[1].partitions = kNodes;
  specs[1].range_bounds = {10, 20};
  auto c = store::Catalog::create(std::move(specs), kNodes, 3);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c.value());
}

// Account i in [0, 2 * kPerTable): table by half, key within it.
TableKey account(uint32_t i) {
  return i < kPerTable ? TableKey{kHashAcc, i} : TableKey{kTreeAcc, i - kPerTable};
}

Abort transfer(Txn& tx, TableKey from, TableKey to, int64_t amount) {
  Account a, b;
  if (Abort r = tx.get_for_update(from.table, from.key, &a); r != Abort::kNone) return r;
  if (Abort r = tx.get_for_update(to.table, to.key, &b); r != Abort::kNone) return r;
  if (a.balance < amount) return tx.user_abort();
  a.balance -= amount;
  b.balance += amount;
  tx.put(from.table, from.key, &a);
  tx.put(to.table, to.key, &b);
  return Abort::kNone;
}

void run_bank(const std::string& preset) {
  auto policy = make_policy(preset, {}, /*coherent=*/true);
  ASSERT_TRUE(policy.is_ok()) << policy.status().to_string();
  const store::Catalog cat = make_catalog();
  ReplicationConfig rc;
  rc.layout = {kNodes, kThreads, 16384};
  rc.log_region = kLog;
  const size_t img = Replicator::image_bytes(rc);
  const size_t per_co = kArena + img;
  const st::ScratchPlan scratch{kThreads, kCos, st::scratch_per_coroutine(cat)};
  auto regions = st::regions_of(scratch);
  // Every node plans the same table regions (addresses are computed, not exchanged).
  const auto growable = st::growable_regions_of(cat, 0);
  for (uint16_t n = 1; n < kNodes; ++n) ASSERT_EQ(growable, st::growable_regions_of(cat, n));
  regions.push_back({kLog, rc.layout.region_bytes()});
  regions.push_back({kArenaRegion, kThreads * kCos * per_co});
  auto c = r2::testing::InProcCluster::make(kNodes, kThreads, regions, nullptr, nullptr, growable);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::vector<std::unique_ptr<st::StoreNode>> nodes;
  std::vector<std::unique_ptr<st::NodeCaches>> caches;
  for (uint16_t n = 0; n < kNodes; ++n) {
    auto sn = st::StoreNode::create(cat, c->f(n));
    ASSERT_TRUE(sn.is_ok()) << sn.status().to_string();
    nodes.push_back(std::move(sn.value()));
    st::NodeCacheOptions o;
    o.threads = kThreads;
    o.location.budget_bytes = 1 << 20;
    auto nc = st::NodeCaches::create(cat, o);
    ASSERT_TRUE(nc.is_ok());
    caches.push_back(std::move(nc.value()));
  }
  for (uint32_t i = 0; i < 2 * kPerTable; ++i) {
    const TableKey a = account(i);
    const store::TableSpec& t = *cat.find(a.table);
    const Account v{kInitial, 0};
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(&v), sizeof v);
    for (uint16_t n = 0; n < kNodes; ++n) {
      if (cat.hosts(n, t, cat.partition_of(t, a.key))) {
        ASSERT_TRUE(nodes[n]->load(t, a.key, bytes).is_ok());
      }
    }
  }
  std::atomic<uint64_t> committed{0}, audits{0}, bad_audits{0}, running{0}, install_errors{0};
  std::atomic<uint64_t> aborts[kAbortKinds] = {};
  std::vector<std::unique_ptr<Replicator>> reps(kNodes * kThreads);
  std::vector<std::unique_ptr<BackupApplier>> apps(kNodes * kThreads);
  r2::WorkerConfig wc;
  wc.coroutines = kCos + 1;
  running = kNodes * kThreads * kCos;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    const size_t wi = w.node() * kThreads + w.thread();
    st::StoreNode& sn = *nodes[w.node()];
    ASSERT_TRUE(sn.register_handlers(w).is_ok());
    LocalRegions lr{[&, n = w.node()](r2::RegionId id) -> std::pair<uint8_t*, size_t> {
                      const r2::Region* r = c->f(n).region(id);
                      return r ? std::make_pair(r->base, r->size)
                               : std::make_pair(nullptr, size_t{0});
                    },
                    /*lock_word=*/{}, /*flush=*/{}, /*drain=*/{}};
    ASSERT_TRUE(register_record_handlers(w, lr).is_ok());
    reps[wi] = std::make_unique<Replicator>(w, rc);
    ASSERT_TRUE(reps[wi]->attach().is_ok());
    apps[wi] =
        std::make_unique<BackupApplier>(w, rc, c->base(w.node(), kLog), [&](const RedoRecord& r) {
          const store::TableSpec* t = cat.find(r.table);
          auto res = t == nullptr
                         ? Result<bool>(internal_error("no table"))
                         : sn.install(*t, r.key, r.version, r.value, r.op == RedoOp::kDelete);
          if (!res.is_ok()) ++install_errors;
        });
    for (uint16_t k = 0; k < kCos; ++k) {
      ASSERT_TRUE(w.spawn([&, wi, k](Co& co) {
                     uint8_t* base =
                         c->base(co.node(), kArenaRegion) + (co.thread() * kCos + k) * per_co;
                     std::span<uint8_t> s(
                         c->base(co.node(), st::kScratchRegion) + scratch.offset(co.thread(), k),
                         scratch.per_coroutine);
                     StoreLocator loc(cat, *caches[co.node()], s, co.node());
                     Engine eng(co, loc, reps[wi].get(), *policy, base, per_co);
                     std::mt19937 rng(static_cast<uint32_t>(wi * 31 + k));
                     const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                     for (int i = 0; i < 150 && std::chrono::steady_clock::now() < until; ++i) {
                       const unsigned dice = rng() % 10;
                       Abort r;
                       int attempt = 0;
                       do {
                         if (dice == 0) {
                           int64_t sum = 0;
                           r = eng.run([&](Txn& tx) {
                             sum = 0;
                             for (Key a = 0; a < kAudit; ++a) {
                               Account v;
                               if (Abort e = tx.get(kHashAcc, a, &v); e != Abort::kNone) return e;
                               sum += v.balance;
                             }
                             return Abort::kNone;
                           });
                           if (r == Abort::kNone) {
                             ++audits;
                             if (sum != kInitial * kAudit) ++bad_audits;
                           }
                         } else {
                           // Inside the audit set, or among all the others (both tables).
                           const bool inside = dice < 3;
                           const uint32_t lo = inside ? 0 : kAudit;
                           const uint32_t span = inside ? kAudit : 2 * kPerTable - kAudit;
                           const uint32_t a = lo + rng() % span;
                           uint32_t b = lo + rng() % span;
                           if (b == a) b = lo + (b - lo + 1) % span;
                           r = eng.run([&](Txn& tx) {
                             return transfer(tx, account(a), account(b), 1 + rng() % 5);
                           });
                         }
                         if (r != Abort::kNone) ++aborts[static_cast<int>(r)];
                         if (r == Abort::kUserAbort) break;
                         if (r != Abort::kNone) {
                           const int spins =
                               1 + static_cast<int>(rng() % (1u << std::min(++attempt, 8)));
                           for (int s2 = 0; s2 < spins; ++s2) co.yield_idle();
                         }
                       } while (r != Abort::kNone && std::chrono::steady_clock::now() < until);
                       if (r == Abort::kNone) ++committed;
                     }
                     --running;
                   }).is_ok());
    }
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(40);
                   auto done = [&] {
                     if (running.load() != 0) return false;
                     uint64_t sent = 0, got = 0;
                     for (auto& r : reps) sent += r ? r->entries() : 0;
                     for (auto& a : apps) got += a ? a->applied() : 0;
                     return got == sent;
                   };
                   while (!done() && std::chrono::steady_clock::now() < until) co.yield_idle();
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out) << preset;
  std::printf("%s: committed %llu, audits %llu, lock-held %llu, version-changed %llu\n",
              preset.c_str(), static_cast<unsigned long long>(committed.load()),
              static_cast<unsigned long long>(audits.load()),
              static_cast<unsigned long long>(aborts[int(Abort::kLockHeld)].load()),
              static_cast<unsigned long long>(aborts[int(Abort::kVersionChanged)].load()));
  EXPECT_EQ(install_errors.load(), 0u);
  EXPECT_GT(committed.load(), 0u);
  EXPECT_EQ(bad_audits.load(), 0u) << preset << ": an audit saw money in flight";
  EXPECT_GT(audits.load(), 0u);
  EXPECT_EQ(aborts[int(Abort::kNodeFailure)].load(), 0u);
  EXPECT_EQ(aborts[int(Abort::kNotSupported)].load(), 0u);
  EXPECT_GT(aborts[int(Abort::kLockHeld)] + aborts[int(Abort::kVersionChanged)], 0u)
      << preset << ": no conflicts: the test proves little";
  // Money conserved at the primaries; every backup equals its primary.
  int64_t total = 0;
  for (uint32_t i = 0; i < 2 * kPerTable; ++i) {
    const TableKey a = account(i);
    const store::TableSpec& t = *cat.find(a.table);
    const store::PartitionReplicas r = cat.replicas_of(t, cat.partition_of(t, a.key), 0);
    Account pv{}, bv{};
    auto p = nodes[r.primary]->get_local(t, a.key, {reinterpret_cast<uint8_t*>(&pv), sizeof pv});
    ASSERT_TRUE(p.is_ok() && *p) << "account " << i;
    total += pv.balance;
    for (uint16_t b = 0; b < r.backup_count; ++b) {
      auto q =
          nodes[r.backups[b]]->get_local(t, a.key, {reinterpret_cast<uint8_t*>(&bv), sizeof bv});
      ASSERT_TRUE(q.is_ok() && *q);
      EXPECT_EQ(bv.balance, pv.balance)
          << preset << ": backup on node " << r.backups[b] << " of account " << i;
    }
  }
  EXPECT_EQ(total, int64_t{2 * kPerTable} * kInitial) << preset << ": money created or destroyed";
}

TEST(StoreEngine, DrtmhBankOverHashAndOrderedTables) {
  run_bank("drtmh");
}
TEST(StoreEngine, FarmBankOverHashAndOrderedTables) {
  run_bank("farm");
}
TEST(StoreEngine, DrtmRBankOverHashAndOrderedTables) {
  run_bank("drtm-r");
}
TEST(StoreEngine, FasstBankOverHashAndOrderedTables) {
  run_bank("fasst");
}

}  // namespace
}  // namespace drtmx::txn
