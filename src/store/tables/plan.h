// Where every table partition copy lives in a node's registered memory.
//
// A pure function of the catalog (store/catalog.h): every node computes the
// same plan, so a client finds a remote partition's buckets, leaves and
// records without asking its owner.
//
// Regions. Table t has region kTableRegionBase + t.id on every node that
// hosts a copy of one of its partitions. The copies a node hosts are laid
// out back to back in ascending partition order, each in a fixed-size,
// 4 KiB-aligned area (PartitionPlan::area_bytes, the same for every
// partition of the table). Inside an area:
//   hash table         [buckets + overflow buckets][record heap]
//   ordered, inline    [leaves]                     (values in the leaves)
//   ordered, records   [leaves][record heap]        (leaf value = RecordAddr)
// Region kScratchRegion holds the per-coroutine scratch buffers clients
// READ into (ScratchPlan).
//
// Sizing: a hash partition gets HashLayout::for_capacity(capacity) buckets;
// an ordered one enough leaves for `capacity` keys with every leaf only
// half full (XTree splits leave both halves at least half full and deletes
// never free leaves), plus kSpareLeaves; a heap holds exactly `capacity`
// records. Memory is reserved, not touched: shm segments and the kernel
// commit pages on first write.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/catalog.h"
#include "store/hash/layout.h"
#include "store/heap.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::tables {

constexpr r2::RegionId kTableRegionBase = 1024;
constexpr r2::RegionId kScratchRegion = 1000;
constexpr uint32_t kSpareLeaves = 64;
constexpr uint32_t kOrderedFanout = 16;

// The value an ordered table with records keeps in its leaves: where the
// record is, in the same region as the leaves, and the incarnation of the
// record the entry was made for (a reused slot is detected by it, and by
// the record's key).
struct RecordAddr {
  uint64_t offset = 0;
  uint32_t incarnation = 0;
  uint32_t pad = 0;
};
static_assert(sizeof(RecordAddr) == 16);

inline r2::RegionId table_region(TableId id) {
  return static_cast<r2::RegionId>(kTableRegionBase + id);
}

// One partition copy on one node.
struct PartitionPlan {
  r2::RegionId region = 0;
  uint64_t offset = 0;      // area start in the region
  uint64_t area_bytes = 0;  // same for every partition of the table
  // kHash: the table's geometry (bucket_offset, record_region filled).
  hash::HashLayout hash;
  // kOrdered: the leaves (region, leaf_offset, fanout, value_bytes, capacity).
  xstore::LeafArea leaves;
  // Heap of records (hash tables, ordered tables with records); range_bytes
  // 0 for ordered tables with inline values.
  HeapOptions heap;
};

// Bytes of one partition area of `t` and its plan at area offset `offset`.
PartitionPlan plan_partition(const TableSpec& t, uint64_t offset);

// The copy of partition p of `t` on `node`; kNotFound when `node` does not
// host it (the message names the table, partition and node).
Result<PartitionPlan> locate(const Catalog& c, const TableSpec& t, PartitionId p, NodeId16 node);

// Scratch for clients: one buffer of `per_coroutine` bytes (64-aligned)
// per coroutine of every worker thread.
struct ScratchPlan {
  uint16_t threads = 1;
  uint16_t coroutines = 1;
  uint64_t per_coroutine = 0;
  uint64_t bytes() const { return uint64_t{threads} * coroutines * per_coroutine; }
  uint64_t offset(uint16_t thread, uint16_t co) const {
    return (uint64_t{thread} * coroutines + co) * per_coroutine;
  }
};
// Records a scan of an ordered table with records READs in one batch.
constexpr uint32_t kScanRecordBatch = 32;

// How one coroutine's TableClient scratch is split: [hash client][XStore
// client][kScanRecordBatch record slots], each part 64-aligned and sized
// for the largest table of its kind.
struct ScratchLayout {
  uint64_t hash_bytes = 0;
  uint64_t ordered_bytes = 0;
  uint64_t record_bytes = 0;
  uint64_t total() const { return hash_bytes + ordered_bytes + record_bytes; }
};
ScratchLayout scratch_layout(const Catalog& c);
inline uint64_t scratch_per_coroutine(const Catalog& c) {
  return scratch_layout(c).total();
}

// The regions `node` registers: every table region it hosts, and the
// scratch region. For NodeRuntimeConfig::regions.
std::vector<std::pair<r2::RegionId, size_t>> regions_of(const Catalog& c, NodeId16 node,
                                                        const ScratchPlan& scratch);

}  // namespace drtmx::store::tables
