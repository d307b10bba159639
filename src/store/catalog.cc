#include "store/catalog.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <utility>

#include "base/hash.h"

namespace drtmx::store {

namespace {

// kHashMod: partition = hash_mix(key, kPartitionSeed) % partitions. The seed
// must differ from the one hash/bucket.h's bucket_index() uses: with the same
// mixer output, the keys of one partition would all share bucket_index() % P
// and use only 1/P of that partition's buckets (catalog_test checks this).
constexpr uint64_t kPartitionSeed = 0x2545F4914F6CDD1Cull;

// Region ids are derived from table ids (store/tables/plan.h).
constexpr TableId kMaxTableId = kMaxTables;

const char* scheme_name(PartitionScheme s) {
  switch (s) {
    case PartitionScheme::kHashMod:
      return "kHashMod";
    case PartitionScheme::kRange:
      return "kRange";
    case PartitionScheme::kFunction:
      return "kFunction";
    case PartitionScheme::kReplicated:
      return "kReplicated";
  }
  return "unknown";
}

// "table 'stock'", or "table id 7" when the name is empty.
std::string label(const TableSpec& t) {
  if (t.name.empty()) return "table id " + std::to_string(t.id);
  return "table '" + t.name + "'";
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Status bad(const TableSpec& t, const std::string& what) {
  return invalid_argument(label(t) + ": " + what);
}

// Checks of one spec on its own (no other table involved).
Status validate_one(const TableSpec& t) {
  if (t.id >= kMaxTableId) {
    return bad(t, "id " + std::to_string(t.id) + "; must be < " + std::to_string(kMaxTableId) +
                      " (region ids are derived from it)");
  }
  if (t.name.empty()) return bad(t, "name is empty; give every table a unique non-empty name");
  if (t.kind != TableKind::kHash && t.kind != TableKind::kOrdered) {
    return bad(t, "kind " + std::to_string(static_cast<int>(t.kind)) +
                      " is unknown; use kHash or kOrdered");
  }
  if (t.value_size == 0 || t.value_size > kMaxValueSize) {
    return bad(t, "value_size " + std::to_string(t.value_size) + "; must be 1.." +
                      std::to_string(kMaxValueSize));
  }
  if (t.capacity == 0) {
    return bad(t, "capacity 0; must be > 0 (the most records one partition holds)");
  }
  if (t.inline_values && t.kind == TableKind::kHash) {
    return bad(t,
               "inline_values on a hash table; only kOrdered tables keep values in the index "
               "leaf (clear inline_values or make the table kOrdered)");
  }
  switch (t.scheme) {
    case PartitionScheme::kReplicated:
      return Status::ok();  // `partitions` is ignored
    case PartitionScheme::kHashMod:
    case PartitionScheme::kRange:
    case PartitionScheme::kFunction:
      break;
    default:
      return bad(t, "scheme " + std::to_string(static_cast<int>(t.scheme)) +
                        " is unknown; use kHashMod, kRange, kFunction or kReplicated");
  }
  if (t.partitions == 0) return bad(t, "partitions 0; must be >= 1");
  if (t.scheme == PartitionScheme::kRange) {
    const auto& b = t.range_bounds;
    if (b.size() != t.partitions - size_t{1}) {
      return bad(t, "range_bounds has " + std::to_string(b.size()) + " values; a kRange table of " +
                        std::to_string(t.partitions) + " partitions needs exactly " +
                        std::to_string(t.partitions - 1) + " (the first key of partitions 1.." +
                        std::to_string(t.partitions - 1) + ")");
    }
    for (size_t i = 0; i < b.size(); ++i) {
      if (i == 0 && b[0] == 0) {
        return bad(t,
                   "range_bounds[0] = 0; must be > 0 (partition 0 starts at key 0, so a bound of "
                   "0 would leave it empty)");
      }
      if (i > 0 && b[i] <= b[i - 1]) {
        return bad(t, "range_bounds[" + std::to_string(i) + "] = " + std::to_string(b[i]) +
                          " is not above range_bounds[" + std::to_string(i - 1) + "] = " +
                          std::to_string(b[i - 1]) + "; bounds must be strictly increasing");
      }
    }
  }
  if (t.scheme == PartitionScheme::kFunction && !t.partition_fn) {
    return bad(t,
               "scheme kFunction without partition_fn; set partition_fn (pure, same on every "
               "node) or pick another scheme");
  }
  if (t.partition_prefix_bits > 64) {
    return bad(t, "partition_prefix_bits " + std::to_string(t.partition_prefix_bits) +
                      "; must be 0 (not declared) .. 64");
  }
  return Status::ok();
}

uint32_t partition_count(const TableSpec& t) {
  return t.scheme == PartitionScheme::kReplicated ? 1 : t.partitions;
}

// Why index `ix` is not partitioned like `base`; empty when it is. kFunction
// tables can only be compared by partition count: std::function values are
// not comparable, so "the same function" is the caller's promise.
std::string partitioning_difference(const TableSpec& ix, const TableSpec& base) {
  if (ix.scheme != base.scheme) {
    return std::string("scheme ") + scheme_name(ix.scheme) + " vs " + scheme_name(base.scheme);
  }
  if (partition_count(ix) != partition_count(base)) {
    return "partitions " + std::to_string(partition_count(ix)) + " vs " +
           std::to_string(partition_count(base));
  }
  if (ix.scheme == PartitionScheme::kRange && ix.range_bounds != base.range_bounds) {
    return "range_bounds differ";
  }
  return {};
}

}  // namespace

Result<Catalog> Catalog::create(std::vector<TableSpec> tables, uint16_t nodes, uint16_t replicas) {
  if (nodes == 0) return invalid_argument("nodes 0; a catalog needs at least 1 node");
  const uint16_t max_replicas = std::min<uint16_t>(kMaxReplicas, nodes);
  if (replicas == 0 || replicas > kMaxReplicas) {
    return invalid_argument("--replicas=" + std::to_string(replicas) + "; must be 1.." +
                            std::to_string(max_replicas) + " (at most " +
                            std::to_string(kMaxReplicas) + " copies of a partition, and no more " +
                            "than the node count)");
  }
  if (replicas > nodes) {
    return invalid_argument("--replicas=" + std::to_string(replicas) + " needs at least " +
                            std::to_string(replicas) + " nodes (have " + std::to_string(nodes) +
                            "); lower --replicas or add nodes");
  }

  Catalog c;
  c.nodes_ = nodes;
  c.replicas_ = replicas;
  for (const TableSpec& t : tables) {
    DRTMX_RETURN_IF_ERROR(validate_one(t));
  }

  TableId max_id = 0;
  for (const TableSpec& t : tables) max_id = std::max(max_id, t.id);
  c.by_id_.assign(tables.empty() ? 0 : size_t{max_id} + 1, -1);
  for (size_t i = 0; i < tables.size(); ++i) {
    const TableSpec& t = tables[i];
    int32_t& slot = c.by_id_[t.id];
    if (slot >= 0) {
      return bad(t, "id " + std::to_string(t.id) + " already used by " + label(tables[slot]) +
                        "; table ids must be unique");
    }
    for (size_t j = 0; j < i; ++j) {
      if (tables[j].name == t.name) {
        return invalid_argument(label(t) + " (id " + std::to_string(t.id) +
                                "): name already used by table id " + std::to_string(tables[j].id) +
                                "; table names must be unique");
      }
    }
    slot = static_cast<int32_t>(i);
  }

  for (const TableSpec& t : tables) {
    if (t.index_of == kNoTable) continue;
    if (t.index_of == t.id) {
      return bad(t, "index_of " + std::to_string(t.index_of) +
                        " is the table itself; set it to the base table's id");
    }
    const int32_t bi = t.index_of < c.by_id_.size() ? c.by_id_[t.index_of] : -1;
    if (bi < 0) {
      return bad(t, "index_of " + std::to_string(t.index_of) +
                        " names no table; set it to the base table's id (or kNoTable)");
    }
    const TableSpec& base = tables[bi];
    if (t.kind != TableKind::kOrdered) {
      return bad(t, "index_of " + label(base) +
                        " on a hash table; a secondary index must be kind kOrdered");
    }
    const std::string diff = partitioning_difference(t, base);
    if (!diff.empty()) {
      return bad(t, "index_of " + label(base) + " but partitioned differently (" + diff +
                        "); an index must be partitioned exactly like its base table");
    }
  }

  c.tables_ = std::move(tables);
  for (NodeId16 n = 0; n < nodes; ++n) {
    uint64_t copies = 0;
    for (const TableSpec& t : c.tables_) copies += c.hosted(n, t).size();
    c.max_copies_per_node_ = std::max(c.max_copies_per_node_, copies);
  }
  return c;
}

const TableSpec* Catalog::find(const std::string& name) const {
  for (const TableSpec& t : tables_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

uint32_t Catalog::partitions(const TableSpec& t) const {
  return partition_count(t);
}

PartitionId Catalog::partition_of(const TableSpec& t, uint64_t key) const {
  switch (t.scheme) {
    case PartitionScheme::kHashMod:
      return static_cast<PartitionId>(hash_mix(key, kPartitionSeed) % t.partitions);
    case PartitionScheme::kRange: {
      // The first bound above `key` ends key's partition; its index is the
      // partition (key < bound[0] -> 0, key >= bound[P-2] -> P-1).
      const auto it = std::upper_bound(t.range_bounds.begin(), t.range_bounds.end(), key);
      return static_cast<PartitionId>(it - t.range_bounds.begin());
    }
    case PartitionScheme::kFunction: {
      const uint32_t p = t.partition_fn(key);
      // Out of range is a caller bug (check_partition_fn reports it); clamp
      // so the result is still a valid partition.
      return p < t.partitions ? p : t.partitions - 1;
    }
    case PartitionScheme::kReplicated:
      return 0;
  }
  return 0;
}

uint64_t Catalog::range_start(const TableSpec& t, PartitionId p) const {
  assert(p < partitions(t));
  if (t.scheme != PartitionScheme::kRange || p == 0 || p > t.range_bounds.size()) return 0;
  return t.range_bounds[p - 1];
}

void Catalog::scan_partitions(const TableSpec& t, uint64_t from, uint64_t to,
                              std::vector<PartitionId>* out_ptr) const {
  std::vector<PartitionId>& out = *out_ptr;
  out.clear();
  const uint32_t parts = partition_count(t);
  if (from > to) return;
  switch (t.scheme) {
    case PartitionScheme::kReplicated:
      out.push_back(0);
      return;
    case PartitionScheme::kRange:
      for (PartitionId p = partition_of(t, from); p <= partition_of(t, to); ++p) out.push_back(p);
      return;
    case PartitionScheme::kFunction:
      if (t.partition_prefix_bits != 0) {
        // The prefixes of the keys in [from, to] are exactly the integers
        // from from's prefix to to's.
        const unsigned shift = 64u - t.partition_prefix_bits;  // 0 .. 63
        const uint64_t lo = from >> shift, hi = to >> shift;
        if (hi - lo < parts) {
          for (uint64_t x = lo;; ++x) {
            out.push_back(partition_of(t, x << shift));
            if (x == hi) break;
          }
          std::sort(out.begin(), out.end());
          out.erase(std::unique(out.begin(), out.end()), out.end());
          return;
        }
      }
      break;
    case PartitionScheme::kHashMod:
      break;
  }
  for (PartitionId p = 0; p < parts; ++p) out.push_back(p);
}

PartitionReplicas Catalog::replicas_of(const TableSpec& t, PartitionId p, NodeId16 local) const {
  assert(p < partitions(t));
  PartitionReplicas r;
  if (t.scheme == PartitionScheme::kReplicated) {
    r.primary = local;
    return r;
  }
  const uint32_t first = p % nodes_;  // reduce first: p + i must not overflow
  r.primary = static_cast<NodeId16>(first);
  for (uint16_t i = 1; i < replicas_; ++i) {
    r.backups[r.backup_count++] = static_cast<NodeId16>((first + i) % nodes_);
  }
  return r;
}

PartitionReplicas Catalog::replicas_of(const TableSpec& t, PartitionId p, NodeId16 local,
                                       uint64_t live) const {
  PartitionReplicas all = replicas_of(t, p, local);
  if (t.scheme == PartitionScheme::kReplicated) return all;
  auto alive = [live](NodeId16 n) { return n < 64 && ((live >> n) & 1) != 0; };
  PartitionReplicas r;
  r.primary = kNoNode;
  auto take = [&](NodeId16 n) {
    if (!alive(n)) return;
    if (r.primary == kNoNode) {
      r.primary = n;
    } else {
      r.backups[r.backup_count++] = n;
    }
  };
  take(all.primary);
  for (uint16_t i = 0; i < all.backup_count; ++i) take(all.backups[i]);
  return r;
}

bool Catalog::hosts(NodeId16 node, const TableSpec& t, PartitionId p) const {
  if (node >= nodes_ || p >= partitions(t)) return false;
  if (t.scheme == PartitionScheme::kReplicated) return true;
  // node holds copy i of p when node == (p + i) % nodes, 0 <= i < replicas.
  const uint32_t i = (node + nodes_ - p % nodes_) % nodes_;
  return i < replicas_;
}

std::vector<PartitionId> Catalog::hosted(NodeId16 node, const TableSpec& t) const {
  std::vector<PartitionId> out;
  const uint32_t parts = partitions(t);
  for (PartitionId p = 0; p < parts; ++p) {
    if (hosts(node, t, p)) out.push_back(p);
  }
  return out;
}

std::vector<PartitionId> Catalog::primaries(NodeId16 node, const TableSpec& t) const {
  std::vector<PartitionId> out;
  if (node >= nodes_) return out;
  if (t.scheme == PartitionScheme::kReplicated) {
    out.push_back(0);  // every node is the primary of its own copy
    return out;
  }
  for (uint64_t p = node; p < t.partitions; p += nodes_) out.push_back(static_cast<PartitionId>(p));
  return out;
}

Status Catalog::check_partition_fn(const TableSpec& t, const std::vector<uint64_t>& samples) const {
  if (t.scheme != PartitionScheme::kFunction) return Status::ok();  // in range by construction
  if (!t.partition_fn) return bad(t, "scheme kFunction without partition_fn; set partition_fn");
  for (uint64_t key : samples) {
    const uint32_t p = t.partition_fn(key);
    if (p >= t.partitions) {
      return bad(t, "partition_fn maps key " + std::to_string(key) + " (" + hex(key) +
                        ") to partition " + std::to_string(p) + "; must be < partitions " +
                        std::to_string(t.partitions) + " (partition_of clamps it to " +
                        std::to_string(t.partitions - 1) + "; fix the function)");
    }
  }
  return Status::ok();
}

}  // namespace drtmx::store
