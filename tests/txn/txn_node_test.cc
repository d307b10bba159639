// TxnNode end to end: 3 nodes (thread groups of this process, each its own
// NodeRuntime joined through a ControlServer, as drtmx-bench runs them),
// a hash table of accounts with 3-way replication, transfers and audits on
// every coroutine; after finish() money is conserved at the primaries and
// every backup equals its primary (the logs were drained cluster-wide).
#include "txn/txn_node.h"

#include <gtest/gtest.h>

#include <random>

#include "support/test_cluster_key.h"
#include "support/thread_cluster.h"

namespace drtmx::txn {
namespace {

constexpr uint16_t kNodes = 3, kThreads = 1, kCos = 4;
constexpr TableId kAcc = 1;
constexpr uint32_t kAccounts = 90, kAudit = 9;
constexpr int64_t kInitial = 500;

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

struct NodeOutcome {
  Status status;
  TxnStats stats;
  uint64_t bad_audits = 0, audits = 0;
  int64_t primary_total = 0;
  std::vector<int64_t> copies;  // balance of every account copy here (-1: no copy)
};

NodeOutcome failed(const Status& s) {
  NodeOutcome o;
  o.status = s;
  return o;
}

NodeOutcome run_node(const store::Catalog& cat, uint16_t node, const std::string& coord,
                     const std::string& cluster) {
  NodeOutcome out;
  TxnNodeConfig cfg;
  cfg.fabric.cluster = cluster;
  cfg.fabric.cluster_key = drtmx::testing::kTestClusterKey;
  cfg.fabric.node = node;
  cfg.fabric.num_nodes = kNodes;
  cfg.fabric.threads = kThreads;
  cfg.control.coordinator = coord;
  cfg.coroutines = kCos;
  cfg.log_ring_bytes = 64 * 1024;
  auto policy = make_policy("drtmh", {}, true);
  if (!policy.is_ok()) return failed(policy.status());
  cfg.policy = *policy;
  auto n = TxnNode::start(cat, cfg);
  if (!n.is_ok()) return failed(n.status());
  const store::TableSpec& t = *cat.find(kAcc);
  for (uint64_t k = 0; k < kAccounts; ++k) {
    if (!cat.hosts(node, t, cat.partition_of(t, k))) continue;
    const Account a{kInitial};
    Status st = (*n)->store().load(t, k, {reinterpret_cast<const uint8_t*>(&a), sizeof a});
    if (!st.is_ok()) return failed(st);
  }
  if (Status st = (*n)->runtime().control().barrier("test.loaded"); !st.is_ok()) return failed(st);
  std::atomic<uint64_t> audits{0}, bad{0};
  Status st = (*n)->run([&](TxnContext& c) {
    std::mt19937 rng(c.index * 7919 + 1);
    for (int i = 0; i < 200; ++i) {
      if (rng() % 10 == 0) {
        int64_t sum = 0;
        Abort r = c.engine.run_with_retry([&](Txn& tx) {
          sum = 0;
          for (Key k = 0; k < kAudit; ++k) {
            Account a;
            if (Abort e = tx.get(kAcc, k, &a); e != Abort::kNone) return e;
            sum += a.balance;
          }
          return Abort::kNone;
        });
        if (r == Abort::kNone) {
          ++audits;
          if (sum != kInitial * kAudit) ++bad;
        }
        continue;
      }
      const bool inside = rng() % 3 == 0;
      const Key lo = inside ? 0 : kAudit, span = inside ? kAudit : kAccounts - kAudit;
      const Key a = lo + rng() % span, b = lo + (a - lo + 1 + rng() % (span - 1)) % span;
      c.engine.run_with_retry([&](Txn& tx) {
        Account x, y;
        if (Abort e = tx.get_for_update(kAcc, a, &x); e != Abort::kNone) return e;
        if (Abort e = tx.get_for_update(kAcc, b, &y); e != Abort::kNone) return e;
        if (x.balance < 3) return tx.user_abort();
        x.balance -= 3;
        y.balance += 3;
        tx.put(kAcc, a, &x);
        tx.put(kAcc, b, &y);
        return Abort::kNone;
      });
    }
  });
  if (!st.is_ok()) return failed(st);
  out.status = (*n)->finish(std::chrono::seconds(60));
  out.stats = (*n)->stats();
  out.audits = audits;
  out.bad_audits = bad;
  out.copies.assign(kAccounts, -1);
  for (uint64_t k = 0; k < kAccounts; ++k) {
    const store::PartitionId p = cat.partition_of(t, k);
    if (!cat.hosts(node, t, p)) continue;
    Account a{};
    auto r = (*n)->store().get_local(t, k, {reinterpret_cast<uint8_t*>(&a), sizeof a});
    if (!r.is_ok() || !*r) {
      out.status = internal_error("account " + std::to_string(k) + " missing on its copy");
      continue;
    }
    out.copies[k] = a.balance;
    if (cat.replicas_of(t, p, node).primary == node) out.primary_total += a.balance;
  }
  return out;
}

TEST(TxnNode, ReplicatedBankOnThreeRuntimesDrainsAndAgrees) {
  const store::Catalog cat = make_catalog();
  const std::vector<NodeOutcome> outs = testing::run_thread_cluster<NodeOutcome>(
      "txnnode", kNodes, [&](uint16_t n, const std::string& coord, const std::string& cluster) {
        return run_node(cat, n, coord, cluster);
      });
  ASSERT_EQ(outs.size(), kNodes);
  int64_t total = 0;
  uint64_t committed = 0, audits = 0;
  for (uint16_t n = 0; n < kNodes; ++n) {
    ASSERT_TRUE(outs[n].status.is_ok()) << "node " << n << ": " << outs[n].status.to_string();
    total += outs[n].primary_total;
    committed += outs[n].stats.committed;
    audits += outs[n].audits;
    EXPECT_EQ(outs[n].bad_audits, 0u) << "node " << n << ": an audit saw money in flight";
  }
  EXPECT_EQ(total, int64_t{kAccounts} * kInitial) << "money created or destroyed";
  EXPECT_GT(committed, 1000u);
  EXPECT_GT(audits, 0u);
  // Replicas 3 on 3 nodes: every node holds every account, all equal.
  for (uint64_t k = 0; k < kAccounts; ++k) {
    for (uint16_t n = 1; n < kNodes; ++n) {
      EXPECT_EQ(outs[n].copies[k], outs[0].copies[k]) << "account " << k << " on node " << n;
    }
  }
}

}  // namespace
}  // namespace drtmx::txn
