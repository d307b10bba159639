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
// Lock regions (durable nodes only: hint H8, store/record.h "Lock words
// apart"). Table t with records also has region lock_region(t.id), in
// volatile memory, laid out like its table region: the copy in the k-th
// area of the table region has the k-th lock area, of
// PartitionPlan::lock_area_bytes (the same for every partition), holding
// one kLockEntryBytes entry [lock word][ts] per heap slot, in slot order.
// So the lock word of the record at table-region offset o is at
//   k = o / area_bytes,  i = (o - k * area_bytes - heap offset in the area)
//   / slot bytes,  lock offset = k * lock_area_bytes + i * kLockEntryBytes
// — computed by every client from the record's address (LockPlan) and by
// the owner (SlotWords). Nodes without durability register no lock region.
//
// Growth. An area is address space, not memory: table and lock regions
// are registered growable (r2::Fabric::register_growable_region), and the
// owner backs (Fabric::commit) the parts of an area it uses as it uses
// them — head buckets at start; the heap, overflow buckets and leaves in
// extents of an eighth of what they hold (at least 64 KiB) as rows are
// inserted (store/heap.h, hash/hash_table.h, xstore/server/xtree.h). So
// memory follows the rows, and no table has a capacity to configure.
// Every node computes the same areas (addresses stay computed, not
// exchanged): a node's tables share kTableSpacePerNode of address space
// (kTableSpaceAllNodes over the cluster: on shm every process maps every
// node's regions), split evenly among the partition copies the busiest
// node hosts (area_space). Inside an area, a partition holds as many rows
// as fit at one slot and one index share each — with 3 nodes and 45
// copies a node (TPC-C, 3 warehouses) about 90 GiB a copy, tens of times
// the memory of a machine; a partition that uses up its area fails its
// next insert naming the table (RecordHeap, XTree).
// Sizing: a hash partition gets HashLayout::for_capacity(capacity) head
// buckets (backed and formatted at start) and overflow room for the rest
// of its area; an ordered one leaves for its area's rows with every leaf
// only half full (XTree splits leave both halves at least half full and
// deletes never free leaves), plus kSpareLeaves.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/catalog.h"
#include "store/hash/layout.h"
#include "store/heap.h"
#include "store/record.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::tables {

constexpr r2::RegionId kTableRegionBase = 1024;
constexpr r2::RegionId kLockRegionBase = kTableRegionBase + kMaxTables;
constexpr r2::RegionId kScratchRegion = 1000;
constexpr uint32_t kSpareLeaves = 64;
constexpr uint32_t kOrderedFanout = 16;
// Address space of a node's table areas, and of all nodes' (see Growth).
constexpr uint64_t kTableSpacePerNode = uint64_t{4} << 40;
constexpr uint64_t kTableSpaceAllNodes = uint64_t{32} << 40;
constexpr uint64_t kSpaceAlign = uint64_t{2} << 20;
// A hash area's records lie within 256 GiB of its start (bucket slots
// name them by a 32-bit offset / 64 from it: hash/bucket.h).
constexpr uint64_t kMaxHashArea = (uint64_t{255} << 30);

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
inline r2::RegionId lock_region(TableId id) {
  return static_cast<r2::RegionId>(kLockRegionBase + id);
}
inline bool is_table_region(r2::RegionId r) {
  return r >= kTableRegionBase && r < kLockRegionBase;
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
  // Durable nodes: this copy's lock area in lock_region(table) (offset,
  // and bytes: the same for every partition; 0 without a heap).
  uint64_t lock_offset = 0;
  uint64_t lock_area_bytes = 0;
  uint64_t heap_slots() const;
};

// Address space of one partition area (the same for every table of `c`).
uint64_t area_space(const Catalog& c);
// The plan of a partition of `t` at area offset `offset`, in an area of
// `space` bytes of address space (area_bytes comes out at most that, or
// what t.capacity rows need when that is more).
PartitionPlan plan_partition(const TableSpec& t, uint64_t offset, uint64_t space);
PartitionPlan plan_partition(const Catalog& c, const TableSpec& t, uint64_t offset);

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

// The regions `node` registers whole: the scratch region. For
// NodeRuntimeConfig::regions.
std::vector<std::pair<r2::RegionId, size_t>> regions_of(const ScratchPlan& scratch);
// The regions `node` registers growable (their sizes are address space):
// every table region it hosts; with `lock_regions` (durable nodes) also the
// lock region of every table with records it hosts. For
// NodeRuntimeConfig::growable_regions.
std::vector<std::pair<r2::RegionId, size_t>> growable_regions_of(const Catalog& c, NodeId16 node,
                                                                 bool lock_regions = false);

// What `node`'s copies take in memory once loaded with t.capacity rows
// each (the heaps' slots, head buckets, leaves half full, lock entries
// with `lock_regions`, and the growth extents' slack): the launcher's
// estimate before a run (it grows from there as rows arrive).
uint64_t load_bytes(const Catalog& c, NodeId16 node, bool lock_regions);

// Clients of durable nodes: the lock word of a record, from the record's
// address (see "Lock regions" above). Immutable once built; shared by the
// node's coroutines.
class LockPlan {
 public:
  // How the records of one table region map to their lock entries.
  struct Geometry {
    r2::RegionId lock_region = 0;
    uint64_t area_bytes = 0;       // record region: bytes of one copy's area
    uint64_t heap_offset = 0;      // the first slot's offset inside an area
    uint64_t slot_bytes = 0;       // 0: the region keeps no records
    uint64_t lock_area_bytes = 0;  // lock region: bytes of one copy's lock area
  };
  LockPlan() = default;
  // Every table with records of `c`.
  static LockPlan of(const Catalog& c);
  // Any layout (tests): the records of `record_region`.
  void set(r2::RegionId record_region, const Geometry& g);

  // The lock word of the record slot at `rec` — on the same node. An
  // address outside every planned heap maps to region 0 offset 0 (a fabric
  // op there fails as a bad region instead of touching another word).
  r2::RemoteAddr lock_of(const r2::RemoteAddr& rec) const {
    if (rec.region >= by_region_.size() || by_region_[rec.region].slot_bytes == 0) {
      return {rec.node, 0, 0};
    }
    const Geometry& g = by_region_[rec.region];
    const uint64_t k = rec.offset / g.area_bytes;
    const uint64_t in_area = rec.offset - k * g.area_bytes;
    if (in_area < g.heap_offset) return {rec.node, 0, 0};
    return {rec.node, g.lock_region,
            k * g.lock_area_bytes + (in_area - g.heap_offset) / g.slot_bytes * kLockEntryBytes};
  }

 private:
  std::vector<Geometry> by_region_;  // by record region id
};

}  // namespace drtmx::store::tables
