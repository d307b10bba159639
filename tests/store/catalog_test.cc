// Catalog: spec validation (one case per rule), partition functions
// (hash-mod spread, range bounds, function clamping, replicated) and the
// placement of primaries and backups.
#include "store/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "store/hash/bucket.h"
#include "store/placement.h"

namespace drtmx::store {
namespace {

constexpr uint64_t kMaxKey = std::numeric_limits<uint64_t>::max();

TableSpec hash_table(TableId id, std::string name, uint32_t partitions) {
  TableSpec t;
  t.id = id;
  t.name = std::move(name);
  t.kind = TableKind::kHash;
  t.value_size = 64;
  t.capacity = 1000;
  t.scheme = PartitionScheme::kHashMod;
  t.partitions = partitions;
  return t;
}

TableSpec range_table(TableId id, std::string name, std::vector<uint64_t> bounds) {
  TableSpec t;
  t.id = id;
  t.name = std::move(name);
  t.kind = TableKind::kOrdered;
  t.value_size = 32;
  t.capacity = 1000;
  t.scheme = PartitionScheme::kRange;
  t.partitions = static_cast<uint32_t>(bounds.size() + 1);
  t.range_bounds = std::move(bounds);
  return t;
}

Catalog make(std::vector<TableSpec> specs, uint16_t nodes, uint16_t replicas) {
  Result<Catalog> c = Catalog::create(std::move(specs), nodes, replicas);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? std::move(c.value()) : Catalog();
}

// Checks every placement property for table `t` of `c`.
void check_placement(const Catalog& c, const TableSpec& t) {
  const uint16_t nodes = c.nodes();
  const uint16_t replicas = c.replicas();
  const uint32_t parts = c.partitions(t);
  std::vector<std::vector<PartitionId>> want_hosted(nodes), want_primaries(nodes);
  for (PartitionId p = 0; p < parts; ++p) {
    SCOPED_TRACE("partition " + std::to_string(p));
    const PartitionReplicas r = c.replicas_of(t, p, /*local=*/0);
    EXPECT_EQ(r.primary, p % nodes);
    ASSERT_EQ(r.backup_count, replicas - 1);
    std::set<NodeId16> copies{r.primary};
    for (uint16_t i = 0; i < r.backup_count; ++i) {
      EXPECT_EQ(r.backups[i], (p + 1 + i) % nodes) << "backup " << i;
      EXPECT_NE(r.backups[i], r.primary);
      copies.insert(r.backups[i]);
    }
    EXPECT_EQ(copies.size(), replicas) << "copies must be on distinct nodes";
    int hosting = 0;
    for (NodeId16 n = 0; n < nodes; ++n) {
      const bool h = c.hosts(n, t, p);
      EXPECT_EQ(h, copies.count(n) == 1) << "node " << n;
      if (h) {
        ++hosting;
        want_hosted[n].push_back(p);
      }
    }
    EXPECT_EQ(hosting, replicas);
    want_primaries[r.primary].push_back(p);
  }
  for (NodeId16 n = 0; n < nodes; ++n) {
    EXPECT_EQ(c.hosted(n, t), want_hosted[n]) << "node " << n;
    EXPECT_EQ(c.primaries(n, t), want_primaries[n]) << "node " << n;
  }
  EXPECT_TRUE(c.hosted(nodes, t).empty()) << "a node outside the cluster hosts nothing";
  EXPECT_FALSE(c.hosts(0, t, parts)) << "no partition past the last";
}

TEST(CatalogPlacement, ThreeNodesThreeReplicas) {
  Catalog c = make({hash_table(1, "t", 7)}, 3, 3);
  const TableSpec& t = *c.find(1);
  check_placement(c, t);
  // Every node keeps every partition.
  for (NodeId16 n = 0; n < 3; ++n) EXPECT_EQ(c.hosted(n, t).size(), 7u);
  const PartitionReplicas r = c.replicas_of(t, 5, 0);
  EXPECT_EQ(r.primary, 2);
  EXPECT_EQ(r.backups[0], 0);
  EXPECT_EQ(r.backups[1], 1);
}

// Failover: the catalog's chain of each partition restricted to the live
// nodes, the first live copy primary; Placement answers it through one
// atomic and the catalog's own answer while every node lives.
TEST(CatalogPlacement, LiveNodesPromoteTheFirstLiveCopy) {
  Catalog c = make({hash_table(1, "t", 8)}, 4, 3);
  const TableSpec& t = *c.find(1);
  const uint64_t all = 0xF;
  for (PartitionId p = 0; p < 8; ++p) {
    const PartitionReplicas a = c.replicas_of(t, p, 0), b = c.replicas_of(t, p, 0, all);
    EXPECT_EQ(a.primary, b.primary);
    EXPECT_EQ(a.backup_count, b.backup_count);
  }
  // Node 1 gone: partition 1 (chain 1, 2, 3) -> primary 2, backup 3;
  // partition 0 (chain 0, 1, 2) -> primary 0, backup 2; partition 2
  // (chain 2, 3, 0) keeps its 3 copies.
  const uint64_t live = all & ~uint64_t{2};
  PartitionReplicas r = c.replicas_of(t, 1, 0, live);
  EXPECT_EQ(r.primary, 2);
  ASSERT_EQ(r.backup_count, 1);
  EXPECT_EQ(r.backups[0], 3);
  r = c.replicas_of(t, 0, 0, live);
  EXPECT_EQ(r.primary, 0);
  ASSERT_EQ(r.backup_count, 1);
  EXPECT_EQ(r.backups[0], 2);
  EXPECT_EQ(c.replicas_of(t, 2, 0, live).backup_count, 2);
  // Every copy of partition 1 gone.
  r = c.replicas_of(t, 1, 0, 0x1);
  EXPECT_EQ(r.primary, kNoNode);
  EXPECT_EQ(r.backup_count, 0);
  Placement pl(c);
  EXPECT_FALSE(pl.degraded());
  EXPECT_EQ(pl.primary(t, 1, 0), 1);
  pl.set_live(live);
  EXPECT_TRUE(pl.degraded());
  EXPECT_EQ(pl.primary(t, 1, 0), 2);
  EXPECT_EQ(pl.replicas_of(t, 5, 0).primary, 2);  // chain 1, 2, 3 again
}

TEST(CatalogPlacement, FourNodesTwoReplicas) {
  Catalog c = make({hash_table(1, "t", 10)}, 4, 2);
  const TableSpec& t = *c.find(1);
  check_placement(c, t);
  EXPECT_EQ(c.primaries(1, t), (std::vector<PartitionId>{1, 5, 9}));
  // Node 1: primary of 1, 5, 9; backup of 0, 4, 8.
  EXPECT_EQ(c.hosted(1, t), (std::vector<PartitionId>{0, 1, 4, 5, 8, 9}));
  const PartitionReplicas r = c.replicas_of(t, 3, 0);
  EXPECT_EQ(r.primary, 3);
  EXPECT_EQ(r.backups[0], 0) << "backups wrap around";
}

TEST(CatalogPlacement, FewerPartitionsThanNodesAndSingleCopy) {
  Catalog c = make({hash_table(1, "t", 2)}, 5, 1);
  const TableSpec& t = *c.find(1);
  check_placement(c, t);
  EXPECT_TRUE(c.hosted(4, t).empty());
  EXPECT_EQ(c.replicas_of(t, 1, 0).backup_count, 0);
}

TEST(CatalogPlacement, ReplicatedTableOnEveryNodePrimaryIsLocal) {
  TableSpec t = hash_table(2, "item", 99);  // partitions ignored
  t.scheme = PartitionScheme::kReplicated;
  Catalog c = make({t}, 4, 2);
  const TableSpec& r = *c.find("item");
  EXPECT_EQ(c.partitions(r), 1u);
  for (NodeId16 n = 0; n < 4; ++n) {
    const PartitionReplicas pr = c.replicas_of(r, 0, n);
    EXPECT_EQ(pr.primary, n);
    EXPECT_EQ(pr.backup_count, 0);
    EXPECT_TRUE(c.hosts(n, r, 0));
    EXPECT_EQ(c.hosted(n, r), std::vector<PartitionId>{0});
    EXPECT_EQ(c.primaries(n, r), std::vector<PartitionId>{0});
  }
  EXPECT_FALSE(c.hosts(0, r, 1));
  EXPECT_EQ(c.partition_of(r, 0), 0u);
  EXPECT_EQ(c.partition_of(r, kMaxKey), 0u);
  EXPECT_EQ(c.partition_of(r, 123456789), 0u);
}

TEST(CatalogHashMod, SequentialKeysSpreadEvenly) {
  Catalog c = make({hash_table(1, "t", 8)}, 2, 1);
  const TableSpec& t = *c.find(1);
  constexpr uint64_t kKeys = 100'000;
  std::vector<uint64_t> count(8, 0);
  for (uint64_t k = 0; k < kKeys; ++k) {
    const PartitionId p = c.partition_of(t, k);
    ASSERT_LT(p, 8u);
    ++count[p];
  }
  const double even = kKeys / 8.0;
  for (uint32_t p = 0; p < 8; ++p) {
    EXPECT_GT(count[p], even * 0.9) << "partition " << p;
    EXPECT_LT(count[p], even * 1.1) << "partition " << p;
  }
}

// The partition hash must be independent of the bucket hash: the keys of one
// partition have to reach every residue of bucket_index() % partitions.
TEST(CatalogHashMod, PartitionIndependentOfBucketIndex) {
  Catalog c = make({hash_table(1, "t", 8)}, 2, 1);
  const TableSpec& t = *c.find(1);
  std::vector<uint64_t> residues(8, 0);
  uint64_t in_partition = 0;
  for (uint64_t k = 0; k < 100'000; ++k) {
    if (c.partition_of(t, k) != 3) continue;
    ++in_partition;
    ++residues[hash::bucket_index(k, 1024) % 8];
  }
  for (uint32_t r = 0; r < 8; ++r) {
    EXPECT_GT(residues[r], in_partition / 8 * 0.8) << "bucket residue " << r;
  }
}

TEST(CatalogRange, KeysAtAroundAndBetweenBounds) {
  const std::vector<uint64_t> bounds{1000, 2000, uint64_t{1} << 40};
  Catalog c = make({range_table(3, "r", bounds)}, 2, 1);
  const TableSpec& t = *c.find(3);
  ASSERT_EQ(c.partitions(t), 4u);
  EXPECT_EQ(c.partition_of(t, 0), 0u);
  EXPECT_EQ(c.partition_of(t, 999), 0u);
  EXPECT_EQ(c.partition_of(t, 1000), 1u);
  EXPECT_EQ(c.partition_of(t, 1999), 1u);
  EXPECT_EQ(c.partition_of(t, 2000), 2u);
  EXPECT_EQ(c.partition_of(t, (uint64_t{1} << 40) - 1), 2u);
  EXPECT_EQ(c.partition_of(t, uint64_t{1} << 40), 3u);
  EXPECT_EQ(c.partition_of(t, kMaxKey), 3u);

  EXPECT_EQ(c.range_start(t, 0), 0u);
  for (PartitionId p = 1; p < 4; ++p) {
    EXPECT_EQ(c.range_start(t, p), bounds[p - 1]);
    EXPECT_EQ(c.partition_of(t, c.range_start(t, p)), p) << "range_start is in its partition";
    EXPECT_EQ(c.partition_of(t, c.range_start(t, p) - 1), p - 1) << "the key before is not";
  }
}

TEST(CatalogRange, KeyOrderIsPartitionOrder) {
  std::vector<uint64_t> bounds;
  for (uint64_t p = 1; p < 16; ++p)
    bounds.push_back(static_cast<uint64_t>((__uint128_t{p} << 64) / 16));
  Catalog c = make({range_table(3, "r", bounds)}, 3, 2);
  const TableSpec& t = *c.find(3);
  std::vector<uint64_t> keys{0, 1, kMaxKey, kMaxKey - 1};
  for (uint64_t b : bounds) {
    keys.push_back(b - 1);
    keys.push_back(b);
    keys.push_back(b + 1);
  }
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 2000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    keys.push_back(x);
  }
  std::sort(keys.begin(), keys.end());
  PartitionId prev = 0;
  for (uint64_t k : keys) {
    const PartitionId p = c.partition_of(t, k);
    ASSERT_GE(p, prev) << "key " << k;
    ASSERT_GE(k, c.range_start(t, p)) << "key " << k;
    prev = p;
  }
  EXPECT_EQ(prev, 15u);
}

TEST(CatalogRange, SinglePartitionHasNoBounds) {
  Catalog c = make({range_table(3, "r", {})}, 1, 1);
  const TableSpec& t = *c.find(3);
  EXPECT_EQ(c.partition_of(t, 0), 0u);
  EXPECT_EQ(c.partition_of(t, kMaxKey), 0u);
  EXPECT_EQ(c.range_start(t, 0), 0u);
}

TEST(CatalogFunction, HighBitsAndClamping) {
  TableSpec t = hash_table(4, "stock", 4);
  t.scheme = PartitionScheme::kFunction;
  t.partition_fn = [](uint64_t k) { return static_cast<uint32_t>(k >> 40); };
  Catalog c = make({t}, 2, 2);
  const TableSpec& s = *c.find("stock");
  EXPECT_EQ(c.partition_of(s, 0), 0u);
  EXPECT_EQ(c.partition_of(s, (uint64_t{2} << 40) + 77), 2u);
  EXPECT_EQ(c.partition_of(s, (uint64_t{3} << 40) | 0xFFFFFFFFFFull), 3u);
  // Out of range (a caller bug): clamped to the last partition.
  EXPECT_EQ(c.partition_of(s, uint64_t{4} << 40), 3u);
  EXPECT_EQ(c.partition_of(s, kMaxKey), 3u);

  std::vector<uint64_t> good;
  for (uint64_t w = 0; w < 4; ++w) good.push_back((w << 40) + 5);
  EXPECT_TRUE(c.check_partition_fn(s, good).is_ok());

  std::vector<uint64_t> bad = good;
  bad.push_back((uint64_t{9} << 40) + 1);
  bad.push_back(uint64_t{5} << 40);  // also bad, but not the first
  Status st = c.check_partition_fn(s, bad);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'stock'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("partition 9"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(std::to_string((uint64_t{9} << 40) + 1)), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("partitions 4"), std::string::npos) << st.message();
}

// The partitions a scan of [from, to] must visit.
TEST(CatalogScanPartitions, PerScheme) {
  using P = std::vector<PartitionId>;
  TableSpec hm = hash_table(1, "hm", 4);
  TableSpec fn = hash_table(2, "fn", 4);
  fn.scheme = PartitionScheme::kFunction;
  fn.partition_fn = [](uint64_t k) { return static_cast<uint32_t>((k >> 56) % 4); };
  TableSpec pre = fn;
  pre.id = 3;
  pre.name = "pre";
  pre.partition_prefix_bits = 8;  // declared: only the top byte matters
  TableSpec rg = hash_table(4, "rg", 3);
  rg.scheme = PartitionScheme::kRange;
  rg.range_bounds = {100, 200};
  TableSpec rep = hash_table(5, "rep", 1);
  rep.scheme = PartitionScheme::kReplicated;
  Catalog c = make({hm, fn, pre, rg, rep}, 2, 1);
  P out;
  auto parts = [&](TableId t, uint64_t from, uint64_t to) {
    c.scan_partitions(*c.find(t), from, to, &out);
    return out;
  };
  const uint64_t u1 = uint64_t{1} << 56;
  EXPECT_EQ(parts(1, 5, 5), (P{0, 1, 2, 3}));          // kHashMod: every partition
  EXPECT_EQ(parts(2, u1, u1 + 9), (P{0, 1, 2, 3}));    // no prefix declared: every one
  EXPECT_EQ(parts(3, u1, u1 + 9), (P{1}));             // inside one prefix
  EXPECT_EQ(parts(3, u1 - 1, u1), (P{0, 1}));          // two prefixes
  EXPECT_EQ(parts(3, 6 * u1, 7 * u1 + 5), (P{2, 3}));  // prefixes 6, 7 -> partitions 2, 3
  EXPECT_EQ(parts(3, 0, kMaxKey), (P{0, 1, 2, 3}));    // as many prefixes as partitions
  EXPECT_EQ(parts(4, 50, 150), (P{0, 1}));             // kRange: from's .. to's
  EXPECT_EQ(parts(4, 150, kMaxKey), (P{1, 2}));
  EXPECT_EQ(parts(5, 0, kMaxKey), (P{0}));  // kReplicated
  EXPECT_EQ(parts(4, 9, 8), P{});           // empty range
}

TEST(CatalogFunction, CheckIsOkForOtherSchemes) {
  Catalog c = make({hash_table(1, "h", 4)}, 1, 1);
  EXPECT_TRUE(c.check_partition_fn(*c.find(1), {0, 1, kMaxKey}).is_ok());
}

TEST(CatalogFind, ByIdAndName) {
  Catalog c = make({hash_table(7, "warehouse", 2), range_table(4095, "orders", {10}),
                    hash_table(0, "district", 2)},
                   2, 1);
  ASSERT_EQ(c.tables().size(), 3u);
  EXPECT_EQ(c.nodes(), 2);
  EXPECT_EQ(c.replicas(), 1);
  ASSERT_NE(c.find(7), nullptr);
  EXPECT_EQ(c.find(7)->name, "warehouse");
  ASSERT_NE(c.find(4095), nullptr);
  EXPECT_EQ(c.find(4095)->name, "orders");
  ASSERT_NE(c.find(TableId{0}), nullptr);
  EXPECT_EQ(c.find(TableId{0})->name, "district");
  EXPECT_EQ(c.find(1), nullptr);
  EXPECT_EQ(c.find(4096), nullptr);
  EXPECT_EQ(c.find(kNoTable), nullptr);
  ASSERT_NE(c.find("orders"), nullptr);
  EXPECT_EQ(c.find("orders")->id, 4095u);
  EXPECT_EQ(c.find(std::string("district")), c.find(TableId{0}));
  EXPECT_EQ(c.find("stock"), nullptr);

  Catalog empty = make({}, 1, 1);
  EXPECT_EQ(empty.find(TableId{0}), nullptr);
  EXPECT_EQ(empty.find("x"), nullptr);
}

// --- validation: one case per rule -----------------------------------------

// Expects create() to fail with kInvalidArgument and a message containing
// every string of `parts`.
void expect_invalid(std::vector<TableSpec> specs, uint16_t nodes, uint16_t replicas,
                    const std::vector<std::string>& parts) {
  Result<Catalog> c = Catalog::create(std::move(specs), nodes, replicas);
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument) << c.status().to_string();
  for (const std::string& p : parts) {
    EXPECT_NE(c.status().message().find(p), std::string::npos)
        << "missing \"" << p << "\" in: " << c.status().message();
  }
}

TEST(CatalogValidation, DuplicateId) {
  expect_invalid({hash_table(5, "a", 1), hash_table(5, "b", 1)}, 1, 1,
                 {"table 'b'", "id 5", "'a'", "unique"});
}

TEST(CatalogValidation, DuplicateName) {
  expect_invalid({hash_table(5, "a", 1), hash_table(6, "a", 1)}, 1, 1,
                 {"table 'a'", "id 6", "name", "unique"});
}

TEST(CatalogValidation, IdTooLarge) {
  expect_invalid({hash_table(4096, "big", 1)}, 1, 1, {"table 'big'", "id 4096", "< 4096"});
}

TEST(CatalogValidation, EmptyNameNamedById) {
  expect_invalid({hash_table(12, "", 1)}, 1, 1, {"table id 12", "name"});
}

TEST(CatalogValidation, ValueSizeZero) {
  TableSpec t = hash_table(1, "stock", 1);
  t.value_size = 0;
  expect_invalid({t}, 1, 1, {"table 'stock': value_size 0; must be 1..4096"});
}

TEST(CatalogValidation, ValueSizeTooLarge) {
  TableSpec t = hash_table(1, "stock", 1);
  t.value_size = kMaxValueSize + 1;
  expect_invalid({t}, 1, 1, {"table 'stock'", "value_size 4097", "1..4096"});
}

TEST(CatalogValidation, CapacityZero) {
  TableSpec t = hash_table(1, "stock", 1);
  t.capacity = 0;
  expect_invalid({t}, 1, 1, {"table 'stock'", "capacity 0", "> 0"});
}

TEST(CatalogValidation, PartitionsZero) {
  expect_invalid({hash_table(1, "stock", 0)}, 1, 1, {"table 'stock'", "partitions 0", ">= 1"});
}

TEST(CatalogValidation, RangeBoundsWrongCount) {
  TableSpec t = range_table(1, "orders", {10, 20});
  t.partitions = 4;
  expect_invalid({t}, 1, 1, {"table 'orders'", "range_bounds has 2", "needs exactly 3"});
}

TEST(CatalogValidation, RangeBoundsNotIncreasing) {
  expect_invalid({range_table(1, "orders", {10, 20, 20})}, 1, 1,
                 {"table 'orders'", "range_bounds[2]", "strictly increasing"});
  expect_invalid({range_table(1, "orders", {10, 5})}, 1, 1,
                 {"table 'orders'", "range_bounds[1]", "strictly increasing"});
}

TEST(CatalogValidation, RangeBoundZero) {
  expect_invalid({range_table(1, "orders", {0, 5})}, 1, 1,
                 {"table 'orders'", "range_bounds[0] = 0", "> 0"});
}

TEST(CatalogValidation, MissingPartitionFn) {
  TableSpec t = hash_table(1, "stock", 4);
  t.scheme = PartitionScheme::kFunction;
  expect_invalid({t}, 1, 1, {"table 'stock'", "partition_fn"});
}

TEST(CatalogValidation, InlineValuesOnHashTable) {
  TableSpec t = hash_table(1, "stock", 4);
  t.inline_values = true;
  expect_invalid({t}, 1, 1, {"table 'stock'", "inline_values", "hash table"});
}

TEST(CatalogValidation, IndexOfAbsentTable) {
  TableSpec ix = range_table(2, "by_name", {100});
  ix.index_of = 9;
  expect_invalid({range_table(1, "customer", {100}), ix}, 1, 1,
                 {"table 'by_name'", "index_of 9", "names no table"});
}

TEST(CatalogValidation, IndexOfItself) {
  TableSpec ix = range_table(2, "by_name", {100});
  ix.index_of = 2;
  expect_invalid({ix}, 1, 1, {"table 'by_name'", "index_of 2", "itself"});
}

TEST(CatalogValidation, IndexNotOrdered) {
  TableSpec base = hash_table(1, "customer", 2);
  TableSpec ix = hash_table(2, "by_name", 2);
  ix.index_of = 1;
  expect_invalid({base, ix}, 1, 1, {"table 'by_name'", "index_of", "'customer'", "kOrdered"});
}

TEST(CatalogValidation, IndexPartitionedDifferently) {
  // Different scheme.
  {
    TableSpec base = hash_table(1, "customer", 2);
    TableSpec ix = range_table(2, "by_name", {100});
    ix.index_of = 1;
    expect_invalid({base, ix}, 1, 1,
                   {"table 'by_name'", "'customer'", "partitioned differently", "scheme"});
  }
  // Different partition count (index listed before its base: order is free).
  {
    TableSpec base = hash_table(1, "customer", 4);
    TableSpec ix = hash_table(2, "by_name", 2);
    ix.kind = TableKind::kOrdered;
    ix.index_of = 1;
    expect_invalid(
        {ix, base}, 1, 1,
        {"table 'by_name'", "'customer'", "partitioned differently", "partitions 2 vs 4"});
  }
  // Different bounds.
  {
    TableSpec ix = range_table(2, "by_name", {100, 300});
    ix.index_of = 1;
    expect_invalid({range_table(1, "customer", {100, 200}), ix}, 1, 1,
                   {"table 'by_name'", "'customer'", "range_bounds differ"});
  }
}

TEST(CatalogValidation, IndexPartitionedLikeBaseIsOk) {
  TableSpec ix = range_table(2, "by_name", {100, 200});
  ix.index_of = 1;
  TableSpec hix = hash_table(4, "by_w", 4);
  hix.kind = TableKind::kOrdered;
  hix.index_of = 3;
  Result<Catalog> c = Catalog::create(
      {range_table(1, "customer", {100, 200}), ix, hash_table(3, "orders", 4), hix}, 3, 2);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  // Same partitioning means the same owner for every key.
  const TableSpec& b = *c->find(1);
  const TableSpec& i = *c->find(2);
  for (uint64_t k : {uint64_t{0}, uint64_t{150}, uint64_t{250}, kMaxKey}) {
    EXPECT_EQ(c->partition_of(b, k), c->partition_of(i, k));
  }
}

TEST(CatalogValidation, NoNodes) {
  expect_invalid({hash_table(1, "t", 1)}, 0, 1, {"nodes 0"});
}

TEST(CatalogValidation, ReplicasZero) {
  expect_invalid({hash_table(1, "t", 1)}, 3, 0, {"--replicas=0", "1..3"});
}

TEST(CatalogValidation, ReplicasAboveMax) {
  expect_invalid({hash_table(1, "t", 1)}, 8, 4, {"--replicas=4", "1..3"});
}

TEST(CatalogValidation, ReplicasAboveNodes) {
  expect_invalid({hash_table(1, "t", 1)}, 2, 3, {"--replicas=3 needs at least 3 nodes (have 2)"});
}

TEST(CatalogScanPartitions, PrefixBitsAreChecked) {
  TableSpec t = hash_table(1, "t", 2);
  t.scheme = PartitionScheme::kFunction;
  t.partition_fn = [](uint64_t) { return 0u; };
  t.partition_prefix_bits = 65;
  expect_invalid({t}, 1, 1, {"table 't'", "partition_prefix_bits 65"});
}

}  // namespace
}  // namespace drtmx::store
