// Catalog: the tables of a deployment — what each one holds, how its keys
// are partitioned, and which nodes keep each partition's primary and backup
// copies (docs/architecture.md). Every node builds the same catalog from the same
// specs (the benchmark or the user's program defines them), so placement
// and partition functions need no exchange: they are pure functions of the
// specs, the node count and the replica count.
//
// Placement. Partition p of a partitioned table has its primary on node
// p % nodes and its backups on the next replicas-1 nodes:
// (p + 1) % nodes, ..., (p + replicas - 1) % nodes. A kReplicated table
// (read-only, e.g. TPC-C ITEM) has one partition, present on every node;
// each node reads its own copy, so its "primary" is the asking node and it
// has no backups (it is loaded on every node and never written by
// transactions): hosted() and primaries() are {0} on every node.
//
// Keys are 64-bit. Partition functions:
//   kHashMod   partition = hash_mix(key, seed) % partitions (base/hash.h;
//              the seed, in catalog.cc, differs from hash/bucket.h's so the
//              keys of one partition still spread over all its buckets);
//   kRange     partition p holds keys in [bound[p-1], bound[p]) where
//              range_bounds = bound[0..P-2] strictly increasing, with
//              bound[-1] = 0 and bound[P-1] = 2^64 implied (so bound[0]
//              must be > 0: no partition is empty) — the layout
//              ordered tables need for scans that continue on the next
//              partition (key order = partition order);
//   kFunction  partition = partition_fn(key); the function must be pure and
//              identical on every node (e.g. "the warehouse in the key's
//              high bits"); a result >= partitions is a caller bug reported
//              by check_partition_fn() and clamped by partition_of();
//   kReplicated one partition (0).
//
// Secondary indexes are ordered tables with `index_of` = the base table's
// id: their values are addresses of the base table's records (layout in the
// tables layer). An index must be partitioned exactly like its base table
// (same scheme, partition count, bounds), so an index entry and the record
// it points to have the same owner. For kFunction only the scheme and count
// can be checked (std::function values do not compare): giving the index the
// base table's function is the caller's job.
//
// Thread safety: immutable after create(); share it freely.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::store {

using TableId = uint32_t;
using PartitionId = uint32_t;
using NodeId16 = uint16_t;  // same as r2::NodeId; store/ headers avoid r2 includes here

constexpr TableId kNoTable = ~TableId{0};

// One key for a (table, partition) pair, e.g. of a map of partitions.
inline uint64_t partition_key(TableId t, PartitionId p) {
  return (uint64_t{t} << 32) | p;
}
constexpr uint16_t kMaxReplicas = 3;
constexpr NodeId16 kNoNode = 0xFFFF;

enum class TableKind : uint8_t { kHash, kOrdered };
enum class PartitionScheme : uint8_t { kHashMod, kRange, kFunction, kReplicated };

struct TableSpec {
  TableId id = 0;    // unique, < 4096 (region ids are derived from it)
  std::string name;  // unique, non-empty, for reports and errors
  TableKind kind = TableKind::kHash;
  uint32_t value_size = 0;  // fixed value bytes, 1 .. kMaxValueSize
  // Records one partition is sized for at start (> 0): a hash table's head
  // buckets, the rows a loader puts in. Not a limit: a partition grows
  // past it as rows are inserted (tables/plan.h, "Growth").
  uint64_t capacity = 0;
  PartitionScheme scheme = PartitionScheme::kHashMod;
  uint32_t partitions = 1;                         // >= 1; ignored for kReplicated
  std::vector<uint64_t> range_bounds;              // kRange: partitions - 1 bounds
  std::function<uint32_t(uint64_t)> partition_fn;  // kFunction
  // kFunction: partition_fn(key) depends on the key's top
  // `partition_prefix_bits` bits only (1..64; 0 = not declared: any bit
  // may matter). E.g. 16 when the partition is the warehouse in bits
  // 48..63. What scans of ordered tables rely on to visit only the
  // partitions a key range can reach (scan_partitions); without it a
  // scan of a kFunction table visits every partition.
  uint8_t partition_prefix_bits = 0;
  // Ordered tables: true = the value is stored in the index leaf (fixed
  // size, no record, no lock: for read-mostly tables and store-bench);
  // false = records in the heap, the leaf holds the record address (what
  // transactions need: lock word, version, identity).
  bool inline_values = false;
  TableId index_of = kNoTable;  // this ordered table indexes that table
  // false: no transaction deletes from this table (Txn::remove aborts with
  // kNotSupported there). Durable nodes then keep no per-key order of its
  // changes' release (txn/log/key_order.h), which only a delete needs.
  bool deletes = true;
};

constexpr uint32_t kMaxValueSize = 4096;
// Table ids are below it (region ids are derived from them: tables/plan.h).
constexpr TableId kMaxTables = 4096;

// The copies of one partition.
struct PartitionReplicas {
  NodeId16 primary = 0;
  uint16_t backup_count = 0;
  std::array<NodeId16, kMaxReplicas - 1> backups{};
};

class Catalog {
 public:
  // Validates every spec and the cluster shape; errors name the table and
  // the field ("table 'stock': value_size 0; must be 1..4096"):
  // duplicate ids or names, id >= 4096, bad value size / capacity /
  // partitions, range bounds not P-1 strictly increasing values, missing
  // partition_fn, index_of naming an absent table or a differently
  // partitioned one, an index that is not ordered, inline_values on a hash
  // table, nodes == 0, replicas outside 1..min(kMaxReplicas, nodes).
  // Every error is kInvalidArgument (duplicates included).
  static Result<Catalog> create(std::vector<TableSpec> tables, uint16_t nodes, uint16_t replicas);

  Catalog() = default;

  uint16_t nodes() const { return nodes_; }
  uint16_t replicas() const { return replicas_; }
  const std::vector<TableSpec>& tables() const { return tables_; }
  // nullptr when absent.
  const TableSpec* find(TableId id) const {  // inline: once per row on the read paths
    if (id >= by_id_.size() || by_id_[id] < 0) return nullptr;
    return &tables_[static_cast<size_t>(by_id_[id])];
  }
  const TableSpec* find(const std::string& name) const;

  // The most partition copies (of all tables together) one node hosts:
  // what the address space of a node's tables is shared by (tables/plan.h).
  uint64_t max_copies_per_node() const { return max_copies_per_node_; }

  // Partitions of the table (1 for kReplicated).
  uint32_t partitions(const TableSpec& t) const;
  PartitionId partition_of(const TableSpec& t, uint64_t key) const;
  // The smallest key of partition p (kRange; 0 for other schemes): where a
  // scan that ran off the end of partition p - 1 continues.
  uint64_t range_start(const TableSpec& t, PartitionId p) const;
  // The partitions that may hold keys in [from, to] (from <= to),
  // ascending, without duplicates: kRange the partitions of from .. to;
  // kReplicated {0}; kFunction with partition_prefix_bits the partitions of
  // the prefixes from's .. to's (every partition when there are at least
  // as many prefixes as partitions); kHashMod and kFunction without it,
  // every partition.
  // Into *out (cleared; its capacity reused).
  void scan_partitions(const TableSpec& t, uint64_t from, uint64_t to,
                       std::vector<PartitionId>* out) const;

  // Primary and backups of partition p < partitions(t); `local` is the
  // asking node (used by kReplicated).
  PartitionReplicas replicas_of(const TableSpec& t, PartitionId p, NodeId16 local) const;
  // The same after failures: only the nodes whose bit is set in `live` (bit
  // n = node n; clusters of at most 64 nodes) keep their copies; the first
  // live node of the partition's chain (primary, backup 1, ...) is the
  // primary, the live ones after it the backups. A partition without a live
  // copy gets primary kNoNode and no backups. `live` with every node set
  // gives replicas_of(t, p, local).
  PartitionReplicas replicas_of(const TableSpec& t, PartitionId p, NodeId16 local,
                                uint64_t live) const;
  // True when `node` keeps a copy (primary or backup) of partition p.
  bool hosts(NodeId16 node, const TableSpec& t, PartitionId p) const;
  // The partitions `node` keeps a copy of, ascending.
  std::vector<PartitionId> hosted(NodeId16 node, const TableSpec& t) const;
  // The partitions whose primary is `node`, ascending.
  std::vector<PartitionId> primaries(NodeId16 node, const TableSpec& t) const;

  // Applies a kFunction table's partition_fn to `samples` keys and reports
  // the first key mapped outside [0, partitions) (kInvalidArgument). OK for
  // other schemes, whose partitions are in range by construction.
  Status check_partition_fn(const TableSpec& t, const std::vector<uint64_t>& samples) const;

 private:
  std::vector<TableSpec> tables_;
  std::vector<int32_t> by_id_;  // id -> index in tables_, -1 when absent
  uint16_t nodes_ = 0;
  uint16_t replicas_ = 0;
  uint64_t max_copies_per_node_ = 0;
};

}  // namespace drtmx::store
