// Durability end to end (--durability=pmem): 3 nodes as thread groups of
// one process, replicas 3, a bank of accounts in pools under /dev/shm.
//
// A clean restart finds every commit; a crash at each step of the commit
// path (one node stops the whole process at the step's N-th occurrence —
// the cluster loses power with that node exactly there) followed by a
// restart with recover finds every acknowledged transfer (its versions)
// and no partial one (each transfer in flight at the crash is there whole
// or not at all; money is conserved), and the recovered cluster runs on.
//
// Acknowledgements are journaled by a CommitObserver into a shared file
// mapping that outlives the crashed process (its stores reach the page
// cache before the process dies).
//
// Lock words apart (hint H8): durable nodes keep the records' lock words
// and MVCC tuple timestamps in DRAM lock regions, never in the pooled
// slots. After every run each node's pooled slots are inspected: their own
// lock and ts words must all be 0 (and, under MVCC, the lock regions hold
// the raised timestamps). A probe holds a lock by hand in a lock region
// (every preset's write of that record must abort with kLockHeld) and
// plants a foreign lock word in another record's pooled slot (ignored: its
// writes commit), and sends record requests naming offsets that are no
// record slot (refused with an error).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "r2/control/control.h"
#include "r2/shm/shm_fabric.h"
#include "support/test_cluster_key.h"
#include "txn/mvcc_ops.h"
#include "txn/record_ops.h"
#include "txn/txn_node.h"

namespace drtmx::txn {
namespace {

constexpr uint16_t kNodes = 3, kCos = 4;
constexpr TableId kAcc = 1;
constexpr uint32_t kAccounts = 60;
constexpr int64_t kInitial = 1000;
constexpr int kCrashed = 42;

struct Account {
  int64_t balance;
};

store::Catalog make_catalog() {
  store::TableSpec t;
  t.id = kAcc;
  t.name = "accounts";
  t.value_size = sizeof(Account);
  t.capacity = 1000;
  t.partitions = kNodes;
  t.scheme = store::PartitionScheme::kFunction;
  t.partition_fn = [](uint64_t k) { return static_cast<uint32_t>(k % kNodes); };
  auto c = store::Catalog::create({t}, kNodes, 3);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c.value());
}

// The acknowledgement journal: one record per transfer that reached
// Validate, in a shared mapping of a file.
struct JournalRec {
  std::atomic<uint32_t> state;  // 1 prepared, 2 acknowledged, 3 aborted in Log
  uint32_t writes;
  uint64_t key[2];
  uint64_t version[2];
};
struct JournalFile {
  std::atomic<uint64_t> next;
  JournalRec recs[1 << 16];
};

JournalFile* map_journal(const std::string& path, bool fresh) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | (fresh ? O_TRUNC : 0), 0600);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, sizeof(JournalFile)) != 0) {
    ::close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(JournalFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<JournalFile*>(p);
}

class Journaler final : public CommitObserver {
 public:
  explicit Journaler(JournalFile* j) : j_(j) {}
  void prepared(std::span<const Write> writes) override {
    const uint64_t i = j_->next.fetch_add(1);
    rec_ = i < std::size(j_->recs) ? &j_->recs[i] : nullptr;
    if (rec_ == nullptr) return;
    rec_->writes = static_cast<uint32_t>(std::min<size_t>(writes.size(), 2));
    for (uint32_t w = 0; w < rec_->writes; ++w) {
      rec_->key[w] = writes[w].key;
      rec_->version[w] = writes[w].version;
    }
    rec_->state.store(1, std::memory_order_release);
  }
  void logged(bool committed) override {
    if (rec_ != nullptr) rec_->state.store(committed ? 2 : 3, std::memory_order_release);
    rec_ = nullptr;
  }

 private:
  JournalFile* j_;
  JournalRec* rec_ = nullptr;
};

struct Crash {
  bool armed = false;
  CrashPoint point = CrashPoint::kLogged;
  uint16_t node = 0;
  uint64_t hit = 1;  // stop at this occurrence on that node
};

struct RunSpec {
  std::string dir, cluster;
  std::string policy = "drtmh";
  bool recover = false;
  bool locks_apart = true;  // DurabilityConfig::locks_apart
  bool probe = false;       // the lock probe (file comment); needs locks_apart
  int transfers = 0;        // per coroutine
  int audits = 0;           // per coroutine, read-only, before its transfers
  Crash crash;
  JournalFile* journal = nullptr;
};

// What a node's pooled slots and lock regions hold (after a run).
struct Words {
  bool apart = true;          // every slot's lock and ts words are apart from it
  uint64_t slots = 0;         // heap slots inspected
  uint64_t slot_words = 0;    // pooled slots whose own lock or ts word is not 0
  uint64_t lock_entries = 0;  // lock-region entries whose lock word is not 0
  uint64_t ts_entries = 0;    // ... whose tuple timestamp is not 0
};

// What the probe saw.
struct Probe {
  bool ran = false;
  Abort held = Abort::kNone;   // writing the record locked by hand
  Abort decoy = Abort::kNone;  // writing the record with a foreign lock in its slot
  Abort audit = Abort::kNone;  // reading every other account
  int64_t audit_sum = 0;
  std::vector<std::string> refused;  // the errors of the requests for no record slot
};

constexpr Key kHeld = 0, kDecoy = 1;
// A lock word no transaction of the cluster uses (node 200).
constexpr uint64_t kForeign = store::lock_word(200, 0, 0, 1);

struct NodeOutcome {
  Status status;
  Words words;
  Probe probe;
  uint64_t committed = 0;
  uint64_t writes_direct = 0;  // own records written back by the coordinator
  uint64_t audits = 0, bad_audits = 0;
  std::string failed_audits;  // the abort reasons of audits that gave up
  LogRecovery logs;
  store::tables::StoreRecovery slots;
  std::vector<int64_t> balance;   // per account, this node's copy
  std::vector<uint64_t> version;  // per account
};

NodeOutcome failed(Status why) {
  NodeOutcome o;
  o.status = std::move(why);
  return o;
}

// This node's copy of account `k` (its slot and words), or rec == nullptr.
store::SlotRef record_of(TxnNode& n, const store::Catalog& cat, Key k) {
  const store::TableSpec& t = *cat.find(kAcc);
  const store::tables::LocalPartition* lp = n.store().partition(kAcc, cat.partition_of(t, k));
  if (lp == nullptr) return {};
  const size_t slot = store::record_slot_size(t.value_size);
  for (uint64_t i = 0; i < lp->heap->committed_bytes() / slot; ++i) {
    const store::SlotRef r = n.store().slot_at(store::tables::table_region(kAcc),
                                               lp->plan.heap.range_offset + i * slot, t.value_size);
    if (r.rec == nullptr || store::verify(r.rec, t.value_size) != store::RecordCheck::kOk) continue;
    store::RecordHeader h;
    std::memcpy(&h, r.rec, sizeof h);
    if (h.key == k) return r;
  }
  return {};
}

uint64_t load(const uint64_t* w) {
  return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

// Every heap slot of every copy this node hosts: its own words in the pool,
// and its words in the lock region (the same words when they are not apart).
Words inspect(TxnNode& n, const store::Catalog& cat, uint16_t node) {
  const store::TableSpec& t = *cat.find(kAcc);
  const size_t slot = store::record_slot_size(t.value_size);
  Words w;
  for (store::PartitionId p : cat.hosted(node, t)) {
    const store::tables::LocalPartition* lp = n.store().partition(kAcc, p);
    for (uint64_t i = 0; lp != nullptr && i < lp->heap->committed_bytes() / slot; ++i) {
      const store::SlotRef r = n.store().slot_at(
          store::tables::table_region(kAcc), lp->plan.heap.range_offset + i * slot, t.value_size);
      if (r.rec == nullptr) {
        w.apart = false;  // slot_at must know every slot of the heap
        continue;
      }
      ++w.slots;
      uint64_t* own_lock = reinterpret_cast<uint64_t*>(r.rec);
      uint64_t* own_ts = store::ts_word(r.rec);
      if (r.lock == own_lock || r.ts == own_ts) w.apart = false;
      if (load(own_lock) != 0 || load(own_ts) != 0) ++w.slot_words;
      if (load(r.lock) != 0) ++w.lock_entries;
      if (load(r.ts) != 0) ++w.ts_entries;
    }
  }
  return w;
}

// The probe's requests for records that are not record slots, to the
// primary of partition 0 (its plan says where its heap is): inside a slot,
// and in the index area before the heap. Each must fail with an error.
void refuse_bad_requests(TxnContext& c, const store::Catalog& cat, bool mvcc, Probe* out) {
  const store::TableSpec& t = *cat.find(kAcc);
  const r2::NodeId target = cat.replicas_of(t, 0, 0).primary;
  Result<store::tables::PartitionPlan> plan = store::tables::locate(cat, t, 0, target);
  if (!plan.is_ok()) {
    out->refused.push_back("no plan: " + plan.status().to_string());
    return;
  }
  for (uint64_t off : {plan->heap.range_offset + 8, plan->heap.range_offset - 64}) {
    RecordRef r;
    r.addr = {target, store::tables::table_region(kAcc), off};
    r.value_size = t.value_size;
    r.version = 1;
    std::vector<ItemResult> res;
    Status s = rpc_lock(c.co, std::span<const RecordRef>(&r, 1), kForeign, &res);
    out->refused.push_back(s.is_ok() ? "accepted" : s.message());
    s = rpc_check(c.co, std::span<const RecordRef>(&r, 1), 0, &res);
    out->refused.push_back(s.is_ok() ? "accepted" : s.message());
    if (mvcc) {
      std::vector<MvccLockResult> lr;
      s = rpc_mvcc_lock(c.co, std::span<const RecordRef>(&r, 1), kForeign, &lr);
      out->refused.push_back(s.is_ok() ? "accepted" : s.message());
    }
  }
}

// The probe, on one coroutine per node (nothing else runs).
void probe(TxnContext& c, const store::Catalog& cat, bool mvcc, Probe* out) {
  auto write = [](Key k) {
    return [k](Txn& tx) {
      Account x;
      if (Abort e = tx.get_for_update(kAcc, k, &x); e != Abort::kNone) return e;
      return tx.put(kAcc, k, &x);  // the same balance, a new version
    };
  };
  out->held = c.engine.run(write(kHeld));
  out->decoy = c.engine.run_with_retry(write(kDecoy));
  out->audit = c.engine.run_with_retry(
      [&](Txn& tx) {
        out->audit_sum = 0;
        for (Key k = 0; k < kAccounts; ++k) {
          if (k == kHeld) continue;  // a snapshot read would wait for its holder
          Account x;
          if (Abort e = tx.get(kAcc, k, &x); e != Abort::kNone) return e;
          out->audit_sum += x.balance;
        }
        return Abort::kNone;
      },
      {}, Kind::kReadOnly);
  refuse_bad_requests(c, cat, mvcc, out);
  out->ran = true;
}

NodeOutcome run_node(const store::Catalog& cat, const RunSpec& spec, uint16_t node,
                     const std::string& coord) {
  NodeOutcome out;
  TxnNodeConfig cfg;
  cfg.fabric.cluster = spec.cluster;
  cfg.fabric.cluster_key = drtmx::testing::kTestClusterKey;
  cfg.fabric.node = node;
  cfg.fabric.num_nodes = kNodes;
  cfg.fabric.threads = 1;
  cfg.control.coordinator = coord;
  cfg.coroutines = kCos;
  cfg.log_ring_bytes = 16 * 1024;  // small: rings wrap and fill
  cfg.durability.enabled = true;
  cfg.durability.dir = spec.dir;
  cfg.durability.recover = spec.recover;
  cfg.durability.format = !spec.recover;
  cfg.durability.locks_apart = spec.locks_apart;
  std::atomic<uint64_t> hits{0};
  if (spec.crash.armed && spec.crash.node == node) {
    const Crash c = spec.crash;
    cfg.crash_hook = [c, &hits](CrashPoint p) {
      if (p == c.point && hits.fetch_add(1) + 1 == c.hit) _exit(kCrashed);
    };
  }
  auto policy = make_policy(spec.policy, {}, true);
  if (!policy.is_ok()) return failed(policy.status());
  cfg.policy = *policy;
  auto started = TxnNode::start(cat, cfg);
  if (!started.is_ok()) return failed(started.status());
  TxnNode& n = **started;
  const store::TableSpec& t = *cat.find(kAcc);
  // The probe's planted locks, at the records' primaries: one held in the
  // lock region, one foreign word in a pooled slot's own lock word —
  // before persist_loaded(), a barrier: no node runs before they are in.
  const auto primary_of = [&](Key k) {
    return cat.replicas_of(t, cat.partition_of(t, k), node).primary;
  };
  store::SlotRef held, decoy;
  const auto plant = [&]() -> Status {
    if (primary_of(kHeld) == node) {
      held = record_of(n, cat, kHeld);
      if (held.rec == nullptr) return internal_error("probe: no record of the held account");
      __atomic_store_n(held.lock, kForeign, __ATOMIC_RELEASE);
    }
    if (primary_of(kDecoy) == node) {
      decoy = record_of(n, cat, kDecoy);
      if (decoy.rec == nullptr) return internal_error("probe: no record of the decoy account");
      __atomic_store_n(reinterpret_cast<uint64_t*>(decoy.rec), kForeign, __ATOMIC_RELEASE);
    }
    return Status::ok();
  };
  if (spec.recover) {
    out.slots = n.store_recovery();
    if (Status st = n.recover(&out.logs); !st.is_ok()) return failed(st);
  } else {
    for (uint64_t k = 0; k < kAccounts; ++k) {
      if (!cat.hosts(node, t, cat.partition_of(t, k))) continue;
      const Account a{kInitial};
      Status st = n.store().load(t, k, {reinterpret_cast<const uint8_t*>(&a), sizeof a});
      if (!st.is_ok()) return failed(st);
    }
    if (spec.probe) {
      if (Status st = plant(); !st.is_ok()) return failed(st);
    }
    if (Status st = n.persist_loaded(); !st.is_ok()) return failed(st);
  }
  const bool mvcc = policy->mvcc != Mvcc::kOff;
  std::vector<std::unique_ptr<Journaler>> journalers(kCos);
  std::atomic<uint64_t> audits{0}, bad_audits{0};
  std::mutex failed_mu;
  std::string failed_audits;
  Status st = n.run([&](TxnContext& c) {
    if (spec.probe) {
      if (c.index % kCos == 0) probe(c, cat, mvcc, &out.probe);
      return;
    }
    std::unique_ptr<Journaler>& j = journalers[c.index % kCos];
    if (spec.journal != nullptr) {
      j = std::make_unique<Journaler>(spec.journal);
      c.engine.set_observer(j.get());
    }
    std::mt19937 rng(c.index * 7919 + (spec.recover ? 17 : 1));
    // Audits first: right after a restart (under MVCC they read snapshots,
    // which must see the recovered records before any new commit).
    for (int i = 0; i < spec.audits; ++i) {
      int64_t sum = 0;
      const Abort r = c.engine.run_with_retry(
          [&](Txn& tx) {
            sum = 0;
            for (Key k = 0; k < kAccounts; ++k) {
              Account x;
              if (Abort e = tx.get(kAcc, k, &x); e != Abort::kNone) return e;
              sum += x.balance;
            }
            return Abort::kNone;
          },
          {}, Kind::kReadOnly);
      if (r != Abort::kNone) {
        std::lock_guard<std::mutex> g(failed_mu);
        failed_audits += std::string(" ") + abort_name(r);
        continue;
      }
      ++audits;
      if (sum != int64_t{kAccounts} * kInitial) ++bad_audits;
    }
    for (int i = 0; i < spec.transfers; ++i) {
      const Key a = rng() % kAccounts, b = (a + 1 + rng() % (kAccounts - 1)) % kAccounts;
      const int64_t amount = 1 + rng() % 5;
      c.engine.run_with_retry([&](Txn& tx) {
        Account x, y;
        if (Abort e = tx.get_for_update(kAcc, a, &x); e != Abort::kNone) return e;
        if (Abort e = tx.get_for_update(kAcc, b, &y); e != Abort::kNone) return e;
        if (x.balance < amount) return tx.user_abort();
        x.balance -= amount;
        y.balance += amount;
        tx.put(kAcc, a, &x);
        tx.put(kAcc, b, &y);
        return Abort::kNone;
      });
    }
  });
  if (!st.is_ok()) return failed(st);
  out.status = n.finish(std::chrono::seconds(60));
  if (spec.probe) {
    // The planted words are where they were put (nothing of the engine
    // touched them): take them away before the inspection.
    if (held.lock != nullptr && load(held.lock) != kForeign) {
      out.status = internal_error("probe: the lock held by hand was released by the engine");
    }
    if (decoy.rec != nullptr && load(reinterpret_cast<uint64_t*>(decoy.rec)) != kForeign) {
      out.status = internal_error("probe: the foreign word in a pooled slot was overwritten");
    }
    if (held.lock != nullptr) __atomic_store_n(held.lock, 0, __ATOMIC_RELEASE);
    if (decoy.rec != nullptr)
      __atomic_store_n(reinterpret_cast<uint64_t*>(decoy.rec), 0, __ATOMIC_RELEASE);
  }
  out.words = inspect(n, cat, node);
  out.committed = n.stats().committed;
  out.writes_direct = n.stats().writes_direct;
  out.audits = audits;
  out.bad_audits = bad_audits;
  out.failed_audits = failed_audits;
  out.balance.assign(kAccounts, -1);
  out.version.assign(kAccounts, 0);
  for (uint64_t k = 0; k < kAccounts; ++k) {
    Account a{};
    auto r = n.store().get_local(t, k, {reinterpret_cast<uint8_t*>(&a), sizeof a}, &out.version[k]);
    if (!r.is_ok() || !*r) {
      out.status = internal_error("account " + std::to_string(k) + " missing on node " +
                                  std::to_string(node));
      continue;
    }
    out.balance[k] = a.balance;
  }
  return out;
}

std::vector<NodeOutcome> run_cluster(const store::Catalog& cat, const RunSpec& spec) {
  r2::remove_shm_segments(spec.cluster);
  r2::ControlServerConfig sc;
  sc.cluster = spec.cluster;
  sc.key = drtmx::testing::kTestClusterKey;
  sc.num_nodes = kNodes;
  auto server = r2::ControlServer::start(sc);
  std::vector<NodeOutcome> outs(kNodes);
  if (!server.is_ok()) {
    outs[0].status = server.status();
    return outs;
  }
  const std::string coord = "127.0.0.1:" + std::to_string((*server)->port());
  std::vector<std::thread> ts;
  for (uint16_t n = 0; n < kNodes; ++n) {
    ts.emplace_back([&, n] { outs[n] = run_node(cat, spec, n, coord); });
  }
  for (auto& t : ts) t.join();
  r2::remove_shm_segments(spec.cluster);
  return outs;
}

// Every node ran; all copies agree; money is conserved.
void expect_consistent(const std::vector<NodeOutcome>& outs) {
  for (uint16_t n = 0; n < kNodes; ++n) {
    ASSERT_TRUE(outs[n].status.is_ok()) << "node " << n << ": " << outs[n].status.to_string();
  }
  int64_t total = 0;
  for (uint64_t k = 0; k < kAccounts; ++k) {
    total += outs[0].balance[k];
    for (uint16_t n = 1; n < kNodes; ++n) {
      EXPECT_EQ(outs[n].balance[k], outs[0].balance[k]) << "account " << k << " on node " << n;
      EXPECT_EQ(outs[n].version[k], outs[0].version[k]) << "account " << k << " on node " << n;
    }
  }
  EXPECT_EQ(total, int64_t{kAccounts} * kInitial) << "money created or destroyed";
  uint64_t audits = 0;
  for (const NodeOutcome& o : outs) {
    audits += o.audits;
    EXPECT_EQ(o.bad_audits, 0u) << "an audit saw money in flight";
  }
  (void)audits;
}

// Lock words apart: no pooled slot's own lock or ts word was ever set, no
// lock is left in the lock regions, and under MVCC (`ts_raised`: a run
// that committed or read snapshots) tuple timestamps went to the lock
// regions — and only there.
void expect_words_apart(const std::vector<NodeOutcome>& outs, bool mvcc, bool ts_raised) {
  uint64_t ts_entries = 0;
  for (uint16_t n = 0; n < kNodes; ++n) {
    const Words& w = outs[n].words;
    EXPECT_TRUE(w.apart) << "node " << n << ": a slot's lock or ts word is not apart from it";
    EXPECT_GT(w.slots, 0u) << "node " << n;
    EXPECT_EQ(w.slot_words, 0u) << "node " << n
                                << ": a pooled slot's own lock or ts word was written";
    EXPECT_EQ(w.lock_entries, 0u) << "node " << n << ": a lock left held";
    if (!mvcc) {
      EXPECT_EQ(w.ts_entries, 0u) << "node " << n << ": a tuple timestamp without MVCC";
    }
    ts_entries += w.ts_entries;
  }
  if (mvcc && ts_raised) {
    EXPECT_GT(ts_entries, 0u) << "MVCC raised no tuple timestamp";
  }
}

bool is_mvcc(const char* preset) {
  return make_policy(preset, {}, true)->mvcc != Mvcc::kOff;
}

// Whether a run raises tuple timestamps under `preset` (on shm). Two-sided
// MVCC commits raise every written record's; one-sided ones raise none of
// theirs (a written record's wts carries the commit timestamp: txn/
// mvcc_onesided.cc) and the records only read are read-written here, so
// then only DST snapshots (`snapshots`: the run audits) raise.
bool raises_ts(const char* preset, bool snapshots) {
  const Policy p = *make_policy(preset, {}, true);
  if (p.mvcc == Mvcc::kOff) return false;
  if (!mvcc_onesided(p)) return true;
  return p.mvcc == Mvcc::kDst && snapshots;
}

class DurableTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = "/dev/shm/drtmx-durable-test-" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  RunSpec spec(const std::string& name) const {
    RunSpec s;
    s.dir = dir_;
    s.cluster = "durable" + std::to_string(getpid()) + name;
    s.policy = GetParam();
    return s;
  }
  std::string dir_;
};

TEST_P(DurableTest, ACleanRestartFindsEveryCommitAndRunsOn) {
  const store::Catalog cat = make_catalog();
  RunSpec s = spec("clean");
  s.transfers = 300;
  const bool mvcc = is_mvcc(GetParam());
  const std::vector<NodeOutcome> first = run_cluster(cat, s);
  expect_consistent(first);
  expect_words_apart(first, mvcc, raises_ts(GetParam(), s.audits > 0));
  uint64_t committed = 0, direct = 0;
  for (const NodeOutcome& o : first) committed += o.committed, direct += o.writes_direct;
  EXPECT_GT(committed, 1000u);
  // A durable node writes its own records back itself too (flushed and
  // fenced before the commit settles) wherever the preset commits with
  // one-sided WRITEs; the restart below finds those writes in the pools.
  const Policy p = *make_policy(GetParam(), {}, true);
  if (p.commit == CommitPath::kWrite && (!mvcc || mvcc_onesided(p))) {
    EXPECT_GT(direct, 0u);
  } else {
    EXPECT_EQ(direct, 0u);
  }
  // Restart: the same balances and versions, on every copy.
  s.recover = true;
  s.transfers = 0;
  const std::vector<NodeOutcome> again = run_cluster(cat, s);
  expect_consistent(again);
  expect_words_apart(again, mvcc, false);
  for (uint16_t n = 0; n < kNodes; ++n) {
    EXPECT_EQ(again[n].balance, first[n].balance) << "node " << n;
    EXPECT_EQ(again[n].version, first[n].version) << "node " << n;
    EXPECT_EQ(again[n].slots.records, uint64_t{kAccounts}) << "node " << n;
    EXPECT_EQ(again[n].logs.dropped, 0u) << "node " << n;
  }
  // And it serves: more transfers and audits (snapshots under MVCC: they
  // must see the recovered records), a third start.
  s.transfers = 100;
  s.audits = 20;
  const std::vector<NodeOutcome> third = run_cluster(cat, s);
  expect_consistent(third);
  expect_words_apart(third, mvcc, raises_ts(GetParam(), s.audits > 0));
  uint64_t audits = 0;
  std::string why;
  for (const NodeOutcome& o : third) {
    audits += o.audits;
    why += o.failed_audits;
  }
  if (mvcc) {
    EXPECT_EQ(audits, uint64_t{kNodes} * kCos * 20) << "a snapshot audit aborted:" << why;
  } else {
    EXPECT_GT(audits, 0u);  // OCC audits of every account may abort 64 times in a row
  }
}

// The probe (file comment) on every preset: a lock held in the lock region
// blocks the one-sided, RPC and MVCC locks of every preset; a foreign word
// in a pooled slot's own lock word blocks nothing; requests for offsets
// that are no record slot are refused by name. Then the same pools restart
// with the words in the slots (DurabilityConfig::locks_apart = false) and
// back: the pools do not depend on where the words live.
TEST_P(DurableTest, LockWordsAndTupleTimestampsLiveInDramNotInThePools) {
  const store::Catalog cat = make_catalog();
  const bool mvcc = is_mvcc(GetParam());
  RunSpec s = spec("probe");
  s.probe = true;
  std::vector<NodeOutcome> outs = run_cluster(cat, s);
  expect_consistent(outs);
  if (HasFatalFailure()) return;
  expect_words_apart(outs, mvcc, raises_ts(GetParam(), s.audits > 0));
  for (uint16_t n = 0; n < kNodes; ++n) {
    const Probe& p = outs[n].probe;
    ASSERT_TRUE(p.ran) << "node " << n;
    EXPECT_EQ(p.held, Abort::kLockHeld)
        << "node " << n << ": a write of a record locked in the lock region got "
        << abort_name(p.held);
    EXPECT_EQ(p.decoy, Abort::kNone)
        << "node " << n
        << ": a foreign word in a pooled slot blocked a write: " << abort_name(p.decoy);
    EXPECT_EQ(p.audit, Abort::kNone) << "node " << n << ": " << abort_name(p.audit);
    EXPECT_EQ(p.audit_sum, int64_t{kAccounts - 1} * kInitial) << "node " << n;
    EXPECT_EQ(p.refused.size(), mvcc ? 6u : 4u) << "node " << n;
    for (const std::string& why : p.refused) {
      EXPECT_NE(why.find("not a record slot"), std::string::npos) << "node " << n << ": " << why;
    }
  }
  // Each node's probe wrote the decoy once: three versions above the load.
  EXPECT_EQ(outs[0].version[kDecoy], outs[0].version[2] + kNodes);
  EXPECT_EQ(outs[0].version[kHeld], outs[0].version[2]) << "the held record was written";

  s.probe = false;
  s.recover = true;
  s.locks_apart = false;
  s.transfers = 50;
  outs = run_cluster(cat, s);
  expect_consistent(outs);
  for (uint16_t n = 0; n < kNodes; ++n) {
    EXPECT_FALSE(outs[n].words.apart) << "node " << n;
    EXPECT_EQ(outs[n].words.lock_entries, 0u) << "node " << n << ": a lock left held";
  }
  s.locks_apart = true;
  s.audits = 5;
  outs = run_cluster(cat, s);
  expect_consistent(outs);
  expect_words_apart(outs, mvcc, raises_ts(GetParam(), s.audits > 0));
}

// The first start of a directory's database refuses existing pools unless
// asked to format; a restart refuses a directory that was never loaded.
TEST_P(DurableTest, PoolsAreNeverOverwrittenWithoutFormatNorRecoveredBeforeTheirLoad) {
  const store::Catalog cat = make_catalog();
  RunSpec s = spec("refuse");
  s.recover = true;  // nothing there yet
  std::vector<NodeOutcome> outs = run_cluster(cat, s);
  EXPECT_FALSE(outs[0].status.is_ok());
  EXPECT_NE(outs[0].status.message().find(".pool"), std::string::npos)
      << outs[0].status.to_string();
}

// One crash at the hit-th occurrence of `point` on `node`, a restart, and
// the checks against the journal.
// `repaired_from_backups`: the crash leaves a primary without the write-back
// of an acknowledged transaction whose primaries received no log entry
// (durable logs: the coordinator makes the write-back persistent — a
// flushing READ, or the reply of an owner that flushed): the restart must
// repair it from the backups' rings.
void crash_and_recover(const store::Catalog& cat, RunSpec s, CrashPoint point, uint16_t node,
                       uint64_t hit, bool repaired_from_backups) {
  const std::string jpath = s.dir + "/journal";
  JournalFile* j = map_journal(jpath, true);
  ASSERT_NE(j, nullptr);
  s.journal = j;
  s.transfers = 400;
  s.crash = {true, point, node, hit};
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::vector<NodeOutcome> outs = run_cluster(cat, s);
    // The crash hook exits with kCrashed; a run that ends instead says why.
    for (size_t n = 0; n < outs.size(); ++n) {
      if (!outs[n].status.is_ok()) {
        std::fprintf(stderr, "node %zu: %s\n", n, outs[n].status.to_string().c_str());
      }
    }
    _exit(outs[0].status.is_ok() ? 0 : 1);
  }
  int ws = 0;
  ASSERT_EQ(waitpid(child, &ws, 0), child);
  ASSERT_TRUE(WIFEXITED(ws)) << crash_point_name(point);
  ASSERT_EQ(WEXITSTATUS(ws), kCrashed)
      << "the crash at " << crash_point_name(point) << " #" << hit << " never happened";
  r2::remove_shm_segments(s.cluster);
  // Restart (no new transfers): what survived.
  RunSpec r = s;
  r.recover = true;
  r.transfers = 0;
  r.crash = {};
  r.journal = nullptr;
  const std::vector<NodeOutcome> outs = run_cluster(cat, r);
  expect_consistent(outs);
  if (::testing::Test::HasFatalFailure()) return;
  // The crashed run held locks and raised timestamps: none of it is in the
  // pools, and the restart's lock regions start empty.
  expect_words_apart(outs, is_mvcc(s.policy.c_str()), false);
  const uint64_t n = std::min<uint64_t>(j->next.load(), std::size(j->recs));
  uint64_t acked = 0, in_flight = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const JournalRec& rec = j->recs[i];
    const uint32_t state = rec.state.load();
    if (state == 2) {
      ++acked;
      for (uint32_t w = 0; w < rec.writes; ++w) {
        EXPECT_GE(outs[0].version[rec.key[w]], rec.version[w])
            << "an acknowledged transfer was lost: account " << rec.key[w] << " (crash at "
            << crash_point_name(point) << ")";
      }
    } else if (state == 1 && rec.writes == 2) {
      ++in_flight;
      const bool a = outs[0].version[rec.key[0]] >= rec.version[0];
      const bool b = outs[0].version[rec.key[1]] >= rec.version[1];
      EXPECT_EQ(a, b) << "a transfer in flight at the crash is partial: accounts " << rec.key[0]
                      << ", " << rec.key[1] << " (crash at " << crash_point_name(point) << ")";
    }
  }
  EXPECT_GT(acked, 0u);
  if (repaired_from_backups) {
    uint64_t shipped = 0;
    for (const NodeOutcome& o : outs) shipped += o.logs.shipped_replayed;
    EXPECT_GT(shipped, 0u) << "no primary was repaired from its backups' log rings (crash at "
                           << crash_point_name(point) << ")";
  }
  // The recovered cluster runs on and stays consistent.
  r.transfers = 50;
  r.audits = 5;
  const std::vector<NodeOutcome> on = run_cluster(cat, r);
  expect_consistent(on);
  expect_words_apart(on, is_mvcc(s.policy.c_str()), raises_ts(s.policy.c_str(), r.audits > 0));
  munmap(j, sizeof(JournalFile));
}

TEST_P(DurableTest, ACrashAtEveryStepOfTheCommitPathLosesNoAcknowledgedCommit) {
  const store::Catalog cat = make_catalog();
  std::mt19937 rng(2026);
  // Write-backs are one-sided WRITEs only with CommitPath::kWrite (an RPC
  // commit writes back and unlocks in one handler).
  const bool one_sided = make_policy(GetParam(), {}, true)->commit == CommitPath::kWrite;
  const bool mvcc = is_mvcc(GetParam());
  for (size_t p = 0; p < static_cast<size_t>(CrashPoint::kCount); ++p) {
    for (int round = 0; round < 2; ++round) {
      const CrashPoint point = static_cast<CrashPoint>(p);
      if (point == CrashPoint::kWrittenBack && !one_sided) continue;
      const uint16_t node = static_cast<uint16_t>(rng() % kNodes);
      const uint64_t hit = 20 + rng() % 300;
      SCOPED_TRACE(std::string(crash_point_name(point)) + " on node " + std::to_string(node) +
                   " at #" + std::to_string(hit));
      // Acknowledged, not written back: the primaries received no entry
      // (one-sided and RPC commits) — except under MVCC, whose commit RPC
      // leaves the write-back's persistence to the primary's entry.
      const bool repaired = point == CrashPoint::kAcknowledged && !mvcc;
      crash_and_recover(cat, spec("crash" + std::to_string(p) + "_" + std::to_string(round)), point,
                        node, hit, repaired);
      if (HasFatalFailure()) return;
    }
  }
}

// Every preset: one-sided and RPC locks and commits, cached one-sided
// reads, and MVCC (DST and GTS) — all with the lock words apart (H8).
INSTANTIATE_TEST_SUITE_P(Presets, DurableTest,
                         ::testing::Values("drtmh", "farm", "drtm-r", "fasst", "drtmx",
                                           "drtmx-gts"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace drtmx::txn
