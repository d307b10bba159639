// Large scans with the default TxnNodeConfig (issue 46, part 3): a stored
// procedure scans 10 000 rows of an ordered table — range-partitioned, and
// function- and hash-partitioned (rows of every partition interleaved in
// key order) — on a 3-node cluster, commits, and sees every row of the
// range in key order; the read set of such a scan is still validated (a
// row changed, or a key inserted into the range, by another transaction
// aborts it); a snapshot (read-only, MVCC) scan of 10 000 rows sees every
// row. Node 0's first coroutine runs the script; the other "transactions"
// are owner RPC writes made from inside the procedure (deterministic).
// Under MVCC (drtmx) the same scans run as snapshots and as read-write
// scans whose range claims cover every partition the range reaches.
#include <gtest/gtest.h>

#include <cstring>

#include "store/record.h"
#include "support/test_cluster_key.h"
#include "support/thread_cluster.h"
#include "txn/txn_node.h"

namespace drtmx::txn {
namespace {

constexpr uint16_t kNodes = 3;
constexpr TableId kByRange = 1, kByFunction = 2, kByHash = 3, kPrefixed = 4;
constexpr Key kRows = 10000;

struct Val {
  int64_t key;
  int64_t twice;
  char pad[48];  // a row of 64 bytes: 10 000 of them far exceed the 64 KiB arena
};

Val val_of(Key k) {
  Val v{};
  v.key = static_cast<int64_t>(k);
  v.twice = 2 * static_cast<int64_t>(k);
  return v;
}

store::TableSpec ordered(TableId id, const char* name) {
  store::TableSpec t;
  t.id = id;
  t.name = name;
  t.kind = store::TableKind::kOrdered;
  t.value_size = sizeof(Val);
  t.capacity = 8192;
  t.partitions = kNodes;
  return t;
}

store::Catalog make_catalog() {
  std::vector<store::TableSpec> specs;
  specs.push_back(ordered(kByRange, "by_range"));
  specs.back().scheme = store::PartitionScheme::kRange;
  specs.back().range_bounds = {3000, 7000};
  specs.push_back(ordered(kByFunction, "by_function"));
  specs.back().scheme = store::PartitionScheme::kFunction;
  specs.back().partition_fn = [](uint64_t k) { return static_cast<uint32_t>(k % kNodes); };
  specs.push_back(ordered(kByHash, "by_hash"));
  specs.back().scheme = store::PartitionScheme::kHashMod;
  // The partition in the key's top byte, declared: a range inside one
  // prefix is one partition's.
  specs.push_back(ordered(kPrefixed, "prefixed"));
  specs.back().scheme = store::PartitionScheme::kFunction;
  specs.back().partition_fn = [](uint64_t k) { return static_cast<uint32_t>((k >> 56) % kNodes); };
  specs.back().partition_prefix_bits = 8;
  auto c = store::Catalog::create(std::move(specs), kNodes, 3);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c.value());
}

// Keys of kPrefixed: unit u's rows are u << 56 | i.
Key prefixed(uint64_t u, Key i) {
  return u << 56 | i;
}

// Every row of [from, from + count) with its loaded value, in key order.
void expect_rows(const Txn::Rows& rows, Key from, Key count) {
  ASSERT_EQ(rows.keys.size(), count);
  ASSERT_EQ(rows.values.size(), count * sizeof(Val));
  for (Key i = 0; i < count; ++i) {
    Val v;
    std::memcpy(&v, rows.values.data() + i * sizeof(Val), sizeof v);
    ASSERT_EQ(rows.keys[i], from + i);
    ASSERT_EQ(v.key, static_cast<int64_t>(from + i));
    ASSERT_EQ(v.twice, 2 * static_cast<int64_t>(from + i));
  }
}

// A read-only scan of the whole range sees every row; one with a limit
// the smallest keys of the range over all partitions.
void expect_whole_and_limited_scans(Engine& e, TableId t, Txn::Rows& rows) {
  EXPECT_EQ(e.run([&](Txn& tx) { return tx.scan(t, 0, kRows - 1, kRows, &rows); }, Kind::kReadOnly),
            Abort::kNone);
  expect_rows(rows, 0, kRows);
  EXPECT_EQ(
      e.run([&](Txn& tx) { return tx.scan(t, 1234, kRows - 1, 100, &rows); }, Kind::kReadOnly),
      Abort::kNone);
  expect_rows(rows, 1234, 100);
}

std::span<const uint8_t> bytes(const Val& v) {
  return {reinterpret_cast<const uint8_t*>(&v), sizeof v};
}

// The read-write (OCC) script: every table, the validation cases.
void occ_script(const store::Catalog& cat, TxnContext& c) {
  Engine& e = c.engine;
  for (TableId t : {kByRange, kByFunction, kByHash}) {
    SCOPED_TRACE("table " + std::to_string(t));
    // Read-write (one write, so the read set goes through Validate's read
    // checks with the write set locked) and read-only (ro_validate).
    Txn::Rows rows;
    EXPECT_EQ(e.run([&](Txn& tx) {
      if (Abort r = tx.scan(t, 0, kRows - 1, kRows + 10, &rows); r != Abort::kNone) return r;
      Val v = val_of(kRows - 1);
      return tx.put(t, kRows - 1, &v);  // the same value: the table stays as loaded
    }),
              Abort::kNone);
    expect_rows(rows, 0, kRows);
    expect_whole_and_limited_scans(e, t, rows);
  }
  // Validation of a large read set: a scanned row changed by another
  // transaction after the scan, or a key inserted into the range.
  store::tables::TableClient& owner = c.locator.client(ReadPath::kRpc);
  for (TableId t : {kByRange, kByFunction}) {
    SCOPED_TRACE("table " + std::to_string(t));
    const store::TableSpec& spec = *cat.find(t);
    Val changed = val_of(5000);
    changed.pad[0] = 1;
    EXPECT_EQ(e.run([&](Txn& tx) {
      Txn::Rows rows;
      if (Abort r = tx.scan(t, 0, kRows - 1, kRows, &rows); r != Abort::kNone) return r;
      EXPECT_EQ(rows.keys.size(), kRows);
      EXPECT_TRUE(owner.update(c.co, spec, 5000, bytes(changed)).is_ok());
      Val v = val_of(0);
      return tx.put(t, 0, &v);
    }),
              Abort::kVersionChanged);
    EXPECT_EQ(e.abort_table(), t);
    EXPECT_EQ(e.run([&](Txn& tx) {
      Txn::Rows rows;
      if (Abort r = tx.scan(t, 0, kRows + 100, kRows + 100, &rows); r != Abort::kNone) return r;
      EXPECT_EQ(rows.keys.size(), kRows);
      const Val extra = val_of(kRows + 7);
      EXPECT_TRUE(owner.insert(c.co, spec, kRows + 7, bytes(extra)).is_ok());
      return Abort::kNone;  // read-only: the re-scan finds the phantom
    }),
              Abort::kVersionChanged);
    EXPECT_EQ(e.abort_table(), t);
    // Put back as loaded.
    const Val orig = val_of(5000);
    EXPECT_TRUE(owner.update(c.co, spec, 5000, bytes(orig)).is_ok());
    EXPECT_TRUE(owner.remove(c.co, spec, kRows + 7).is_ok());
  }
  // A declared partition prefix: a range inside one prefix is scanned in
  // its partition, one across prefixes merges theirs.
  Txn::Rows rows;
  EXPECT_EQ(
      e.run(
          [&](Txn& tx) { return tx.scan(kPrefixed, prefixed(1, 0), prefixed(1, 99), 1000, &rows); },
          Kind::kReadOnly),
      Abort::kNone);
  expect_rows(rows, prefixed(1, 0), 100);
  EXPECT_EQ(
      e.run(
          [&](Txn& tx) { return tx.scan(kPrefixed, prefixed(0, 50), prefixed(2, 9), 1000, &rows); },
          Kind::kReadOnly),
      Abort::kNone);
  ASSERT_EQ(rows.keys.size(), 50u + 100u + 10u);
  EXPECT_EQ(rows.keys[0], prefixed(0, 50));
  EXPECT_EQ(rows.keys[50], prefixed(1, 0));
  EXPECT_EQ(rows.keys[150], prefixed(2, 0));
  EXPECT_EQ(rows.keys.back(), prefixed(2, 9));
}

// MVCC (drtmx): snapshot scans and read-write scans of 10 000 rows of
// every table — range-partitioned, and partitions whose keys interleave
// (merged in key order; their range claims name each partition) — see
// every row; a row inserted into a read-write scan's range after the scan
// aborts it (the claims raised every partition's range timestamp, so the
// insert commits above, and the phantom check finds it).
void mvcc_script(const store::Catalog& cat, TxnContext& c) {
  Engine& e = c.engine;
  store::tables::TableClient& owner = c.locator.client(ReadPath::kRpc);
  for (TableId t : {kByRange, kByFunction, kByHash}) {
    SCOPED_TRACE("table " + std::to_string(t));
    Txn::Rows rows;
    expect_whole_and_limited_scans(e, t, rows);
    EXPECT_EQ(e.run([&](Txn& tx) {
      if (Abort r = tx.scan(t, 0, kRows - 1, kRows, &rows); r != Abort::kNone) return r;
      Val v = val_of(1);
      return tx.put(t, 1, &v);
    }),
              Abort::kNone);
    expect_rows(rows, 0, kRows);
    // A phantom: a key inserted into the scanned range (in a partition
    // other than the range's first one's) after the scan.
    const store::TableSpec& spec = *cat.find(t);
    const Key extra = kRows + 8;
    EXPECT_EQ(e.run([&](Txn& tx) {
      Txn::Rows seen;
      if (Abort r = tx.scan(t, 0, kRows + 100, kRows + 100, &seen); r != Abort::kNone) return r;
      EXPECT_EQ(seen.keys.size(), kRows);
      EXPECT_TRUE(owner.insert(c.co, spec, extra, bytes(val_of(extra))).is_ok());
      Val v = val_of(2);
      return tx.put(t, 2, &v);
    }),
              Abort::kVersionChanged);
    EXPECT_TRUE(owner.remove(c.co, spec, extra).is_ok());
  }
  // A read-write scan across the prefixes of all three partitions (and no
  // snapshot read of the table, which would raise them too): its commit
  // claims every one of them (checked in run()).
  EXPECT_EQ(e.run([&](Txn& tx) {
    Txn::Rows rows;
    if (Abort r = tx.scan(kPrefixed, prefixed(0, 0), prefixed(2, 99), 1000, &rows);
        r != Abort::kNone) {
      return r;
    }
    EXPECT_EQ(rows.keys.size(), 300u);
    Val v = val_of(3);
    return tx.put(kByRange, 3, &v);
  }),
            Abort::kNone);
}

struct Outcome {
  Status status;
  // MVCC: the range timestamps of kPrefixed's partitions this node is the
  // primary of.
  std::vector<uint64_t> prefixed_range_ts;
};

Outcome run_node(const store::Catalog& cat, const std::string& preset, uint16_t node,
                 const std::string& coord, const std::string& cluster) {
  Outcome out;
  TxnNodeConfig cfg;  // the defaults: arena_bytes, coroutines, ...
  cfg.fabric.cluster = cluster;
  cfg.fabric.cluster_key = drtmx::testing::kTestClusterKey;
  cfg.fabric.node = node;
  cfg.fabric.num_nodes = kNodes;
  cfg.fabric.threads = 1;
  cfg.control.coordinator = coord;
  if (!preset.empty()) {
    auto policy = make_policy(preset, {}, true);
    if (!policy.is_ok()) {
      out.status = policy.status();
      return out;
    }
    cfg.policy = *policy;
  }
  auto n = TxnNode::start(cat, cfg);
  if (!n.is_ok()) {
    out.status = n.status();
    return out;
  }
  auto load = [&](TableId t, Key k) {
    const store::TableSpec& spec = *cat.find(t);
    if (!cat.hosts(node, spec, cat.partition_of(spec, k))) return Status::ok();
    return (*n)->store().load(spec, k, bytes(val_of(k)));
  };
  for (TableId t : {kByRange, kByFunction, kByHash}) {
    for (Key k = 0; k < kRows; ++k) {
      if (Status st = load(t, k); !st.is_ok()) {
        out.status = st;
        return out;
      }
    }
  }
  for (uint64_t u = 0; u < 3; ++u) {
    for (Key i = 0; i < 100; ++i) {
      const Key k = prefixed(u, i);
      const store::TableSpec& spec = *cat.find(kPrefixed);
      if (!cat.hosts(node, spec, cat.partition_of(spec, k))) continue;
      Val v = val_of(k);
      if (Status st = (*n)->store().load(spec, k, bytes(v)); !st.is_ok()) {
        out.status = st;
        return out;
      }
    }
  }
  if (Status st = (*n)->runtime().control().barrier("test.loaded"); !st.is_ok()) {
    out.status = st;
    return out;
  }
  Status st = (*n)->run([&](TxnContext& c) {
    if (node != 0 || c.index != 0) return;
    if (preset == "drtmx") {
      mvcc_script(cat, c);
    } else {
      occ_script(cat, c);
    }
  });
  if (!st.is_ok()) {
    out.status = st;
    return out;
  }
  out.status = (*n)->finish(std::chrono::seconds(120));
  if (const dst::MvccNode* m = (*n)->mvcc()) {
    const store::TableSpec& spec = *cat.find(kPrefixed);
    for (store::PartitionId p = 0; p < kNodes; ++p) {
      if (cat.replicas_of(spec, p, node).primary != node) continue;
      const auto* rt = m->range_ts(kPrefixed, p);
      out.prefixed_range_ts.push_back(rt ? rt->load() : 0);
    }
  }
  return out;
}

void run(const std::string& preset) {
  const store::Catalog cat = make_catalog();
  std::vector<Outcome> outs = testing::run_thread_cluster<Outcome>(
      "largescan", kNodes, [&](uint16_t n, const std::string& coord, const std::string& cluster) {
        return run_node(cat, preset, n, coord, cluster);
      });
  ASSERT_EQ(outs.size(), kNodes);
  for (uint16_t n = 0; n < kNodes; ++n) {
    EXPECT_TRUE(outs[n].status.is_ok()) << "node " << n << ": " << outs[n].status.to_string();
    if (preset != "drtmx") continue;
    EXPECT_EQ(outs[n].prefixed_range_ts.size(), 1u) << "node " << n;
    for (uint64_t ts : outs[n].prefixed_range_ts) EXPECT_GT(ts, 0u) << "node " << n;
  }
}

// TxnNodeConfig's default policy (one-sided reads, CAS locks, READ checks).
TEST(LargeScan, DefaultConfigScansEveryPartition) {
  run("");
}

// Read and check paths by RPC.
TEST(LargeScan, RpcPaths) {
  run("fasst");
}

TEST(LargeScan, SnapshotAndMvcc) {
  run("drtmx");
}

}  // namespace
}  // namespace drtmx::txn
