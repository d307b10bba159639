// The Log phase end to end: coordinators on every node replicate redo
// records to two backups through small log rings (back-pressure, wraps),
// backups apply in the background and reclaim by message; in the end every
// backup holds exactly the last version of every record, and a backup that
// never applies makes log() fail with "log full" instead of hanging.
#include "txn/log/replication.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "r2/support/worker_cluster.h"

namespace drtmx::txn {
namespace {

using r2::Co;

constexpr r2::RegionId kLog = 1, kScratch = 2;

struct Value {
  uint64_t version;
  std::vector<uint8_t> bytes;
  bool operator==(const Value&) const = default;
};
using Copy = std::map<std::pair<uint16_t, uint64_t>, Value>;  // (table, key)

TEST(Replication, BackupsEndWithTheLastVersionOfEveryRecord) {
  constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 4;
  constexpr int kTxns = 400;
  ReplicationConfig cfg;
  cfg.layout = {kNodes, kThreads, 4096};
  cfg.log_region = kLog;
  const size_t img = Replicator::image_bytes(cfg);
  auto c = r2::testing::InProcCluster::make(
      kNodes, kThreads, {{kLog, cfg.layout.region_bytes()}, {kScratch, kThreads * kCos * img}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  // Per worker: what its applier installed; per coroutine: what it logged.
  std::vector<Copy> backup(kNodes * kThreads);
  std::vector<Copy> logged(kNodes * kThreads * kCos);
  std::vector<std::unique_ptr<Replicator>> reps(kNodes * kThreads);
  std::vector<std::unique_ptr<BackupApplier>> apps(kNodes * kThreads);
  std::atomic<uint64_t> failures{0};
  const uint64_t per_node = uint64_t{kThreads} * kCos * kTxns * (kNodes - 1);
  r2::WorkerConfig wc;
  wc.coroutines = kCos + 1;
  auto run = r2::testing::run_workers(
      *c, wc,
      [&](r2::Worker& w) {
        const size_t wi = w.node() * kThreads + w.thread();
        reps[wi] = std::make_unique<Replicator>(w, cfg);
        ASSERT_TRUE(reps[wi]->attach().is_ok());
        apps[wi] = std::make_unique<BackupApplier>(
            w, cfg, c->base(w.node(), kLog), [&backup, wi](const RedoRecord& r) {
              Value& v = backup[wi][{r.table, r.key}];
              if (r.version > v.version) v = {r.version, {r.value.begin(), r.value.end()}};
            });
        for (uint16_t k = 0; k < kCos; ++k) {
          ASSERT_TRUE(w.spawn([&, wi, k](Co& co) {
                         LogBuffers buf;
                         buf.images = c->base(co.node(), kScratch) + (co.thread() * kCos + k) * img;
                         Copy& mine = logged[wi * kCos + k];
                         std::mt19937 rng(static_cast<uint32_t>(wi * 17 + k));
                         std::vector<r2::NodeId> backups;
                         for (r2::NodeId n = 0; n < kNodes; ++n) {
                           if (n != co.node()) backups.push_back(n);
                         }
                         for (int t = 0; t < kTxns; ++t) {
                           std::vector<RedoRecord> recs(1 + rng() % 3);
                           std::vector<std::vector<uint8_t>> vals(recs.size());
                           for (size_t i = 0; i < recs.size(); ++i) {
                             // Keys private to this coroutine; versions grow.
                             recs[i].table = static_cast<uint16_t>(rng() % 2);
                             recs[i].key = (uint64_t{wi * kCos + k} << 32) | (rng() % 16);
                             Value& v = mine[{recs[i].table, recs[i].key}];
                             recs[i].version = ++v.version;
                             vals[i].assign(8 + rng() % 200, static_cast<uint8_t>(rng()));
                             v.bytes = vals[i];
                             recs[i].value = vals[i];
                           }
                           if (!reps[wi]->log(co, backups, recs, buf).is_ok()) ++failures;
                         }
                       }).is_ok());
        }
        // Keep the node alive until its applier has seen every entry for it.
        ASSERT_TRUE(w.spawn([&, wi](Co& co) {
                       // Bounded, and generous: 6 workers on 2 loaded cores under
                       // ASan took more than 30 s.
                       const auto until =
                           std::chrono::steady_clock::now() + std::chrono::seconds(150);
                       const uint16_t node = static_cast<uint16_t>(wi / kThreads);
                       auto total = [&] {
                         uint64_t s = 0;
                         for (uint16_t t = 0; t < kThreads; ++t)
                           s += apps[node * kThreads + t]->applied();
                         return s;
                       };
                       while (total() < per_node && std::chrono::steady_clock::now() < until)
                         co.yield();
                     }).is_ok());
      },
      std::chrono::seconds(180));
  if (run.timed_out) {
    for (size_t i = 0; i < reps.size(); ++i) {
      ADD_FAILURE() << "worker " << i << ": logged " << reps[i]->entries() << " waits "
                    << reps[i]->full_waits() << " applied " << apps[i]->applied() << " corrupt "
                    << apps[i]->corrupt();
      for (size_t b = 0; b < reps[i]->writers().size(); ++b) {
        ADD_FAILURE() << "  writer to " << b << ": tail " << reps[i]->writers()[b].tail()
                      << " head " << reps[i]->writers()[b].head();
      }
    }
  }
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(failures.load(), 0u);
  uint64_t waits = 0;
  for (auto& r : reps) waits += r->full_waits();
  // On shm the coordinators outrun the appliers, so the rings fill and
  // back-pressure runs; over ucx/tcp each log WRITE is a round trip and
  // the appliers mostly keep up (ring full in most runs, not all).
  if (c->f(0).info().backend == "shm") {
    EXPECT_GT(waits, 0u) << "rings never filled: back-pressure went untested";
  }
  for (auto& a : apps) EXPECT_FALSE(a->corrupt());
  // Expected state, and each node's backup copy (merged over its threads).
  for (uint16_t node = 0; node < kNodes; ++node) {
    Copy want, have;
    for (size_t wi = 0; wi < size_t{kNodes} * kThreads; ++wi) {
      if (wi / kThreads == node) continue;  // a node is not its own backup
      for (uint16_t k = 0; k < kCos; ++k) {
        for (auto& [key, v] : logged[wi * kCos + k]) want[key] = v;
      }
    }
    for (uint16_t t = 0; t < kThreads; ++t) {
      for (auto& [key, v] : backup[node * kThreads + t]) have[key] = v;
    }
    ASSERT_EQ(have.size(), want.size()) << "node " << node;
    for (auto& [key, v] : want) {
      auto it = have.find(key);
      ASSERT_NE(it, have.end());
      EXPECT_EQ(it->second.version, v.version);
      EXPECT_EQ(it->second.bytes, v.bytes);
    }
  }
}

// Durable logs: node 0 logs the insert of a key to node 2, node 1 then
// logs its delete there and enough other entries for a release batch.
// Node 0's ring stays below a batch, so its entry would outlive the
// delete's: restart recovery would replay the insert where the key is
// gone and bring it back. Whatever a scan of node 2's rings from their
// persisted heads finds (as recovery does), it never holds the insert
// without the delete.
TEST(Replication, DurableDeleteEntryIsNeverReleasedBeforeItsKeysEarlierChange) {
  constexpr uint16_t kNodes = 3, kThreads = 1, kFiller = 12;
  constexpr uint64_t kKey = 7;
  ReplicationConfig cfg;
  cfg.layout = {kNodes, kThreads, 4096};
  cfg.log_region = kLog;
  cfg.durable = true;
  cfg.persist = {[](const void*, size_t) {}, [] {}};  // in-process: stores are enough
  cfg.unreleased = std::make_shared<UnreleasedChanges>();
  const size_t img = Replicator::image_bytes(cfg);
  auto c = r2::testing::InProcCluster::make(
      kNodes, kThreads, {{kLog, cfg.layout.region_bytes()}, {kScratch, kThreads * 2 * img}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::vector<std::unique_ptr<Replicator>> reps(kNodes);
  std::vector<std::unique_ptr<BackupApplier>> apps(kNodes);
  std::map<uint64_t, uint64_t> copy;  // node 2's copy: key -> last version applied
  std::atomic<int> inserted{0}, deleted{0};
  std::atomic<uint64_t> failures{0};
  const std::vector<r2::NodeId> to2 = {2};
  auto ring_holds = [&](uint16_t from, RedoOp op) {
    const uint8_t* base = c->base(2, kLog);
    const auto* h = reinterpret_cast<const RingHeader*>(base + cfg.layout.header_offset(from, 0));
    std::vector<RedoRecord> recs;
    for (const LogEntry& e : scan_ring(base + cfg.layout.ring_offset(from, 0),
                                       cfg.layout.ring_bytes, h->next_seq == 0 ? 1 : h->next_seq)) {
      if (!decode_redo(e.payload, e.len, &recs)) continue;
      for (const RedoRecord& r : recs) {
        if (r.key == kKey && r.op == op) return true;
      }
    }
    return false;
  };
  bool broken = false;  // a scan found the insert without the delete
  r2::WorkerConfig wc;
  wc.coroutines = 2;
  auto run = r2::testing::run_workers(
      *c, wc,
      [&](r2::Worker& w) {
        const uint16_t n = w.node();
        reps[n] = std::make_unique<Replicator>(w, cfg);
        ASSERT_TRUE(reps[n]->attach().is_ok());
        // In version order per key, as StoreNode::apply_in_order.
        apps[n] = std::make_unique<BackupApplier>(
            w, cfg, c->base(n, kLog), BackupApplier::TryInstall([&, n](const RedoRecord& r) {
              if (n != 2) return true;
              uint64_t& v = copy[r.key];  // the last version applied
              if (r.version != v + 1) return false;
              v = r.version;
              if (r.key == kKey) (r.op == RedoOp::kDelete ? deleted : inserted) = 1;
              return true;
            }));
        if (n == 2) {
          ASSERT_TRUE(w.spawn([&](Co& co) {
                         const auto until =
                             std::chrono::steady_clock::now() + std::chrono::seconds(20);
                         // Until the delete's entry is released (bounded).
                         while (std::chrono::steady_clock::now() < until) {
                           const bool ins = ring_holds(0, RedoOp::kInsert);
                           const bool del = ring_holds(1, RedoOp::kDelete);
                           if (deleted.load() && ins && !del) broken = true;
                           if (deleted.load() && !del) break;
                           co.yield();
                         }
                       }).is_ok());
          return;
        }
        ASSERT_TRUE(w.spawn([&, n](Co& co) {
                       LogBuffers buf;
                       buf.images = c->base(n, kScratch);
                       std::vector<uint8_t> val(200, static_cast<uint8_t>(n));
                       const auto until =
                           std::chrono::steady_clock::now() + std::chrono::seconds(20);
                       if (n == 0) {
                         RedoRecord r;
                         r.op = RedoOp::kInsert;
                         r.key = kKey;
                         r.version = 1;
                         r.value = val;
                         if (!reps[n]->log(co, to2, {&r, 1}, buf).is_ok()) ++failures;
                         return;
                       }
                       while (!inserted.load() && std::chrono::steady_clock::now() < until)
                         co.yield();
                       RedoRecord d;
                       d.op = RedoOp::kDelete;
                       d.key = kKey;
                       d.version = 2;
                       if (!reps[n]->log(co, to2, {&d, 1}, buf).is_ok()) ++failures;
                       for (uint64_t k = 0; k < kFiller; ++k) {
                         RedoRecord r;
                         r.op = RedoOp::kInsert;
                         r.key = 100 + k;
                         r.version = 1;
                         r.value = val;
                         if (!reps[n]->log(co, to2, {&r, 1}, buf).is_ok()) ++failures;
                       }
                     }).is_ok());
      },
      std::chrono::seconds(40));
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(failures.load(), 0u);
  ASSERT_EQ(deleted.load(), 1) << "the delete was never applied";
  EXPECT_FALSE(broken) << "node 2's rings held the insert of key " << kKey
                       << " without its later delete: recovery would bring the key back";
  EXPECT_FALSE(ring_holds(0, RedoOp::kInsert) && !ring_holds(1, RedoOp::kDelete));
  EXPECT_FALSE(ring_holds(1, RedoOp::kDelete)) << "the delete's entry was never released";
}

// Staged installs (BackupApplier::set_staged_prefetch): node 0 logs
// entries of 1-4 records of various sizes to node 1, whose applier stages
// them. Every record is installed with the bytes logged (the staging
// buffer grows and moves while records are added), in a later poll than
// the one that took it, after its first and second prefetch; a record the
// installer refuses once (an earlier change "not arrived") is retried and
// each key's versions are installed in order. The applier is drained only
// once nothing is staged.
TEST(Replication, StagedRecordsAreInstalledAtALaterPollWithTheBytesLogged) {
  constexpr int kTxns = 600;
  ReplicationConfig cfg;
  cfg.layout = {2, 1, 1 << 16};
  cfg.log_region = kLog;
  const size_t img = Replicator::image_bytes(cfg);
  auto c =
      r2::testing::InProcCluster::make(2, 1, {{kLog, cfg.layout.region_bytes()}, {kScratch, img}});
  ASSERT_TRUE(c->error.is_ok());
  std::unique_ptr<Replicator> rep;
  std::unique_ptr<BackupApplier> app;
  Copy logged, installed;
  struct Seen {
    uint64_t first = ~uint64_t{0}, second = ~uint64_t{0};  // the polls of the prefetches
  };
  std::map<std::pair<uint64_t, uint64_t>, Seen> seen;  // (key, version)
  std::atomic<int> bad{0};
  std::atomic<bool> logged_all{false}, drained{false};
  uint64_t refusals = 0, installs = 0;
  std::mt19937 refuse_rng(7);
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    if (w.node() == 1) {
      app = std::make_unique<BackupApplier>(
          w, cfg, c->base(1, kLog), BackupApplier::TryInstall([&](const RedoRecord& r) {
            Seen& s = seen[{r.key, r.version}];
            // A later poll than the take, after both prefetches.
            if (s.first == ~uint64_t{0} || s.second == ~uint64_t{0} || s.second < s.first ||
                app->polls() <= s.first) {
              ++bad;
            }
            Value& v = installed[{r.table, r.key}];
            if (r.version <= v.version) ++bad;            // installed twice
            if (r.version > v.version + 1) return false;  // its key's earlier change waits
            if (refuse_rng() % 5 == 0) {
              ++refusals;
              return false;  // as if an earlier change had not arrived
            }
            v = {r.version, {r.value.begin(), r.value.end()}};
            ++installs;
            return true;
          }));
      app->set_prefetch([&](const RedoRecord& r) {
        Seen& s = seen[{r.key, r.version}];
        if (s.first != ~uint64_t{0}) ++bad;  // once per take
        s.first = app->polls();
      });
      app->set_staged_prefetch([&](const RedoRecord& r) {
        seen[{r.key, r.version}].second = app->polls();
      });
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
                     while (!logged_all.load() && std::chrono::steady_clock::now() < until) {
                       co.yield();
                     }
                     const uint64_t p0 = app->polls();
                     while (!app->drained_since(p0) && std::chrono::steady_clock::now() < until) {
                       co.yield();
                     }
                     drained = app->drained_since(p0);
                   }).is_ok());
      return;
    }
    rep = std::make_unique<Replicator>(w, cfg);
    ASSERT_TRUE(rep->attach().is_ok());
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   LogBuffers buf;
                   buf.images = c->base(0, kScratch);
                   std::mt19937 rng(3);
                   const r2::NodeId backups[1] = {1};
                   for (int t = 0; t < kTxns; ++t) {
                     std::vector<RedoRecord> recs(1 + rng() % 4);
                     std::vector<std::vector<uint8_t>> vals(recs.size());
                     for (size_t i = 0; i < recs.size(); ++i) {
                       recs[i].table = 0;
                       // Distinct keys within an entry; versions grow per key.
                       recs[i].key = (rng() % 8) * 8 + i;
                       Value& v = logged[{0, recs[i].key}];
                       recs[i].version = ++v.version;
                       vals[i].assign(1 + rng() % 700, static_cast<uint8_t>(rng()));
                       v.bytes = vals[i];
                       recs[i].value = vals[i];
                     }
                     ASSERT_TRUE(rep->log(co, backups, recs, buf).is_ok());
                   }
                   logged_all = true;
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
  EXPECT_TRUE(drained.load()) << app->stuck();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(refusals, 0u) << "no record was deferred: the retry went untested";
  EXPECT_EQ(app->applied(), uint64_t{kTxns});
  EXPECT_EQ(installed, logged);
}

TEST(Replication, ABackupThatNeverAppliesMakesLogFullNotAHang) {
  ReplicationConfig cfg;
  cfg.layout = {2, 1, 4096};
  cfg.log_region = kLog;
  cfg.full_timeout_ms = 200;
  const size_t img = Replicator::image_bytes(cfg);
  auto c =
      r2::testing::InProcCluster::make(2, 1, {{kLog, cfg.layout.region_bytes()}, {kScratch, img}});
  ASSERT_TRUE(c->error.is_ok());
  std::unique_ptr<Replicator> rep;
  std::atomic<int> checks{0};
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    if (w.node() != 0) return;  // node 1 runs no applier
    rep = std::make_unique<Replicator>(w, cfg);
    ASSERT_TRUE(rep->attach().is_ok());
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   LogBuffers buf;
                   buf.images = c->base(0, kScratch);
                   std::vector<uint8_t> v(300, 1);
                   RedoRecord r;
                   r.value = v;
                   const r2::NodeId backups[1] = {1};
                   Status s;
                   for (int i = 0; i < 1000 && s.is_ok(); ++i) {
                     r.version = i + 1;
                     s = rep->log(co, backups, std::span<const RedoRecord>(&r, 1), buf);
                   }
                   EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.to_string();
                   EXPECT_NE(s.message().find("log full"), std::string::npos);
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
}

TEST(Replication, LogFullOnOneBackupReservesNothingOnTheOthers) {
  // Backup 2's ring fills (small ring, big entries, no applier) while
  // backup 1's still has room. The transaction that finds backup 2 full
  // must not have reserved an entry on backup 1's ring: an entry reserved
  // and never written is a hole no reader gets past.
  ReplicationConfig cfg;
  cfg.layout = {3, 1, 4096};
  cfg.log_region = kLog;
  cfg.full_timeout_ms = 100;
  const size_t img = Replicator::image_bytes(cfg);
  auto c =
      r2::testing::InProcCluster::make(3, 1, {{kLog, cfg.layout.region_bytes()}, {kScratch, img}});
  ASSERT_TRUE(c->error.is_ok());
  std::unique_ptr<Replicator> rep;
  std::atomic<int> checks{0};
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](r2::Worker& w) {
    if (w.node() != 0) return;  // no appliers anywhere
    rep = std::make_unique<Replicator>(w, cfg);
    ASSERT_TRUE(rep->attach().is_ok());
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   LogBuffers buf;
                   buf.images = c->base(0, kScratch);
                   std::vector<uint8_t> small(8, 1), big(400, 2);
                   RedoRecord to1, to2;
                   to1.value = small;
                   to2.value = big;
                   Status s;
                   uint64_t logged = 0;
                   for (int i = 0; i < 1000 && s.is_ok(); ++i) {
                     to1.version = to2.version = i + 1;
                     const BackupEntry entries[2] = {{1, {&to1, 1}}, {2, {&to2, 1}}};
                     s = rep->log(co, entries, buf);
                     logged += s.is_ok();
                   }
                   EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.to_string();
                   EXPECT_GT(logged, 2u);
                   EXPECT_EQ(rep->writers()[1].entries(), logged);
                   EXPECT_EQ(rep->writers()[2].entries(), logged);
                   EXPECT_TRUE(rep->writers()[1].fits(8));  // backup 1 still had room
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
}

TEST(Replication, RedoPayloadsRoundTripAndMalformedOnesAreRefused) {
  std::vector<uint8_t> a(5, 1), b(16, 2), out;
  RedoRecord in[3];
  in[0] = {1, RedoOp::kUpdate, 10, 3, a};
  in[1] = {2, RedoOp::kInsert, 11, 1, b, /*ts=*/(uint64_t{5} << 40) + 3};
  in[2] = {1, RedoOp::kDelete, 12, 7, {}};
  encode_redo(in, &out);
  std::vector<RedoRecord> back;
  ASSERT_TRUE(decode_redo(out.data(), static_cast<uint32_t>(out.size()), &back));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].key, 11u);
  EXPECT_EQ(back[1].op, RedoOp::kInsert);
  EXPECT_EQ(back[1].ts, (uint64_t{5} << 40) + 3);  // the commit timestamp travels
  EXPECT_EQ(back[0].ts, 0u);
  EXPECT_EQ(back[0].value.size(), 5u);
  EXPECT_TRUE(back[2].value.empty());
  EXPECT_FALSE(decode_redo(out.data(), 10, &back));  // truncated
  out[2] = 9;                                        // bad op
  EXPECT_FALSE(decode_redo(out.data(), static_cast<uint32_t>(out.size()), &back));
}

}  // namespace
}  // namespace drtmx::txn
