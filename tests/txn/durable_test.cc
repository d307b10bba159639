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
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "r2/control/control.h"
#include "r2/shm/shm_fabric.h"
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
  int transfers = 0;  // per coroutine
  int audits = 0;     // per coroutine, read-only, before its transfers
  Crash crash;
  JournalFile* journal = nullptr;
};

struct NodeOutcome {
  Status status;
  uint64_t committed = 0;
  uint64_t audits = 0, bad_audits = 0;
  LogRecovery logs;
  store::tables::StoreRecovery slots;
  std::vector<int64_t> balance;   // per account, this node's copy
  std::vector<uint64_t> version;  // per account
};

NodeOutcome failed(Status st) {
  NodeOutcome o;
  o.status = std::move(st);
  return o;
}

NodeOutcome run_node(const store::Catalog& cat, const RunSpec& spec, uint16_t node,
                     const std::string& coord) {
  NodeOutcome out;
  TxnNodeConfig cfg;
  cfg.fabric.cluster = spec.cluster;
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
    if (Status st = n.persist_loaded(); !st.is_ok()) return failed(st);
  }
  std::vector<std::unique_ptr<Journaler>> journalers(kCos);
  std::atomic<uint64_t> audits{0}, bad_audits{0};
  Status st = n.run([&](TxnContext& c) {
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
      if (r != Abort::kNone) continue;
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
  out.committed = n.stats().committed;
  out.audits = audits;
  out.bad_audits = bad_audits;
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
  const std::vector<NodeOutcome> first = run_cluster(cat, s);
  expect_consistent(first);
  uint64_t committed = 0;
  for (const NodeOutcome& o : first) committed += o.committed;
  EXPECT_GT(committed, 1000u);
  // Restart: the same balances and versions, on every copy.
  s.recover = true;
  s.transfers = 0;
  const std::vector<NodeOutcome> again = run_cluster(cat, s);
  expect_consistent(again);
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
  uint64_t audits = 0;
  for (const NodeOutcome& o : third) audits += o.audits;
  const bool mvcc = make_policy(GetParam(), {}, true)->mvcc != Mvcc::kOff;
  if (mvcc) {
    EXPECT_EQ(audits, uint64_t{kNodes} * kCos * 20) << "a snapshot audit aborted";
  } else {
    EXPECT_GT(audits, 0u);  // OCC audits of every account may abort 64 times in a row
  }
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
void crash_and_recover(const store::Catalog& cat, RunSpec s, CrashPoint point, uint16_t node,
                       uint64_t hit) {
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
  // The recovered cluster runs on and stays consistent.
  r.transfers = 50;
  r.audits = 5;
  expect_consistent(run_cluster(cat, r));
  munmap(j, sizeof(JournalFile));
}

TEST_P(DurableTest, ACrashAtEveryStepOfTheCommitPathLosesNoAcknowledgedCommit) {
  const store::Catalog cat = make_catalog();
  std::mt19937 rng(2026);
  // Write-backs are one-sided WRITEs only with CommitPath::kWrite (an RPC
  // commit writes back and unlocks in one handler).
  const bool one_sided = make_policy(GetParam(), {}, true)->commit == CommitPath::kWrite;
  for (size_t p = 0; p < static_cast<size_t>(CrashPoint::kCount); ++p) {
    for (int round = 0; round < 2; ++round) {
      const CrashPoint point = static_cast<CrashPoint>(p);
      if (point == CrashPoint::kWrittenBack && !one_sided) continue;
      const uint16_t node = static_cast<uint16_t>(rng() % kNodes);
      const uint64_t hit = 20 + rng() % 300;
      SCOPED_TRACE(std::string(crash_point_name(point)) + " on node " + std::to_string(node) +
                   " at #" + std::to_string(hit));
      crash_and_recover(cat, spec("crash" + std::to_string(p) + "_" + std::to_string(round)), point,
                        node, hit);
      if (HasFatalFailure()) return;
    }
  }
}

// Every preset: one-sided and RPC commit paths, and MVCC (DST and GTS).
INSTANTIATE_TEST_SUITE_P(Presets, DurableTest,
                         ::testing::Values("drtmh", "farm", "fasst", "drtmx", "drtmx-gts"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace drtmx::txn
