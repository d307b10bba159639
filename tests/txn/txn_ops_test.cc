// Inserts, deletes and scans end to end: 3 TxnNodes (thread groups of this
// process joined through a ControlServer), a hash table, an ordered table
// with records (range-partitioned, so scans cross partitions) and a table
// of counters, all 3-way replicated.
//   * every abort reason provoked on purpose through the public API (the
//     "other transaction" is simulated by the owner RPCs a StoreLocator
//     offers, from inside the procedure, so each outcome is deterministic);
//   * an aborted insert leaves no trace, on the primary or any backup;
//   * a queue moved around by producers, consumers and movers on every
//     coroutine for every preset, with audits (read-only scans that must
//     match the counters) and, after finish, counters equal to the rows and
//     every backup equal to its primary.
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "store/record.h"
#include "support/test_cluster_key.h"
#include "support/thread_cluster.h"
#include "txn/mvcc_ops.h"
#include "txn/txn_node.h"

namespace drtmx::txn {
namespace {

constexpr uint16_t kNodes = 3, kThreads = 1;
constexpr TableId kKv = 1, kQueue = 2, kCount = 3;
constexpr Key kRange = 1000;  // kQueue partition p holds [p * kRange, (p + 1) * kRange)

struct Val {
  int64_t a;
  int64_t b;
};

store::Catalog make_catalog() {
  std::vector<store::TableSpec> specs(3);
  specs[0].id = kKv;
  specs[0].name = "kv";
  specs[0].kind = store::TableKind::kHash;
  specs[0].value_size = sizeof(Val);
  specs[0].capacity = 2048;
  specs[0].partitions = kNodes;
  specs[0].scheme = store::PartitionScheme::kFunction;
  specs[0].partition_fn = [](uint64_t k) { return static_cast<uint32_t>(k % kNodes); };
  specs[1].id = kQueue;
  specs[1].name = "queue";
  specs[1].kind = store::TableKind::kOrdered;
  specs[1].value_size = sizeof(Val);
  specs[1].capacity = 2048;
  specs[1].partitions = kNodes;
  specs[1].scheme = store::PartitionScheme::kRange;
  specs[1].range_bounds = {kRange, 2 * kRange};
  specs[2].id = kCount;
  specs[2].name = "counters";
  specs[2].kind = store::TableKind::kHash;
  specs[2].value_size = sizeof(Val);
  specs[2].capacity = 64;
  specs[2].partitions = kNodes;
  specs[2].scheme = store::PartitionScheme::kFunction;
  specs[2].partition_fn = [](uint64_t k) { return static_cast<uint32_t>(k % kNodes); };
  specs[2].deletes = false;  // declared: its keys are never deleted
  auto c = store::Catalog::create(std::move(specs), kNodes, 3);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c.value());
}

// Every key's value on one node (kKv, kQueue, kCount) after finish.
using Snapshot = std::map<std::pair<TableId, Key>, std::pair<int64_t, int64_t>>;

struct ClusterRun {
  std::string preset = "drtmh";
  uint16_t coroutines = 4;
  uint32_t log_ring_bytes = 64 * 1024;
  // Rows to load (every node loads the partitions it hosts).
  std::vector<std::tuple<TableId, Key, Val>> rows;
  std::function<void(TxnContext&)> body;
  // Keys the body changed with owner writes on the primary only (the
  // simulated other transaction): not compared across copies.
  std::set<std::pair<TableId, Key>> primary_only;
  // When set, node 2 launches its workers only once this is true (a node
  // that does not answer yet); bounded by a minute.
  std::atomic<bool>* node2_go = nullptr;
  uint32_t rpc_timeout_ms = 10000;
  // Per-node configuration changes (e.g. MVCC clock skew).
  std::function<void(TxnNodeConfig&, uint16_t node)> tweak;
  // Per node, once started and loaded, before any transaction runs.
  std::function<void(TxnNode&, uint16_t node)> prepare;
};

struct NodeOutcome {
  Status status;
  TxnStats stats;
  Snapshot snap;
  dst::VersionStoreStats versions;       // MVCC presets
  std::vector<uint64_t> queue_range_ts;  // MVCC: per kQueue partition, this node's copy's
};

NodeOutcome run_node(const store::Catalog& cat, const ClusterRun& r, uint16_t node,
                     const std::string& coord, const std::string& cluster) {
  NodeOutcome out;
  TxnNodeConfig cfg;
  cfg.fabric.cluster = cluster;
  cfg.fabric.cluster_key = drtmx::testing::kTestClusterKey;
  cfg.fabric.node = node;
  cfg.fabric.num_nodes = kNodes;
  cfg.fabric.threads = kThreads;
  cfg.control.coordinator = coord;
  cfg.coroutines = r.coroutines;
  cfg.log_ring_bytes = r.log_ring_bytes;
  cfg.rpc_timeout_ms = r.rpc_timeout_ms;
  auto policy = make_policy(r.preset, {}, true);
  if (!policy.is_ok()) {
    out.status = policy.status();
    return out;
  }
  cfg.policy = *policy;
  if (r.tweak) r.tweak(cfg, node);
  auto n = TxnNode::start(cat, cfg);
  if (!n.is_ok()) {
    out.status = n.status();
    return out;
  }
  for (const auto& [t, k, v] : r.rows) {
    const store::TableSpec& spec = *cat.find(t);
    if (!cat.hosts(node, spec, cat.partition_of(spec, k))) continue;
    Status st = (*n)->store().load(spec, k, {reinterpret_cast<const uint8_t*>(&v), sizeof v});
    if (!st.is_ok()) {
      out.status = st;
      return out;
    }
  }
  if (r.prepare) r.prepare(**n, node);
  if (Status st = (*n)->runtime().control().barrier("test.loaded"); !st.is_ok()) {
    out.status = st;
    return out;
  }
  if (node == 2 && r.node2_go != nullptr) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!r.node2_go->load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  }
  if (Status st = (*n)->run(r.body); !st.is_ok()) {
    out.status = st;
    return out;
  }
  out.status = (*n)->finish(std::chrono::seconds(120));
  out.stats = (*n)->stats();
  if (const dst::MvccNode* m = (*n)->mvcc()) {
    out.versions = m->totals();
    for (store::PartitionId p = 0; p < kNodes; ++p) {
      const auto* rt = m->range_ts(kQueue, p);
      out.queue_range_ts.push_back(rt ? rt->load() : 0);
    }
  }
  for (TableId t : {kKv, kQueue, kCount}) {
    const store::TableSpec& spec = *cat.find(t);
    const Key end = t == kQueue ? kNodes * kRange : t == kKv ? 4096 : 64;
    for (Key k = 0; k < end; ++k) {
      if (!cat.hosts(node, spec, cat.partition_of(spec, k))) continue;
      Val v{};
      auto got = (*n)->store().get_local(spec, k, {reinterpret_cast<uint8_t*>(&v), sizeof v});
      if (!got.is_ok()) {
        out.status = got.status();
      } else if (*got) {
        out.snap[{t, k}] = {v.a, v.b};
      }
    }
  }
  return out;
}

// Runs the cluster; every node's outcome. Expects each node's finish() ok
// and every copy equal (3 replicas on 3 nodes: every node has all).
std::vector<NodeOutcome> run_cluster(const store::Catalog& cat, const ClusterRun& r) {
  std::vector<NodeOutcome> outs = testing::run_thread_cluster<NodeOutcome>(
      "txnops", kNodes, [&](uint16_t n, const std::string& coord, const std::string& cluster) {
        return run_node(cat, r, n, coord, cluster);
      });
  if (outs.empty()) return {};
  for (uint16_t n = 0; n < kNodes; ++n) {
    EXPECT_TRUE(outs[n].status.is_ok()) << "node " << n << ": " << outs[n].status.to_string();
  }
  std::vector<Snapshot> cmp;
  for (const NodeOutcome& o : outs) {
    cmp.push_back(o.snap);
    for (const auto& tk : r.primary_only) cmp.back().erase(tk);
  }
  for (uint16_t n = 1; n < kNodes; ++n) {
    EXPECT_EQ(cmp[n].size(), cmp[0].size()) << "node " << n << " key count";
    for (const auto& [tk, v] : cmp[0]) {
      auto it = cmp[n].find(tk);
      if (it == cmp[n].end()) {
        ADD_FAILURE() << "table " << tk.first << " key " << tk.second << " missing on node " << n;
      } else {
        EXPECT_EQ(it->second, v) << "table " << tk.first << " key " << tk.second << " on node "
                                 << n;
      }
    }
  }
  return outs;
}

Val val(int64_t a, int64_t b = 0) {
  return Val{a, b};
}

// --- every abort reason, deterministically ------------------------------------

// A procedure that reads `keys` of kKv, then lets `meanwhile` act as
// another transaction, then returns kNone.
Procedure read_then(std::vector<Key> keys, std::function<void()> meanwhile) {
  return [keys, meanwhile](Txn& tx) {
    for (Key k : keys) {
      Val v;
      if (Abort r = tx.get(kKv, k, &v); r != Abort::kNone) return r;
    }
    meanwhile();
    return Abort::kNone;
  };
}

// The script of one coroutine (node 0, the first coroutine). "Another
// transaction" is simulated with the owner RPCs (TableClient writes,
// reserve / lock with a lock word no coroutine uses), so every outcome is
// deterministic.
// kNodeFailure: node 2 has not launched its workers yet, so the reserve
// RPC of an insert whose primary it is gets no reply within the timeout.
// The request is handled once node 2 runs: the reservation it makes is
// the documented leftover of a lost reply (index_ops.h) and is removed
// here with the engine's lock word, so nothing of it remains.
// The same transaction also inserts a key whose primary (node 1) answers:
// that reservation came back with the failed call, so the abort releases
// it (a primary that answered must never keep a key reserved for a
// transaction that is gone; after a failover it stalled every later insert
// of that key).
void node_failure_script(TxnContext& c, std::atomic<bool>& node2_go) {
  Engine& e = c.engine;
  constexpr Key kOn1 = 799;  // kKv partition 799 % 3 == 1: primary node 1
  constexpr Key kOn2 = 800;  // kKv partition 800 % 3 == 2: primary node 2
  EXPECT_EQ(e.run([](Txn& tx) {
    Val x = val(800);
    if (Abort r = tx.insert(kKv, kOn1, &x); r != Abort::kNone) return r;
    return tx.insert(kKv, kOn2, &x);
  }),
            Abort::kNodeFailure);
  const uint64_t word = e.last_lock_word();  // the failed transaction's
  EXPECT_EQ(e.run([](Txn& tx) {
    Val x;
    return tx.get(kKv, kOn1, &x);
  }),
            Abort::kRecordMissing)
      << "the answered reservation of key " << kOn1 << " was left behind";
  node2_go = true;
  RecordRef ref;
  std::vector<uint8_t> copy(store::record_slot_size(sizeof(Val)));
  bool reserved = false;
  for (int i = 0; i < 1000000 && !reserved; ++i) {
    reserved = c.locator.read(c.co, ReadPath::kRpc, kKv, kOn2, &ref, copy.data()) == Abort::kNone &&
               ref.version == 0;
    if (!reserved) c.co.yield_idle();
  }
  ASSERT_TRUE(reserved) << "node 2 never handled the timed-out reserve request";
  store::RecordHeader h;
  std::memcpy(&h, copy.data(), sizeof h);
  HeldRecord held{kKv, kOn2, ref.addr, h.incarnation};
  EXPECT_TRUE(c.locator.remove_held(c.co, {&held, 1}, word, /*passive=*/false).is_ok());
  EXPECT_EQ(e.run([](Txn& tx) {
    Val x;
    return tx.get(kKv, kOn2, &x);
  }),
            Abort::kRecordMissing);
  EXPECT_GT(e.stats().aborts[static_cast<int>(Abort::kNodeFailure)], 0u);
}

void abort_script(const store::Catalog& cat, TxnContext& c) {
  Engine& e = c.engine;
  StoreLocator& loc = c.locator;
  r2::Co& co = c.co;
  const uint64_t foreign = store::lock_word(kNodes + 5, 0, 0);
  store::tables::TableClient& owner = loc.client(ReadPath::kRpc);
  const store::TableSpec& kv = *cat.find(kKv);
  const store::TableSpec& queue = *cat.find(kQueue);
  auto bytes = [](const Val& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&v), sizeof v);
  };
  Val v{};
  // With passive ACK the releases and deletes of the previous transaction
  // may still be in flight. Each scripted transaction first waits until its
  // predecessor's passive messages were handled (Co::wait_passive_acks), so
  // what it finds does not depend on their timing; `run` also retries a
  // kLockHeld (as a caller would), `once` does not (for the provocations
  // that expect kLockHeld).
  auto once = [&](const Procedure& p, Kind k = Kind::kReadWrite) {
    EXPECT_TRUE(co.wait_passive_acks().is_ok());
    return e.run(p, k);
  };
  auto run = [&](const Procedure& p, Kind k = Kind::kReadWrite) {
    Abort r = Abort::kNone;
    for (int i = 0; i < 100000; ++i) {
      r = once(p, k);
      if (r != Abort::kLockHeld) break;
      co.yield_idle();
    }
    return r;
  };

  // kNone: insert, read own insert, remove, scan with own writes overlaid.
  EXPECT_EQ(run([&](Txn& tx) {
              Val x = val(700, 1);
              if (Abort r = tx.insert(kKv, 700, &x); r != Abort::kNone) return r;
              Val y;
              if (Abort r = tx.get(kKv, 700, &y); r != Abort::kNone) return r;
              EXPECT_EQ(y.a, 700);
              x = val(1700, 2);
              if (Abort r = tx.insert(kQueue, 1700, &x); r != Abort::kNone) return r;
              if (Abort r = tx.remove(kQueue, 1100); r != Abort::kNone) return r;
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 1000, 1999, 100, &rows); r != Abort::kNone) return r;
              return Abort::kNone;
            }),
            Abort::kDuplicateInsert);  // 1700 was loaded: nothing of it happened
  EXPECT_EQ(run([&](Txn& tx) {
              Val x = val(1750, 2);
              if (Abort r = tx.insert(kQueue, 1750, &x); r != Abort::kNone) return r;
              if (Abort r = tx.remove(kQueue, 1100); r != Abort::kNone) return r;
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 1000, 1999, 100, &rows); r != Abort::kNone) return r;
              std::vector<Key> want = {1000, 1200, 1300, 1400, 1500, 1600, 1700, 1750, 1800, 1900};
              EXPECT_EQ(rows.keys, want);
              if (rows.keys.size() == want.size()) {
                Val r7;
                std::memcpy(&r7, rows.values.data() + 7 * sizeof(Val), sizeof r7);
                EXPECT_EQ(r7.a, 1750);
              }
              Val y;
              EXPECT_EQ(tx.get(kQueue, 1100, &y), Abort::kRecordMissing);
              return Abort::kNone;
            }),
            Abort::kNone);
  EXPECT_EQ(run([&](Txn& tx) {
              Txn::Rows rows;
              // Across the partition boundary at 2000.
              if (Abort r = tx.scan(kQueue, 1650, 2250, 6, &rows); r != Abort::kNone) return r;
              std::vector<Key> want = {1700, 1750, 1800, 1900, 2000, 2100};
              EXPECT_EQ(rows.keys, want);
              return Abort::kNone;
            }),
            Abort::kNone);

  // kRecordMissing.
  EXPECT_EQ(run(read_then({999}, [] {})), Abort::kRecordMissing);
  EXPECT_EQ(run([](Txn& tx) { return tx.remove(kQueue, 1100); }), Abort::kRecordMissing);
  // kUserAbort.
  EXPECT_EQ(run([](Txn& tx) { return tx.user_abort(); }), Abort::kUserAbort);
  EXPECT_EQ(e.abort_table(), Engine::kNoTable);
  // kNotSupported: a delete in a table declared without deletes, a scan of
  // a hash table, an unknown table, writes in a read-only transaction.
  EXPECT_EQ(run([](Txn& tx) { return tx.remove(kCount, 1); }), Abort::kNotSupported);
  EXPECT_EQ(run([](Txn& tx) {
              Txn::Rows rows;
              return tx.scan(kKv, 0, 10, 5, &rows);
            }),
            Abort::kNotSupported);
  EXPECT_EQ(run(  // also as a read-only transaction (a snapshot under MVCC)
                [](Txn& tx) {
                  Txn::Rows rows;
                  return tx.scan(kKv, 0, 10, 5, &rows);
                },
                Kind::kReadOnly),
            Abort::kNotSupported);
  EXPECT_EQ(run([](Txn& tx) {
              Val x{};
              return tx.insert(77, 1, &x);
            }),
            Abort::kNotSupported);
  EXPECT_EQ(run(
                [](Txn& tx) {
                  Val x{};
                  if (Abort r = tx.get(kKv, 1, &x); r != Abort::kNone) return r;
                  return tx.put(kKv, 1, &x);
                },
                Kind::kReadOnly),
            Abort::kNotSupported);
  // kDuplicateInsert: at Validate (the key exists at its primary), and at
  // once when this transaction read the key.
  EXPECT_EQ(run([](Txn& tx) {
              Val x = val(5);
              return tx.insert(kKv, 5, &x);
            }),
            Abort::kDuplicateInsert);
  EXPECT_EQ(run([](Txn& tx) {
              Val x;
              if (Abort r = tx.get(kQueue, 200, &x); r != Abort::kNone) return r;
              return tx.insert(kQueue, 200, &x);
            }),
            Abort::kDuplicateInsert);

  // An aborted insert leaves no trace: 600 and 1600 are reserved in the same
  // round as the duplicate 5, then dropped.
  EXPECT_EQ(run([](Txn& tx) {
              Val x = val(1);
              if (Abort r = tx.insert(kKv, 600, &x); r != Abort::kNone) return r;
              if (Abort r = tx.insert(kQueue, 1600 + 1, &x); r != Abort::kNone) return r;
              return tx.insert(kKv, 5, &x);
            }),
            Abort::kDuplicateInsert);
  EXPECT_EQ(run(read_then({600}, [] {})), Abort::kRecordMissing);
  EXPECT_EQ(run([](Txn& tx) {
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 1600, 1699, 10, &rows); r != Abort::kNone) return r;
              EXPECT_EQ(rows.keys, std::vector<Key>{1600});
              return Abort::kNone;
            }),
            Abort::kNone);

  // kLockHeld: a key reserved by another transaction's insert (insert,
  // get and scan of it), and a committed record locked by another.
  Reservation rs[2];
  rs[0].table = kKv;
  rs[0].key = 500;
  rs[1].table = kQueue;
  rs[1].key = 2550;
  ASSERT_TRUE(loc.reserve(co, rs, foreign).is_ok());
  ASSERT_EQ(rs[0].result, Abort::kNone);
  ASSERT_EQ(rs[1].result, Abort::kNone);
  // Each abort names the table it was found on (Engine::abort_table).
  EXPECT_EQ(once([](Txn& tx) {
              Val x = val(1);
              return tx.insert(kKv, 500, &x);
            }),
            Abort::kLockHeld);
  EXPECT_EQ(e.abort_table(), kKv);
  EXPECT_EQ(once(read_then({500}, [] {})), Abort::kLockHeld);
  EXPECT_EQ(e.abort_table(), kKv);
  EXPECT_EQ(once([](Txn& tx) {
              Val x;
              return tx.get(kQueue, 2550, &x);
            }),
            Abort::kLockHeld);
  EXPECT_EQ(e.abort_table(), kQueue);
  EXPECT_EQ(once([](Txn& tx) {
              Txn::Rows rows;
              return tx.scan(kQueue, 2500, 2600, 10, &rows);
            }),
            Abort::kLockHeld);
  EXPECT_EQ(e.abort_table(), kQueue);
  // A scan that ran before the reservation appeared sees it at Validate.
  HeldRecord late_held;
  EXPECT_EQ(run([&](Txn& tx) {
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 2300, 2450, 10, &rows); r != Abort::kNone) return r;
              Reservation late;
              late.table = kQueue;
              late.key = 2420;
              EXPECT_TRUE(loc.reserve(co, {&late, 1}, foreign).is_ok());
              EXPECT_EQ(late.result, Abort::kNone);
              late_held = {kQueue, 2420, late.addr, late.incarnation};
              return Abort::kNone;
            }),
            Abort::kVersionChanged);
  EXPECT_EQ(e.abort_table(), kQueue);  // the phantom, found by the re-scan
  {
    HeldRecord held[3] = {{kKv, 500, rs[0].addr, rs[0].incarnation},
                          {kQueue, 2550, rs[1].addr, rs[1].incarnation},
                          late_held};
    ASSERT_TRUE(loc.remove_held(co, held, foreign, /*passive=*/false).is_ok());
  }
  EXPECT_EQ(run(read_then({500}, [] {})), Abort::kRecordMissing);

  RecordRef ref;
  std::vector<uint8_t> copy(store::record_slot_size(sizeof(Val)));
  ASSERT_EQ(loc.read(co, ReadPath::kRpc, kKv, 7, &ref, copy.data()), Abort::kNone);
  std::vector<ItemResult> res;
  ASSERT_TRUE(rpc_lock(co, {&ref, 1}, foreign, &res).is_ok());
  ASSERT_TRUE(res[0].locked);
  EXPECT_EQ(once([](Txn& tx) {
              Val x;
              if (Abort r = tx.get_for_update(kKv, 7, &x); r != Abort::kNone) return r;
              ++x.b;
              return tx.put(kKv, 7, &x);
            }),
            Abort::kLockHeld);
  EXPECT_EQ(e.abort_table(), kKv);  // the lock at Validate
  EXPECT_EQ(once([](Txn& tx) { return tx.remove(kKv, 7); }), Abort::kLockHeld);
  // A read-only transaction of two keys finds 7 locked at validation. (A
  // snapshot — MVCC — would wait for the lock instead: see the snapshot
  // tests.)
  const bool mvcc = c.engine.policy().mvcc != Mvcc::kOff;
  if (!mvcc) {
    EXPECT_EQ(run(read_then({7, 8}, [] {}), Kind::kReadOnly), Abort::kVersionChanged);
  }
  ASSERT_TRUE(rpc_unlock(co, {&ref, 1}, foreign, /*passive=*/false).is_ok());

  // kVersionChanged: a record read is updated by another before commit
  // (read-only and read-write); a single-key read-only transaction commits
  // without validation.
  auto bump = [&](Key k) {
    Val x = val(static_cast<int64_t>(k), 42);
    EXPECT_TRUE(owner.update(co, kv, k, bytes(x)).is_ok());
  };
  // A snapshot (MVCC) never validates: it commits what it read.
  EXPECT_EQ(run(read_then({9, 10}, [&] { bump(9); }), Kind::kReadOnly),
            mvcc ? Abort::kNone : Abort::kVersionChanged);
  EXPECT_EQ(run([&](Txn& tx) {
              Val x;
              if (Abort r = tx.get(kKv, 9, &x); r != Abort::kNone) return r;
              if (Abort r = tx.get_for_update(kKv, 10, &x); r != Abort::kNone) return r;
              bump(9);
              return tx.put(kKv, 10, &x);
            }),
            Abort::kVersionChanged);
  EXPECT_EQ(run(read_then({11}, [&] { bump(11); }), Kind::kReadOnly), Abort::kNone);

  // Phantoms: a scanned range receives an insert, or loses a row, before
  // commit; an insert beyond the range a limited scan covered does not
  // matter.
  EXPECT_EQ(run([&](Txn& tx) {
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 0, 2999, 1000, &rows); r != Abort::kNone) return r;
              Val x = val(1234);
              EXPECT_TRUE(owner.insert(co, queue, 1234, bytes(x)).is_ok());
              return Abort::kNone;
            }),
            Abort::kVersionChanged);
  EXPECT_EQ(run([&](Txn& tx) {
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 1200, 1250, 10, &rows); r != Abort::kNone) return r;
              EXPECT_EQ(rows.keys, (std::vector<Key>{1200, 1234}));
              EXPECT_TRUE(owner.remove(co, queue, 1234).is_ok());
              return Abort::kNone;
            }),
            Abort::kVersionChanged);
  EXPECT_EQ(run([&](Txn& tx) {
              Txn::Rows rows;
              if (Abort r = tx.scan(kQueue, 0, 2999, 2, &rows); r != Abort::kNone) return r;
              EXPECT_EQ(rows.keys, (std::vector<Key>{0, 100}));
              Val x = val(2525);
              EXPECT_TRUE(owner.insert(co, queue, 2525, bytes(x)).is_ok());
              return Abort::kNone;
            }),
            Abort::kNone);

  // kLogFull: a transaction whose redo entry can never fit the log ring
  // (ring of 4 KiB); its reservations are dropped.
  EXPECT_EQ(run([](Txn& tx) {
              for (Key k = 3000; k < 3200; ++k) {
                Val x = val(static_cast<int64_t>(k));
                if (Abort r = tx.insert(kKv, k, &x); r != Abort::kNone) return r;
              }
              return Abort::kNone;
            }),
            Abort::kLogFull);
  EXPECT_EQ(run(read_then({3000}, [] {})), Abort::kRecordMissing);
  EXPECT_EQ(run(read_then({3199}, [] {})), Abort::kRecordMissing);

  // Committed inserts and deletes replace what was there.
  EXPECT_EQ(run([](Txn& tx) {
              Val x = val(600, 6);
              if (Abort r = tx.insert(kKv, 600, &x); r != Abort::kNone) return r;
              if (Abort r = tx.insert(kQueue, 1601, &x); r != Abort::kNone) return r;
              if (Abort r = tx.remove(kKv, 3); r != Abort::kNone) return r;
              // Inserted and removed again: nothing reaches the store.
              if (Abort r = tx.insert(kKv, 601, &x); r != Abort::kNone) return r;
              return tx.remove(kKv, 601);
            }),
            Abort::kNone);
  EXPECT_EQ(run(read_then({600}, [] {})), Abort::kNone);
  EXPECT_EQ(run(read_then({601}, [] {})), Abort::kRecordMissing);
  EXPECT_EQ(run(read_then({3}, [] {})), Abort::kRecordMissing);
  v = {};
  EXPECT_EQ(run([&](Txn& tx) { return tx.get(kQueue, 1601, &v); }), Abort::kNone);
  EXPECT_EQ(v.b, 6);

  // Malformed index requests get an error reply (the owner never touches
  // memory for them); an unknown table is a per-key refusal.
  {
    r2::RpcBuffer reply;
    const uint8_t short_req[5] = {1, 2, 3, 4, 5};
    EXPECT_FALSE(
        co.call({1, co.thread()}, kRpcReserve, short_req, sizeof short_req, reply).is_ok());
    uint64_t bad_count[2] = {foreign, 7};  // header says 7 items, none follow
    EXPECT_FALSE(
        co.call({1, co.thread()}, kRpcReserve, bad_count, sizeof bad_count, reply).is_ok());
    EXPECT_FALSE(
        co.call({2, co.thread()}, kRpcRemoveHeld, bad_count, sizeof bad_count, reply).is_ok());
    Reservation unknown;
    unknown.table = 77;
    unknown.key = 1;
    unknown.primary = 1;
    EXPECT_TRUE(rpc_reserve(co, {&unknown, 1}, foreign).is_ok());
    EXPECT_EQ(unknown.result, Abort::kNotSupported);
    // Removing a record not held with that lock word is refused.
    RecordRef r8;
    ASSERT_EQ(loc.read(co, ReadPath::kRpc, kKv, 8, &r8, copy.data()), Abort::kNone);
    HeldRecord not_held{kKv, 8, r8.addr, 0};
    EXPECT_FALSE(loc.remove_held(co, {&not_held, 1}, foreign, /*passive=*/false).is_ok());
    EXPECT_EQ(run(read_then({8}, [] {})), Abort::kNone);
    if (c.engine.policy().mvcc != Mvcc::kOff) {
      // The MVCC requests too: truncated, a count larger than the items,
      // an address that is no record slot, a scan of a hash table.
      for (uint16_t id : {kRpcMvccLock, kRpcMvccCheck, kRpcSnapshotGet, kRpcSnapshotScan,
                          kRpcRangeClaim, kRpcMvccRemove}) {
        EXPECT_FALSE(co.call({1, co.thread()}, id, short_req, sizeof short_req, reply).is_ok())
            << id;
        uint64_t many[3] = {foreign, 1, 9};  // header: 9 items, none follow
        EXPECT_FALSE(co.call({1, co.thread()}, id, many, sizeof many, reply).is_ok()) << id;
      }
      RecordRef off_slot = r8;
      off_slot.addr.offset += 8;  // inside a record, not at a slot
      std::vector<MvccLockResult> lr;
      EXPECT_FALSE(rpc_mvcc_lock(co, {&off_slot, 1}, foreign, &lr).is_ok());
      std::vector<Key> keys;
      std::vector<uint8_t> values;
      bool exhausted = false;
      ReadWait w;
      EXPECT_FALSE(rpc_snapshot_scan(co, loc.primary(kKv, 8), kKv, 0, 0, 100, 10, sizeof(Val), 1,
                                     dst::SnapshotMode::kDst, &keys, &values, &exhausted, &w)
                       .is_ok());
      // A scan or a claim of a partition the table does not have.
      auto no_part =
          rpc_snapshot_scan(co, loc.primary(kQueue, 0), kQueue, 1000, 0, 100, 10, sizeof(Val), 1,
                            dst::SnapshotMode::kDst, &keys, &values, &exhausted, &w);
      ASSERT_FALSE(no_part.is_ok());
      EXPECT_NE(no_part.message().find("no partition 1000"), std::string::npos)
          << no_part.message();
      const PartitionClaim bad_claim{loc.primary(kQueue, 0), kQueue, 1000};
      auto claimed = rpc_range_claim(co, {&bad_claim, 1}, 1);
      ASSERT_FALSE(claimed.is_ok());
      EXPECT_NE(claimed.message().find("no partition 1000"), std::string::npos)
          << claimed.message();
      // A snapshot read whose mode flags name no mode.
      uint64_t no_mode[3] = {0, 1, 0};  // word, ts 1, 0 items, flags 0
      auto bad = co.call({1, co.thread()}, kRpcSnapshotGet, no_mode, sizeof no_mode, reply);
      ASSERT_FALSE(bad.is_ok());
      EXPECT_NE(bad.message().find("mode"), std::string::npos) << bad.message();
      EXPECT_EQ(run(read_then({8}, [] {})), Abort::kNone);  // nothing was touched
    }
  }

  const TxnStats& s = e.stats();
  for (Abort a :
       {Abort::kLockHeld, Abort::kVersionChanged, Abort::kRecordMissing, Abort::kDuplicateInsert,
        Abort::kLogFull, Abort::kUserAbort, Abort::kNotSupported}) {
    EXPECT_GT(s.aborts[static_cast<int>(a)], 0u) << abort_name(a);
  }
}

std::vector<std::tuple<TableId, Key, Val>> script_rows() {
  std::vector<std::tuple<TableId, Key, Val>> rows;
  for (Key k = 0; k < 30; ++k) rows.emplace_back(kKv, k, val(static_cast<int64_t>(k)));
  for (Key k = 0; k < kNodes * kRange; k += 100) {
    rows.emplace_back(kQueue, k, val(static_cast<int64_t>(k)));
  }
  return rows;
}

class TxnOps : public ::testing::TestWithParam<std::string> {};

TEST_P(TxnOps, EveryAbortReasonOnPurposeAndAbortedInsertsLeaveNoTrace) {
  const store::Catalog cat = make_catalog();
  ClusterRun r;
  r.preset = GetParam();
  r.coroutines = 1;
  r.log_ring_bytes = 4096;
  r.rows = script_rows();
  std::atomic<bool> node2_go{false};
  r.node2_go = &node2_go;
  r.rpc_timeout_ms = 1000;  // bounds the kNodeFailure provocation
  r.body = [&](TxnContext& c) {
    if (c.index != 0) return;
    node_failure_script(c, node2_go);
    node2_go = true;  // also when the script above failed early
    abort_script(cat, c);
  };
  r.primary_only = {{kKv, 9}, {kKv, 11}, {kQueue, 2525}};
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  const Snapshot& s = outs[0].snap;
  // No trace of the aborted or released inserts, on any copy (compared above).
  for (Key k : {500, 3000, 3199, 601, 799, 800}) EXPECT_EQ(s.count({kKv, k}), 0u) << k;
  for (Key k : {2550, 2420, 1234}) EXPECT_EQ(s.count({kQueue, k}), 0u) << k;
  EXPECT_EQ(s.count({kKv, 600}), 1u);
  EXPECT_EQ(s.count({kQueue, 1601}), 1u);
  EXPECT_EQ(s.count({kQueue, 1750}), 1u);
  // Inserted by the simulated writer on the primary of partition 2 only.
  EXPECT_EQ(outs[2].snap.count({kQueue, 2525}), 1u);
  EXPECT_EQ(s.count({kQueue, 1100}), 0u);
  EXPECT_EQ(s.count({kKv, 3}), 0u);
}

// --- a queue under concurrency --------------------------------------------------

// Counter p (kCount key p) is the number of kQueue rows in partition p.
// Producers insert a row into a partition, consumers delete the first row
// at or after a random key, movers move a row to another partition, audits
// (read-only) scan a partition and compare with its counter.
struct QueueCounts {
  std::atomic<uint64_t> audits{0}, bad_audits{0}, produced{0}, consumed{0}, moved{0};
};

void queue_body(TxnContext& c, QueueCounts& q, int iterations) {
  std::mt19937_64 rng(c.index * 104729 + 7);
  Engine& e = c.engine;
  for (int i = 0; i < iterations; ++i) {
    const uint32_t op = rng() % 20;
    const Key p = rng() % kNodes, dst = (p + 1 + rng() % (kNodes - 1)) % kNodes;
    const Key start = p * kRange + rng() % kRange;
    if (op < 7) {  // produce
      const Key k = p * kRange + rng() % kRange;
      Abort r = e.run_with_retry([&](Txn& tx) {
        Val n, row = val(static_cast<int64_t>(k), c.index);
        if (Abort a = tx.get_for_update(kCount, p, &n); a != Abort::kNone) return a;
        if (Abort a = tx.insert(kQueue, k, &row); a != Abort::kNone) return a;
        ++n.a;
        return tx.put(kCount, p, &n);
      });
      q.produced += r == Abort::kNone;
    } else if (op < 14) {  // consume
      Abort r = e.run_with_retry([&](Txn& tx) {
        Txn::Rows rows;
        if (Abort a = tx.scan(kQueue, start, p * kRange + kRange - 1, 1, &rows); a != Abort::kNone)
          return a;
        if (rows.keys.empty()) {
          if (Abort a = tx.scan(kQueue, p * kRange, p * kRange + kRange - 1, 1, &rows);
              a != Abort::kNone)
            return a;
        }
        if (rows.keys.empty()) return tx.user_abort();
        Val n;
        if (Abort a = tx.get_for_update(kCount, p, &n); a != Abort::kNone) return a;
        if (Abort a = tx.remove(kQueue, rows.keys[0]); a != Abort::kNone) return a;
        --n.a;
        return tx.put(kCount, p, &n);
      });
      q.consumed += r == Abort::kNone;
    } else if (op < 17) {  // move
      Abort r = e.run_with_retry([&](Txn& tx) {
        Txn::Rows rows;
        if (Abort a = tx.scan(kQueue, start, p * kRange + kRange - 1, 1, &rows); a != Abort::kNone)
          return a;
        if (rows.keys.empty()) return tx.user_abort();
        const Key from = rows.keys[0], to = dst * kRange + from % kRange;
        Val row, n1, n2;
        std::memcpy(&row, rows.values.data(), sizeof row);
        if (Abort a = tx.get_for_update(kCount, p, &n1); a != Abort::kNone) return a;
        if (Abort a = tx.get_for_update(kCount, dst, &n2); a != Abort::kNone) return a;
        if (Abort a = tx.remove(kQueue, from); a != Abort::kNone) return a;
        row.a = static_cast<int64_t>(to);
        if (Abort a = tx.insert(kQueue, to, &row); a != Abort::kNone) return a;
        --n1.a;
        ++n2.a;
        if (Abort a = tx.put(kCount, p, &n1); a != Abort::kNone) return a;
        return tx.put(kCount, dst, &n2);
      });
      q.moved += r == Abort::kNone;
    } else {  // audit
      bool bad = false;
      Abort r = e.run_with_retry(
          [&](Txn& tx) {
            bad = false;
            Txn::Rows rows;
            if (Abort a = tx.scan(kQueue, p * kRange, p * kRange + kRange - 1, 4 * kRange, &rows);
                a != Abort::kNone)
              return a;
            Val n;
            if (Abort a = tx.get(kCount, p, &n); a != Abort::kNone) return a;
            bad = n.a != static_cast<int64_t>(rows.keys.size());
            for (size_t j = 0; j < rows.keys.size(); ++j) {
              Val row;
              std::memcpy(&row, rows.values.data() + j * sizeof row, sizeof row);
              bad |= row.a != static_cast<int64_t>(rows.keys[j]);
            }
            return Abort::kNone;
          },
          {}, Kind::kReadOnly);
      if (r == Abort::kNone) {
        ++q.audits;
        q.bad_audits += bad;
      }
    }
  }
}

TEST_P(TxnOps, QueueOfInsertsDeletesAndScansBalancesOnEveryCopy) {
  const store::Catalog cat = make_catalog();
  ClusterRun r;
  r.preset = GetParam();
  r.coroutines = 4;
  constexpr Key kInitialPerPartition = 20;
  for (Key p = 0; p < kNodes; ++p) {
    r.rows.emplace_back(kCount, p, val(kInitialPerPartition));
    for (Key i = 0; i < kInitialPerPartition; ++i) {
      const Key k = p * kRange + i * 37;
      r.rows.emplace_back(kQueue, k, val(static_cast<int64_t>(k), -1));
    }
  }
  QueueCounts q;
  r.body = [&](TxnContext& c) { queue_body(c, q, 60); };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  EXPECT_EQ(q.bad_audits.load(), 0u) << "an audit saw a counter disagree with its rows";
  EXPECT_GT(q.audits.load(), 0u);
  EXPECT_GT(q.produced.load(), 0u);
  EXPECT_GT(q.consumed.load(), 0u);
  EXPECT_GT(q.moved.load(), 0u);
  const Snapshot& s = outs[0].snap;
  for (Key p = 0; p < kNodes; ++p) {
    int64_t rows = 0;
    for (const auto& [tk, v] : s) {
      if (tk.first != kQueue || tk.second / kRange != p) continue;
      ++rows;
      EXPECT_EQ(v.first, static_cast<int64_t>(tk.second));
    }
    ASSERT_EQ(s.count({kCount, p}), 1u);
    EXPECT_EQ(s.at({kCount, p}).first, rows) << "partition " << p;
  }
  TxnStats total;
  for (const NodeOutcome& o : outs) {
    total.committed += o.stats.committed;
    for (int i = 0; i < kAbortKinds; ++i) total.aborts[i] += o.stats.aborts[i];
  }
  std::string aborts;
  for (int i = 1; i < kAbortKinds; ++i) {
    aborts += std::string(" ") + abort_name(static_cast<Abort>(i)) + "=" +
              std::to_string(total.aborts[i]);
  }
  std::printf("[%s] committed %llu, produced %llu consumed %llu moved %llu audits %llu;%s\n",
              GetParam().c_str(), static_cast<unsigned long long>(total.committed),
              static_cast<unsigned long long>(q.produced.load()),
              static_cast<unsigned long long>(q.consumed.load()),
              static_cast<unsigned long long>(q.moved.load()),
              static_cast<unsigned long long>(q.audits.load()), aborts.c_str());
}

// --- speculative outstanding reads ------------------------------------------------

// How a transaction reads a batch of keys before it gets them.
enum class Batch { kReadAhead, kPrefetch };
Abort read_batch(Txn& tx, Batch how, std::span<const TableKey> keys, bool for_update) {
  return how == Batch::kReadAhead ? tx.read_ahead(keys, for_update) : tx.prefetch(keys, for_update);
}

// Read-only: the sum of Val::a over `keys`, read as one batch first.
Abort audit_sum(Txn& tx, Batch how, std::span<const TableKey> keys, int64_t* sum) {
  *sum = 0;
  if (Abort x = read_batch(tx, how, keys, false); x != Abort::kNone) return x;
  for (const TableKey& k : keys) {
    Val v;
    if (Abort x = tx.get(k.table, k.key, &v); x != Abort::kNone) return x;
    *sum += v.a;
  }
  return Abort::kNone;
}

// Moves amount() (called once the batch is in flight: work that overlaps
// it) from a to b, both read as one batch for update; kUserAbort when a
// has less.
Abort batch_transfer(Txn& tx, Batch how, TableKey a, TableKey b,
                     const std::function<int64_t()>& amount) {
  const TableKey pair[] = {a, b};
  if (Abort x = read_batch(tx, how, pair, true); x != Abort::kNone) return x;
  const int64_t n = amount();
  Val x, y;
  if (Abort z = tx.get(a.table, a.key, &x); z != Abort::kNone) return z;
  if (Abort z = tx.get(b.table, b.key, &y); z != Abort::kNone) return z;
  if (x.a < n) return tx.user_abort();
  x.a -= n;
  y.a += n;
  if (Abort z = tx.put(a.table, a.key, &x); z != Abort::kNone) return z;
  return tx.put(b.table, b.key, &y);
}

// read_ahead() + get() returns what get() alone returns: values, a missing
// key, an uncommitted insert; then transfers and audits that read ahead on
// every coroutine keep the total and the copies equal.
TEST_P(TxnOps, ReadAheadGivesTheSameResultsAsGets) {
  const store::Catalog cat = make_catalog();
  ClusterRun r;
  r.preset = GetParam();
  r.coroutines = 4;
  constexpr Key kKeys = 30;
  for (Key k = 0; k < kKeys; ++k) r.rows.emplace_back(kKv, k, val(static_cast<int64_t>(k)));
  std::atomic<uint64_t> compared{0}, bad_audits{0}, audits{0}, transfers{0};
  std::atomic<int> scripted_done{0};
  r.body = [&](TxnContext& c) {
    Engine& e = c.engine;
    std::vector<TableKey> all;
    for (Key k = 0; k < kKeys; ++k) all.push_back({kKv, k});
    // 1. One coroutine, nothing else writing yet.
    if (c.index == 0) {
      std::vector<Val> sync(kKeys), async(kKeys);
      // Warm the location cache, then compare both ways.
      for (int pass = 0; pass < 2; ++pass) {
        EXPECT_EQ(e.run(
                      [&](Txn& tx) {
                        for (Key k = 0; k < kKeys; ++k) {
                          if (Abort a = tx.get(kKv, k, &sync[k]); a != Abort::kNone) return a;
                        }
                        return Abort::kNone;
                      },
                      Kind::kReadOnly),
                  Abort::kNone);
      }
      EXPECT_EQ(e.run(
                    [&](Txn& tx) {
                      if (Abort a = tx.read_ahead(all, false); a != Abort::kNone) return a;
                      for (Key k = kKeys; k-- > 0;) {
                        if (Abort a = tx.get(kKv, k, &async[k]); a != Abort::kNone) return a;
                      }
                      return Abort::kNone;
                    },
                    Kind::kReadOnly),
                Abort::kNone);
      for (Key k = 0; k < kKeys; ++k) {
        EXPECT_EQ(async[k].a, sync[k].a) << k;
        EXPECT_EQ(async[k].a, static_cast<int64_t>(k)) << k;
        compared += async[k].a == sync[k].a;
      }
      // A missing key: the same abort either way.
      const TableKey missing[] = {{kKv, 999}};
      EXPECT_EQ(e.run([&](Txn& tx) {
        Val x;
        return tx.get(kKv, 999, &x);
      }),
                Abort::kRecordMissing);
      EXPECT_EQ(e.run([&](Txn& tx) {
        if (Abort a = tx.read_ahead(missing, false); a != Abort::kNone) return a;
        Val x;
        return tx.get(kKv, 999, &x);
      }),
                Abort::kRecordMissing);
      // An uncommitted insert (reserved by a lock word no coroutine uses),
      // whose address is in the cache: kLockHeld either way.
      Reservation rs;
      rs.table = kKv;
      rs.key = 500;
      ASSERT_TRUE(c.locator.reserve(c.co, {&rs, 1}, store::lock_word(kNodes + 5, 0, 0)).is_ok());
      ASSERT_EQ(rs.result, Abort::kNone);
      const TableKey reserved[] = {{kKv, 500}};
      EXPECT_EQ(e.run([&](Txn& tx) {
        Val x;
        return tx.get(kKv, 500, &x);
      }),
                Abort::kLockHeld);
      EXPECT_EQ(e.run([&](Txn& tx) {
        if (Abort a = tx.read_ahead(reserved, false); a != Abort::kNone) return a;
        Val x;
        return tx.get(kKv, 500, &x);
      }),
                Abort::kLockHeld);
      HeldRecord h{kKv, 500, rs.addr, rs.incarnation};
      EXPECT_TRUE(
          c.locator.remove_held(c.co, {&h, 1}, store::lock_word(kNodes + 5, 0, 0), false).is_ok());
      scripted_done = 1;
    }
    while (scripted_done.load() == 0) c.co.yield_idle();
    // 2. Everyone: transfers and audits that read ahead.
    std::mt19937_64 rng(c.index * 31 + 5);
    for (int i = 0; i < 40; ++i) {
      const Key a = rng() % kKeys, b = (a + 1 + rng() % (kKeys - 1)) % kKeys;
      if (rng() % 4 == 0) {
        int64_t sum = 0;
        Abort res =
            e.run_with_retry([&](Txn& tx) { return audit_sum(tx, Batch::kReadAhead, all, &sum); },
                             {}, Kind::kReadOnly);
        if (res == Abort::kNone) {
          ++audits;
          bad_audits += sum != static_cast<int64_t>(kKeys * (kKeys - 1) / 2);
        }
        continue;
      }
      Abort res = e.run_with_retry([&](Txn& tx) {
        return batch_transfer(tx, Batch::kReadAhead, {kKv, a}, {kKv, b}, [&] {
          // Work that overlaps the READs in flight.
          uint64_t h = a * 0x9E3779B97F4A7C15ull;
          for (int s = 0; s < 64; ++s) h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
          return 1 + static_cast<int64_t>(h % 3);
        });
      });
      transfers += res == Abort::kNone;
    }
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  EXPECT_EQ(compared.load(), kKeys);
  EXPECT_EQ(bad_audits.load(), 0u);
  EXPECT_GT(audits.load(), 0u);
  EXPECT_GT(transfers.load(), 0u);
  int64_t total = 0;
  for (Key k = 0; k < kKeys; ++k) total += outs[0].snap.at({kKv, k}).first;
  EXPECT_EQ(total, static_cast<int64_t>(kKeys * (kKeys - 1) / 2));
  uint64_t ahead = 0, direct = 0, mvcc_direct = 0, writes_direct = 0;
  for (const NodeOutcome& o : outs) ahead += o.stats.reads_ahead;
  for (const NodeOutcome& o : outs) direct += o.stats.reads_ahead_direct;
  for (const NodeOutcome& o : outs) mvcc_direct += o.stats.mvcc_steps_direct;
  for (const NodeOutcome& o : outs) writes_direct += o.stats.writes_direct;
  // Presets that commit by one-sided WRITEs store their own records.
  if (GetParam() == "farm" || GetParam() == "fasst") {
    EXPECT_EQ(writes_direct, 0u);
  } else {
    EXPECT_GT(writes_direct, 0u);
  }
  // One-sided MVCC locks and checks its own node's records itself.
  if (GetParam() == "drtmx" || GetParam() == "drtmx-gts") {
    EXPECT_GT(mvcc_direct, 0u);
  } else {
    EXPECT_EQ(mvcc_direct, 0u);
  }
  // Presets whose Execute path uses the location cache post READs ahead
  // (other nodes' records) and copy their own node's records themselves;
  // the others read when the value is needed.
  if (GetParam() == "drtmh" || GetParam() == "drtm-r" || GetParam() == "drtmx" ||
      GetParam() == "drtmx-gts") {
    EXPECT_GT(ahead, 0u);
    EXPECT_GT(direct, 0u);
  } else {
    EXPECT_EQ(ahead, 0u);
    EXPECT_EQ(direct, 0u);
  }
  std::printf(
      "[%s] read ahead: %llu READs posted without waiting, %llu own records copied, %llu "
      "MVCC steps and %llu write-backs on own records, %llu transfers\n",
      GetParam().c_str(), static_cast<unsigned long long>(ahead),
      static_cast<unsigned long long>(direct), static_cast<unsigned long long>(mvcc_direct),
      static_cast<unsigned long long>(writes_direct),
      static_cast<unsigned long long>(transfers.load()));
}

// prefetch() of keys of an ordered table with records (all partitions)
// gives what get() gives — values, and kRecordMissing for an absent key —
// and under concurrent transfers among those rows, audits that prefetch
// them all always see the same total; afterwards the total holds on every
// copy.
TEST_P(TxnOps, PrefetchOfOrderedRowsGivesTheSameResultsAsGets) {
  const store::Catalog cat = make_catalog();
  ClusterRun r;
  r.preset = GetParam();
  r.coroutines = 4;
  std::vector<Key> keys;
  for (Key k = 3; k < 3 * kRange; k += 37) keys.push_back(k);  // every partition
  for (Key k : keys) r.rows.emplace_back(kQueue, k, val(100));
  const int64_t kTotal = 100 * static_cast<int64_t>(keys.size());
  std::atomic<uint64_t> compared{0}, bad_audits{0}, audits{0}, transfers{0}, own_records{0};
  std::atomic<int> scripted_done{0};
  r.body = [&](TxnContext& c) {
    Engine& e = c.engine;
    std::vector<TableKey> all;
    for (Key k : keys) all.push_back({kQueue, k});
    if (c.index == 0) {
      std::vector<Val> one(keys.size()), many(keys.size());
      EXPECT_EQ(e.run(
                    [&](Txn& tx) {
                      for (size_t i = 0; i < keys.size(); ++i) {
                        if (Abort a = tx.get(kQueue, keys[i], &one[i]); a != Abort::kNone) return a;
                      }
                      return Abort::kNone;
                    },
                    Kind::kReadOnly),
                Abort::kNone);
      EXPECT_EQ(e.run(
                    [&](Txn& tx) {
                      if (Abort a = tx.prefetch(all, false); a != Abort::kNone) return a;
                      for (size_t i = keys.size(); i-- > 0;) {
                        if (Abort a = tx.get(kQueue, keys[i], &many[i]); a != Abort::kNone) {
                          return a;
                        }
                      }
                      return Abort::kNone;
                    },
                    Kind::kReadOnly),
                Abort::kNone);
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ(many[i].a, one[i].a) << keys[i];
        EXPECT_EQ(many[i].a, 100) << keys[i];
        compared += many[i].a == one[i].a;
      }
      std::vector<TableKey> with_missing(all);
      with_missing.push_back({kQueue, 4});  // absent (rows are 3 mod 37)
      EXPECT_EQ(e.run([&](Txn& tx) { return tx.prefetch(with_missing, false); }, Kind::kReadOnly),
                Abort::kRecordMissing);
      scripted_done = 1;
    }
    while (scripted_done.load() == 0) c.co.yield_idle();
    std::mt19937_64 rng(c.index * 17 + 3);
    for (int i = 0; i < 40; ++i) {
      if (rng() % 3 == 0) {
        int64_t sum = 0;
        Abort res =
            e.run_with_retry([&](Txn& tx) { return audit_sum(tx, Batch::kPrefetch, all, &sum); },
                             {}, Kind::kReadOnly);
        if (res == Abort::kNone) {
          ++audits;
          bad_audits += sum != kTotal;
        }
        continue;
      }
      const Key a = keys[rng() % keys.size()], b = keys[rng() % keys.size()];
      if (a == b) continue;
      Abort res = e.run_with_retry([&](Txn& tx) {
        return batch_transfer(tx, Batch::kPrefetch, {kQueue, a}, {kQueue, b},
                              [] { return int64_t{3}; });
      });
      transfers += res == Abort::kNone;
    }
    for (ReadPath p :
         {ReadPath::kRpc, ReadPath::kOneSided, ReadPath::kOneSidedCached, ReadPath::kHybrid}) {
      own_records += c.locator.client(p).stats().records_direct;
    }
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  EXPECT_EQ(compared.load(), keys.size());
  EXPECT_EQ(bad_audits.load(), 0u);
  EXPECT_GT(audits.load(), 0u);
  EXPECT_GT(transfers.load(), 0u);
  for (const NodeOutcome& o : outs) {
    int64_t total = 0;
    for (Key k : keys) total += o.snap.at({kQueue, k}).first;
    EXPECT_EQ(total, kTotal);
  }
  // Records of a coordinator's own partitions are copied from its memory,
  // not READ (TableClient::own_record); the audits above, under concurrent
  // transfers, saw only whole copies.
  EXPECT_GT(own_records.load(), 0u);
  std::printf("[%s] ordered records copied on their own node: %llu\n", GetParam().c_str(),
              static_cast<unsigned long long>(own_records.load()));
}

// --- one field of many rows ---------------------------------------------------

constexpr Field kFieldA{sizeof(Val), offsetof(Val, a), sizeof(int64_t)};
constexpr Field kFieldB{sizeof(Val), offsetof(Val, b), sizeof(int64_t)};

// get_fields() returns what get() returns (each node's own rows and the
// others', read-only and read-write), refuses fields outside the row and
// a wrong row size, reports a missing key; and audits that read one field
// of every row under concurrent transfers always see the same total. A
// snapshot reads its own node's rows by field; nothing else does.
TEST_P(TxnOps, GetFieldsGivesWhatGetsGive) {
  const store::Catalog cat = make_catalog();
  ClusterRun r;
  r.preset = GetParam();
  r.coroutines = 4;
  constexpr Key kKeys = 30;
  constexpr int64_t kTotal = kKeys * (kKeys - 1) / 2;
  for (Key k = 0; k < kKeys; ++k) {
    r.rows.emplace_back(kKv, k, val(static_cast<int64_t>(k), 1000 + static_cast<int64_t>(k)));
  }
  std::atomic<uint64_t> compared{0}, bad_audits{0}, audits{0}, transfers{0};
  std::atomic<int> scripted_done{0};
  r.body = [&](TxnContext& c) {
    Engine& e = c.engine;
    std::vector<TableKey> all;
    for (Key k = kKeys; k-- > 0;) all.push_back({kKv, k});  // not in key order
    if (c.index == 0) {
      for (const Kind kind : {Kind::kReadOnly, Kind::kReadWrite}) {
        std::vector<int64_t> fields(kKeys), twice(kKeys);
        std::vector<Val> rows(kKeys);
        EXPECT_EQ(
            e.run(
                [&](Txn& tx) {
                  if (Abort a = tx.get_fields(all, kFieldB, fields.data()); a != Abort::kNone) {
                    return a;
                  }
                  // Again, and then whole rows: the same snapshot.
                  if (Abort a = tx.get_fields(all, kFieldB, twice.data()); a != Abort::kNone) {
                    return a;
                  }
                  for (Key k = 0; k < kKeys; ++k) {
                    if (Abort a = tx.get(kKv, k, &rows[k]); a != Abort::kNone) return a;
                  }
                  return Abort::kNone;
                },
                kind),
            Abort::kNone);
        for (size_t i = 0; i < all.size(); ++i) {
          const Key k = all[i].key;
          EXPECT_EQ(fields[i], 1000 + static_cast<int64_t>(k)) << k;
          EXPECT_EQ(twice[i], fields[i]) << k;
          EXPECT_EQ(rows[k].b, fields[i]) << k;
          compared += fields[i] == rows[k].b;
        }
      }
      int64_t out[2];
      const TableKey some[] = {{kKv, 1}, {kKv, 2}};
      const TableKey with_missing[] = {{kKv, 1}, {kKv, 999}};
      for (const Kind kind : {Kind::kReadOnly, Kind::kReadWrite}) {
        EXPECT_EQ(e.run([&](Txn& tx) { return tx.get_fields(with_missing, kFieldA, out); }, kind),
                  Abort::kRecordMissing);
        const Field outside{sizeof(Val), 12, 8};
        EXPECT_EQ(e.run([&](Txn& tx) { return tx.get_fields(some, outside, out); }, kind),
                  Abort::kNotSupported);
        const Field wrong_row{sizeof(Val) + 8, 0, 8};
        EXPECT_EQ(e.run([&](Txn& tx) { return tx.get_fields(some, wrong_row, out); }, kind),
                  Abort::kNotSupported);
        const Field empty{sizeof(Val), 0, 0};
        EXPECT_EQ(e.run([&](Txn& tx) { return tx.get_fields(some, empty, out); }, kind),
                  Abort::kNotSupported);
      }
      scripted_done = 1;
    }
    while (scripted_done.load() == 0) c.co.yield_idle();
    std::mt19937_64 rng(c.index * 17 + 3);
    std::vector<int64_t> a_fields(kKeys);
    for (int i = 0; i < 40; ++i) {
      const Key a = rng() % kKeys, b = (a + 1 + rng() % (kKeys - 1)) % kKeys;
      if (rng() % 4 == 0) {
        const Kind kind = rng() % 2 == 0 ? Kind::kReadOnly : Kind::kReadWrite;
        Abort res = e.run_with_retry(
            [&](Txn& tx) { return tx.get_fields(all, kFieldA, a_fields.data()); }, {}, kind);
        if (res == Abort::kNone) {
          int64_t sum = 0;
          for (const int64_t v : a_fields) sum += v;
          ++audits;
          bad_audits += sum != kTotal;
        }
        continue;
      }
      Abort res = e.run_with_retry([&](Txn& tx) {
        return batch_transfer(tx, Batch::kPrefetch, {kKv, a}, {kKv, b}, [] { return 1; });
      });
      transfers += res == Abort::kNone;
    }
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  EXPECT_EQ(compared.load(), 2 * kKeys);
  EXPECT_EQ(bad_audits.load(), 0u);
  EXPECT_GT(audits.load(), 0u);
  EXPECT_GT(transfers.load(), 0u);
  int64_t total = 0;
  for (Key k = 0; k < kKeys; ++k) total += outs[0].snap.at({kKv, k}).first;
  EXPECT_EQ(total, kTotal);
  uint64_t by_field = 0;
  for (const NodeOutcome& o : outs) by_field += o.stats.snapshot_field_reads;
  if (GetParam() == "drtmx" || GetParam() == "drtmx-gts") {
    EXPECT_GT(by_field, 0u);
  } else {
    EXPECT_EQ(by_field, 0u);
  }
  std::printf("[%s] get_fields: %llu audits, %llu transfers, %llu rows read by field\n",
              GetParam().c_str(), static_cast<unsigned long long>(audits.load()),
              static_cast<unsigned long long>(transfers.load()),
              static_cast<unsigned long long>(by_field));
}

INSTANTIATE_TEST_SUITE_P(Presets, TxnOps,
                         ::testing::Values("farm", "drtm-r", "fasst", "drtmh", "drtmx",
                                           "drtmx-gts"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

// --- snapshots (MVCC) ------------------------------------------------------------

// The classic read-only anomaly, forced: a snapshot reads B; then TX1
// writes B and TX2 reads B (TX2 depends on TX1) and writes A; then the
// snapshot reads A. It must not see TX2's A without TX1's B. The reader's
// node clock runs a second ahead (skew), so its read timestamp is above
// the writers' clocks: only DEP_READ's raise of B's ts pushes TX1 (and so
// TX2) above it. With the raise skipped (an unsafe test switch) the same
// script shows the anomaly — the check below can fail.
// Yields until `step` reaches `s` (20 s at most): the scripted tests' steps.
void wait_step(r2::Co& co, const std::atomic<int>& step, int s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (step.load() < s && std::chrono::steady_clock::now() < until) co.yield_idle();
}

// A snapshot that reads `first`, raises `step` to at least `reached`,
// waits for step `resume`, then reads `second` (the scripted tests' reader);
// the values into *v1 and *v2, the rows read one-sided into *onesided.
Abort read_two_with_pause(TxnContext& c, std::atomic<int>& step, Key first, int64_t* v1,
                          int reached, int resume, Key second, int64_t* v2, uint64_t* onesided,
                          uint64_t* direct = nullptr) {
  const uint64_t onesided0 = c.engine.stats().snapshot_reads_onesided;
  const uint64_t direct0 = c.engine.stats().snapshot_reads_direct;
  const Abort a = c.engine.run(
      [&](Txn& tx) {
        Val v;
        if (Abort x = tx.get(kKv, first, &v); x != Abort::kNone) return x;
        *v1 = v.a;
        step = std::max(step.load(), reached);
        wait_step(c.co, step, resume);
        if (Abort x = tx.get(kKv, second, &v); x != Abort::kNone) return x;
        *v2 = v.a;
        return Abort::kNone;
      },
      Kind::kReadOnly);
  *onesided = c.engine.stats().snapshot_reads_onesided - onesided0;
  if (direct != nullptr) *direct = c.engine.stats().snapshot_reads_direct - direct0;
  return a;
}

// A coordinator's first read of a row whose primary is its own node finds
// the row in the node's table (a GET's bucket walk, HashTable::locate for
// a prefetch) and fills the location cache: no owner RPC. Other nodes'
// rows still take the RPC while the cache lacks them (the hybrid read
// path), and without the local shortcuts so do the node's own.
struct ColdReads {
  std::atomic<uint64_t> own_keys{0}, own_fallbacks{0}, other_keys{0}, other_fallbacks{0};
};

void cold_reads(bool shortcuts, ColdReads* out) {
  const store::Catalog cat = make_catalog();
  ClusterRun r;
  r.coroutines = 2;
  constexpr Key kKeys = 60;
  for (Key k = 0; k < kKeys; ++k) r.rows.emplace_back(kKv, k, val(static_cast<int64_t>(k)));
  r.tweak = [&](TxnNodeConfig& cfg, uint16_t) { cfg.local_shortcuts = shortcuts; };
  r.body = [&](TxnContext& c) {
    if (c.index % (kThreads * r.coroutines) != 0) return;  // one coroutine per node
    const uint16_t node = static_cast<uint16_t>(c.index / (kThreads * r.coroutines));
    auto rpcs = [&] {
      uint64_t n = 0;
      for (ReadPath p :
           {ReadPath::kRpc, ReadPath::kOneSided, ReadPath::kOneSidedCached, ReadPath::kHybrid}) {
        n += c.locator.client(p).stats().rpcs;
      }
      return n;
    };
    for (Key k = 0; k < kKeys; ++k) {
      // Even keys by get, odd ones by prefetch (StoreLocator::address_of).
      const uint64_t before = rpcs();
      Val v{};
      const TableKey tk{kKv, k};
      ASSERT_EQ(c.engine.run(
                    [&](Txn& tx) {
                      if (k % 2 == 1) {
                        if (Abort a = tx.prefetch({&tk, 1}, false); a != Abort::kNone) return a;
                      }
                      return tx.get(kKv, k, &v);
                    },
                    Kind::kReadOnly),
                Abort::kNone);
      EXPECT_EQ(v.a, static_cast<int64_t>(k));
      const bool own = c.locator.primary(kKv, k) == node;
      (own ? out->own_keys : out->other_keys)++;
      if (rpcs() != before) (own ? out->own_fallbacks : out->other_fallbacks)++;
    }
  };
  run_cluster(cat, r);
}

TEST(TxnOpsLocal, ColdReadsOfTheNodesOwnRowsNeedNoOwnerRpc) {
  ColdReads on;
  cold_reads(true, &on);
  EXPECT_EQ(on.own_keys.load(), 60u);  // each of the 3 nodes is primary of 20
  EXPECT_EQ(on.own_fallbacks.load(), 0u);
  EXPECT_EQ(on.other_fallbacks.load(), on.other_keys.load());
  ColdReads off;
  cold_reads(false, &off);
  EXPECT_EQ(off.own_fallbacks.load(), off.own_keys.load());
}

struct AnomalyOutcome {
  int64_t a = -1, b = -1;
  Abort reader = Abort::kNotSupported;
  uint64_t onesided_reads = 0;  // the snapshot's rows read by one-sided ops
  uint64_t direct_reads = 0;    // ... in place on the reader's node
};

// `warm`: the reader's node reads A and B in a read-write transaction
// first, so its location cache knows their addresses and the snapshot
// reads them by one-sided ops (snapshot_onesided.cc) — otherwise by the
// DEP_READ RPC. `table61`: Validate and Commit by RPC (the thesis's
// Table 6-1) instead of one-sided. `own_b`: B's primary is the reader's
// node, which reads it in place (snapshot_direct.cc).
AnomalyOutcome run_anomaly(bool skip_raise, const std::string& preset = "drtmx", bool warm = false,
                           bool table61 = false, bool own_b = false) {
  const store::Catalog cat = make_catalog();
  // Primaries on nodes 2 and 1 (kKv partition = key % 3), away from the
  // reader's skewed clock on node 0: a writer's lock there raises ts to the
  // primary's clock, which would otherwise lift TX1 above the snapshot.
  // With own_b B is on node 0: the one-sided lock of the drtmx preset
  // raises no ts to the primary's clock (not with table61).
  constexpr Key kA = 20;
  const Key kB = own_b ? 21 : 22;
  ClusterRun r;
  r.preset = preset;
  r.coroutines = 1;
  r.rows = {{kKv, kA, val(0)}, {kKv, kB, val(0)}};
  r.tweak = [skip_raise, table61, preset](TxnNodeConfig& cfg, uint16_t node) {
    if (node == 0) cfg.mvcc.clock_skew_us = 1000000;
    cfg.mvcc.unsafe_skip_read_raise = skip_raise;
    if (table61) {
      cfg.policy =
          *make_policy(preset, {{"lock", "rpc"}, {"validate", "rpc"}, {"commit", "rpc"}}, true);
    }
  };
  std::atomic<int> step{0};  // 1: B read; 2: writers done
  AnomalyOutcome out;
  r.body = [&](TxnContext& c) {
    if (c.index == 0) {  // node 0: the snapshot
      if (warm) {
        const Abort w = c.engine.run_with_retry([&](Txn& tx) {
          Val v;
          if (Abort x = tx.get(kKv, kA, &v); x != Abort::kNone) return x;
          return tx.get(kKv, kB, &v);
        });
        EXPECT_EQ(w, Abort::kNone);
      }
      out.reader = read_two_with_pause(c, step, kB, &out.b, 1, 2, kA, &out.a, &out.onesided_reads,
                                       &out.direct_reads);
      step = std::max(step.load(), 2);  // also when the reader failed early
    } else if (c.index == kThreads) {   // node 1: TX1 then TX2
      wait_step(c.co, step, 1);
      const Abort t1 = c.engine.run_with_retry([&](Txn& tx) {
        Val v;
        if (Abort x = tx.get_for_update(kKv, kB, &v); x != Abort::kNone) return x;
        v.a = 1;
        return tx.put(kKv, kB, &v);
      });
      const Abort t2 = c.engine.run_with_retry([&](Txn& tx) {
        Val b, a;
        if (Abort x = tx.get(kKv, kB, &b); x != Abort::kNone) return x;
        if (Abort x = tx.get_for_update(kKv, kA, &a); x != Abort::kNone) return x;
        a.a = b.a;  // TX2 depends on TX1
        return tx.put(kKv, kA, &a);
      });
      EXPECT_EQ(t1, Abort::kNone);
      EXPECT_EQ(t2, Abort::kNone);
      step = 2;
    }
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  EXPECT_EQ(outs.size(), kNodes);
  if (!outs.empty()) {
    EXPECT_EQ(outs[0].snap.at({kKv, kA}).first, 1);  // both writers committed
    EXPECT_EQ(outs[0].snap.at({kKv, kB}).first, 1);
  }
  return out;
}

TEST(Snapshots, AReadOnlyTransactionNeverSeesAWriteWithoutTheOneItDependsOn) {
  const AnomalyOutcome o = run_anomaly(/*skip_raise=*/false);
  ASSERT_EQ(o.reader, Abort::kNone);  // a snapshot never aborts
  EXPECT_EQ(o.b, 0);                  // read before TX1
  EXPECT_EQ(o.a, 0) << "the snapshot saw TX2's A but not TX1's B";
}

// GTS: the snapshot reads at the oracle's StableTS taken at its start; the
// writers' timestamps come later from the same counter.
TEST(Snapshots, GtsSnapshotsDoNotSeeTheAnomalyEither) {
  const AnomalyOutcome o = run_anomaly(/*skip_raise=*/false, "drtmx-gts");
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.b, 0);
  EXPECT_EQ(o.a, 0) << "the snapshot saw TX2's A but not TX1's B";
}

TEST(Snapshots, WithoutTheReadTimestampRaiseTheAnomalyHappens) {
  const AnomalyOutcome o = run_anomaly(/*skip_raise=*/true);
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.b, 0);
  EXPECT_EQ(o.a, 1) << "the mutation should let the snapshot see TX2 without TX1";
}

// The same three with the rows read by one-sided ops: the raise is a CAS
// from the coordinator, and without it the anomaly happens there too.
TEST(Snapshots, OneSidedSnapshotReadsNeverSeeTheAnomaly) {
  for (const char* preset : {"drtmx", "drtmx-gts"}) {
    SCOPED_TRACE(preset);
    const AnomalyOutcome o = run_anomaly(/*skip_raise=*/false, preset, /*warm=*/true);
    ASSERT_EQ(o.reader, Abort::kNone);
    EXPECT_GT(o.onesided_reads, 0u) << "the snapshot read nothing one-sided";
    EXPECT_EQ(o.b, 0);
    EXPECT_EQ(o.a, 0) << "the snapshot saw TX2's A but not TX1's B";
  }
}

// The same with B on the reader's node, read in place (the DEP_READ
// handler's read_at run by the coordinator): its raise is what keeps TX1
// above the snapshot, and without it the anomaly shows.
TEST(Snapshots, InPlaceSnapshotReadsNeverSeeTheAnomaly) {
  for (const char* preset : {"drtmx", "drtmx-gts"}) {
    SCOPED_TRACE(preset);
    const AnomalyOutcome o = run_anomaly(false, preset, /*warm=*/false, false, /*own_b=*/true);
    ASSERT_EQ(o.reader, Abort::kNone);
    EXPECT_EQ(o.direct_reads, 1u) << "B was not read in place";
    EXPECT_EQ(o.b, 0);
    EXPECT_EQ(o.a, 0) << "the snapshot saw TX2's A but not TX1's B";
  }
}

TEST(Snapshots, InPlaceSnapshotReadsWithoutTheRaiseShowTheAnomaly) {
  const AnomalyOutcome o = run_anomaly(true, "drtmx", /*warm=*/false, false, /*own_b=*/true);
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.direct_reads, 1u);
  EXPECT_EQ(o.b, 0);
  EXPECT_EQ(o.a, 1) << "the mutation should let the snapshot see TX2 without TX1";
}

TEST(Snapshots, OneSidedSnapshotReadsWithoutTheRaiseShowTheAnomaly) {
  const AnomalyOutcome o = run_anomaly(/*skip_raise=*/true, "drtmx", /*warm=*/true);
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.onesided_reads, 2u);
  EXPECT_EQ(o.b, 0);
  EXPECT_EQ(o.a, 1) << "the mutation should let the snapshot see TX2 without TX1";
}

// A snapshot that meets a locked row reads past the lock only when the
// holder's published timestamp is at or above its read timestamp (the
// holder then commits above it). H, on node 1, locks A and B (and reads C,
// so its read checks publish the holder entries), then stops before its
// Log phase until the snapshot on node 0 has read A, or 300 ms. The
// snapshot reads A while H holds it, then — once H committed — B.
//   `reader_ahead`: node 0's clock runs a second ahead: the snapshot reads
//   above H's commit, so it must wait for H and see both of H's writes
//   (reading past A's lock would show B = 1 with A = 0).
//   Otherwise node 1's clock runs ahead: H commits above the snapshot,
//   whose read of A goes past the lock, one-sided and without waiting, and
//   which sees neither write.
struct HolderOutcome {
  int64_t a = -1, b = -1;
  Abort reader = Abort::kNotSupported;
  uint64_t onesided_reads = 0, blocked_reads = 0;
};

HolderOutcome run_holder(bool reader_ahead) {
  const store::Catalog cat = make_catalog();
  constexpr Key kA = 20, kB = 22, kC = 23;  // primaries on nodes 2, 1, 2
  ClusterRun r;
  r.preset = "drtmx";
  r.coroutines = 1;
  r.rows = {{kKv, kA, val(0)}, {kKv, kB, val(0)}, {kKv, kC, val(0)}};
  std::atomic<int> step{0};        // 1: H holds its locks; 2: A read; 3: H committed
  std::atomic<bool> armed{false};  // H's next Validate stops
  r.tweak = [&, reader_ahead](TxnNodeConfig& cfg, uint16_t node) {
    if (node == (reader_ahead ? 0 : 1)) cfg.mvcc.clock_skew_us = 1000000;
    if (node != 1) return;
    cfg.crash_hook = [&](CrashPoint p) {
      if (p != CrashPoint::kValidated || !armed.exchange(false)) return;
      step = 1;
      // Blocks node 1's only thread: the snapshot needs nothing from it.
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
      while (step.load() < 2 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    };
  };
  HolderOutcome out;
  r.body = [&](TxnContext& c) {
    if (c.index == 0) {  // node 0: the snapshot, its location cache warm
      const Abort w = c.engine.run_with_retry([&](Txn& tx) {
        Val v;
        if (Abort x = tx.get(kKv, kA, &v); x != Abort::kNone) return x;
        return tx.get(kKv, kB, &v);
      });
      EXPECT_EQ(w, Abort::kNone);
      armed = true;
      wait_step(c.co, step, 1);
      out.reader = read_two_with_pause(c, step, kA, &out.a, 2, 3, kB, &out.b, &out.onesided_reads);
      out.blocked_reads = c.engine.last_read_wait().blocked_reads;
    } else if (c.index == kThreads) {  // node 1: H
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!armed.load() && std::chrono::steady_clock::now() < until) c.co.yield_idle();
      const Abort h = c.engine.run_with_retry([&](Txn& tx) {
        Val a, b, cv;
        if (Abort x = tx.get(kKv, kC, &cv); x != Abort::kNone) return x;
        if (Abort x = tx.get_for_update(kKv, kA, &a); x != Abort::kNone) return x;
        if (Abort x = tx.get_for_update(kKv, kB, &b); x != Abort::kNone) return x;
        a.a = b.a = 1;
        if (Abort x = tx.put(kKv, kA, &a); x != Abort::kNone) return x;
        return tx.put(kKv, kB, &b);
      });
      EXPECT_EQ(h, Abort::kNone);
      step = 3;
    }
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  EXPECT_EQ(outs.size(), kNodes);
  return out;
}

TEST(Snapshots, ALockHolderThatMayCommitBelowTheSnapshotIsWaitedFor) {
  const HolderOutcome o = run_holder(/*reader_ahead=*/true);
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.a, 1) << "the snapshot read past a lock whose holder committed below it";
  EXPECT_EQ(o.b, 1);
}

TEST(Snapshots, ALockHolderThatCommitsAboveTheSnapshotIsReadPastOneSided) {
  const HolderOutcome o = run_holder(/*reader_ahead=*/false);
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.a, 0);
  EXPECT_EQ(o.b, 0);
  EXPECT_GE(o.onesided_reads, 1u) << "A was not read past its lock one-sided";
  EXPECT_EQ(o.blocked_reads, 0u) << "the snapshot waited for a holder that commits above it";
}

// Table 6-1 (Validate and Commit by RPC, snapshots by DEP_READ RPC).
TEST(Snapshots, Table61FormNeverSeesTheAnomalyAndTheMutationDoes) {
  const AnomalyOutcome o = run_anomaly(false, "drtmx", /*warm=*/true, /*table61=*/true);
  ASSERT_EQ(o.reader, Abort::kNone);
  EXPECT_EQ(o.onesided_reads, 0u);
  EXPECT_EQ(o.a, 0) << "the snapshot saw TX2's A but not TX1's B";
  const AnomalyOutcome m = run_anomaly(true, "drtmx", /*warm=*/true, /*table61=*/true);
  ASSERT_EQ(m.reader, Abort::kNone);
  EXPECT_EQ(m.a, 1) << "the mutation should let the snapshot see TX2 without TX1";
}

// Long snapshots while writers keep moving money between keys and GC runs
// every 200 us with small version stores (so versions are reclaimed, and
// room is refused, all the time): every snapshot sees the constant total,
// never aborts, and reads stay at versions no GC reclaimed (a reclaimed
// read is an error reply: the snapshot would fail).
class MvccSnapshots : public ::testing::TestWithParam<std::string> {};

TEST_P(MvccSnapshots, LongSnapshotsReadConsistentTotalsWhileGcReclaims) {
  const store::Catalog cat = make_catalog();
  constexpr Key kKeys = 24;
  ClusterRun r;
  r.preset = GetParam();
  r.coroutines = 4;
  for (Key k = 0; k < kKeys; ++k) r.rows.push_back({kKv, k, val(100)});
  r.tweak = [](TxnNodeConfig& cfg, uint16_t) {
    cfg.floor_every_us = 200;
    cfg.mvcc.min_versions = 64;
    cfg.mvcc.versions_pct = 0.001;
  };
  std::atomic<uint64_t> snapshots{0}, bad{0}, failed{0}, transfers{0};
  r.body = [&](TxnContext& c) {
    std::mt19937_64 rng(c.index * 7919 + 1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    if (c.index % 4 == 0) {  // a reader per node
      for (int i = 0; i < 200 && std::chrono::steady_clock::now() < until; ++i) {
        int64_t sum = 0;
        const Abort a = c.engine.run(
            [&](Txn& tx) {
              sum = 0;
              for (Key k = 0; k < kKeys; ++k) {
                Val v;
                if (Abort x = tx.get(kKv, k, &v); x != Abort::kNone) return x;
                sum += v.a;
                c.co.yield();  // a long snapshot: writers and GC run meanwhile
              }
              return Abort::kNone;
            },
            Kind::kReadOnly);
        if (a != Abort::kNone) {
          ++failed;
        } else {
          ++snapshots;
          bad += sum != int64_t{100} * kKeys;
        }
      }
      return;
    }
    for (int i = 0; i < 3000 && std::chrono::steady_clock::now() < until; ++i) {
      const Key from = rng() % kKeys, to = (from + 1 + rng() % (kKeys - 1)) % kKeys;
      const int64_t amount = static_cast<int64_t>(rng() % 7);
      const Abort a = c.engine.run_with_retry([&](Txn& tx) {
        Val x, y;
        if (Abort e = tx.get_for_update(kKv, from, &x); e != Abort::kNone) return e;
        if (Abort e = tx.get_for_update(kKv, to, &y); e != Abort::kNone) return e;
        x.a -= amount;
        y.a += amount;
        if (Abort e = tx.put(kKv, from, &x); e != Abort::kNone) return e;
        return tx.put(kKv, to, &y);
      });
      transfers += a == Abort::kNone;
    }
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(snapshots.load(), 10u);
  EXPECT_GT(transfers.load(), 100u);
  uint64_t reclaimed = 0, pushed = 0;
  for (const NodeOutcome& o : outs) {
    reclaimed += o.versions.reclaimed;
    pushed += o.versions.pushed;
    EXPECT_LE(o.versions.peak, o.versions.capacity);
  }
  EXPECT_GT(reclaimed, 0u) << "GC never ran: the test proves nothing";
  // Every transfer replaced two versions on their primaries and on both
  // backups of each (backups keep versions too, from the replicated
  // commit timestamps).
  EXPECT_EQ(pushed, 6 * transfers.load());
  std::printf("[%s] %llu snapshots, %llu transfers, %llu versions pushed, %llu reclaimed\n",
              GetParam().c_str(), static_cast<unsigned long long>(snapshots.load()),
              static_cast<unsigned long long>(transfers.load()),
              static_cast<unsigned long long>(pushed), static_cast<unsigned long long>(reclaimed));
}

// A read-write transaction that scanned a range claims it (raises the
// range timestamps of the partitions it covered, at their primaries, to its
// commit timestamp) before its phantom check, so an insert it did not see
// commits above it (dst/mvcc_node.h). One-sided (CAS, retried from the value
// found) on shm; by RPC in the Table 6-1 form. Partition 1's word starts at
// 1 (the first CAS, from 0, fails), partition 2's above any commit (never
// lowered), partition 0 is outside the scan.
void scan_claims(const std::map<std::string, std::string>& phases) {
  const store::Catalog cat = make_catalog();
  const store::TableSpec& queue = *cat.find(kQueue);
  constexpr uint64_t kFar = uint64_t{1} << 62;
  ClusterRun r;
  r.preset = "drtmx";
  r.coroutines = 1;
  r.rows = {{kQueue, kRange + 5, val(1)}, {kQueue, 2 * kRange + 5, val(2)}, {kKv, 1, val(0)}};
  r.tweak = [&](TxnNodeConfig& cfg, uint16_t) {
    auto p = make_policy("drtmx", phases, true);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    cfg.policy = *p;
  };
  r.prepare = [&](TxnNode& n, uint16_t node) {
    const store::PartitionReplicas p1 = cat.replicas_of(queue, 1, node),
                                   p2 = cat.replicas_of(queue, 2, node);
    if (node == p1.primary) n.mvcc()->range_ts(kQueue, 1)->store(1);
    if (node == p2.primary) n.mvcc()->range_ts(kQueue, 2)->store(kFar);
  };
  std::atomic<uint64_t> commit_ts{0};
  std::atomic<int> ran{0};
  r.body = [&](TxnContext& c) {
    if (c.index != 0) return;
    const Abort a = c.engine.run_with_retry([&](Txn& tx) {
      Txn::Rows rows;
      if (Abort e = tx.scan(kQueue, kRange, 3 * kRange - 1, 16, &rows); e != Abort::kNone) return e;
      Val v{static_cast<int64_t>(rows.keys.size()), 0};
      Val old;
      if (Abort e = tx.get_for_update(kKv, 1, &old); e != Abort::kNone) return e;
      return tx.put(kKv, 1, &v);
    });
    ran = a == Abort::kNone ? 1 : -1;
    commit_ts = c.engine.last_commit_ts();
  };
  std::vector<NodeOutcome> outs = run_cluster(cat, r);
  ASSERT_EQ(outs.size(), kNodes);
  ASSERT_EQ(ran.load(), 1);
  ASSERT_GT(commit_ts.load(), 1u);
  ASSERT_LT(commit_ts.load(), kFar);
  for (store::PartitionId p = 0; p < kNodes; ++p) {
    const store::NodeId16 primary = cat.replicas_of(queue, p, 0).primary;
    ASSERT_EQ(outs[primary].queue_range_ts.size(), kNodes);
    const uint64_t want = p == 0 ? 0 : p == 1 ? commit_ts.load() : kFar;
    EXPECT_EQ(outs[primary].queue_range_ts[p], want) << "partition " << p;
  }
}

TEST(MvccScans, AScanningWriterClaimsItsRangesAtItsCommitTimestamp) {
  scan_claims({});
}

TEST(MvccScans, AScanningWriterClaimsItsRangesByRpcInTheTable61Form) {
  scan_claims({{"lock", "rpc"}, {"validate", "rpc"}, {"commit", "rpc"}});
}

INSTANTIATE_TEST_SUITE_P(Mvcc, MvccSnapshots, ::testing::Values("drtmx", "drtmx-gts"),
                         [](const auto& info) {
                           return info.param == "drtmx" ? std::string("dst") : std::string("gts");
                         });

}  // namespace
}  // namespace drtmx::txn
