#include "store/tables/plan.h"

#include <algorithm>
#include <string>

#include "store/extent.h"
#include "store/hash/hash_client.h"
#include "store/record.h"
#include "store/xstore/client/xstore_client.h"

namespace drtmx::store::tables {
namespace {

constexpr uint64_t kAreaAlign = 4096;
// XTree numbers leaves with 31 bits.
constexpr uint64_t kMaxLeaves = (uint64_t{1} << 31) - 1;

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

uint32_t leaves_for(uint64_t capacity) {
  const uint64_t half = kOrderedFanout / 2;
  const uint64_t n = (capacity + half - 1) / half + kSpareLeaves;
  return static_cast<uint32_t>(std::min<uint64_t>(n, kMaxLeaves));
}

}  // namespace

uint64_t area_space(const Catalog& c) {
  const uint64_t per_node = std::min<uint64_t>(
      kTableSpacePerNode, kTableSpaceAllNodes / std::max<uint16_t>(c.nodes(), 1));
  const uint64_t copies = std::max<uint64_t>(c.max_copies_per_node(), 1);
  return std::max<uint64_t>(per_node / copies / kSpaceAlign * kSpaceAlign, kSpaceAlign);
}

PartitionPlan plan_partition(const TableSpec& t, uint64_t offset, uint64_t space) {
  PartitionPlan p;
  p.region = table_region(t.id);
  p.offset = offset;
  p.heap.value_size = t.value_size;
  const bool has_heap = t.kind == TableKind::kHash || !t.inline_values;
  const uint64_t slot = has_heap ? record_slot_size(t.value_size) : 0;
  uint64_t index_bytes = 0, rows = 0;
  if (t.kind == TableKind::kHash) {
    p.hash = hash::HashLayout::for_capacity(t.capacity, t.value_size);
    p.hash.bucket_region = p.region;
    p.hash.record_region = p.region;
    p.hash.bucket_offset = offset;
    p.hash.record_base = offset;
    // Bucket slots address records within kMaxHashArea of the area start.
    space = std::min(space, kMaxHashArea);
    // Past the heads, each row takes its slot and a quarter of an overflow
    // bucket (chains of rows beyond the table's capacity fill 4 of 6 slots).
    const uint64_t heads = uint64_t{p.hash.buckets} * hash::kBucketBytes;
    const uint64_t per_row = slot + hash::kBucketBytes / 4;
    rows = std::max<uint64_t>(space > heads ? (space - heads) / per_row : 0, t.capacity);
    const uint64_t max_overflow = UINT32_MAX - 2 - uint64_t{p.hash.buckets};
    p.hash.overflow = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(rows / 4 + 1, p.hash.overflow), max_overflow));
    index_bytes = p.hash.area_bytes();
  } else {
    p.leaves.region = p.region;
    p.leaves.leaf_offset = offset;
    p.leaves.fanout = kOrderedFanout;
    p.leaves.value_bytes = t.inline_values ? t.value_size : sizeof(RecordAddr);
    const uint64_t leaf = p.leaves.leaf_size();
    // Each row: its slot and its share of a half-full leaf.
    const uint64_t per_row = slot + (leaf + kOrderedFanout / 2 - 1) / (kOrderedFanout / 2);
    rows = std::max<uint64_t>(space / per_row, t.capacity);
    // No more rows than 31-bit leaf numbers index at half-full leaves.
    rows = std::min<uint64_t>(rows, (kMaxLeaves - kSpareLeaves) * (kOrderedFanout / 2));
    p.leaves.leaf_capacity = leaves_for(rows);
    index_bytes = p.leaves.bytes();
  }
  p.heap.range_offset = offset + align_up(index_bytes, 64);
  p.heap.range_bytes = has_heap ? RecordHeap::bytes_for(rows, t.value_size) : 0;
  p.area_bytes = align_up(p.heap.range_offset - offset + p.heap.range_bytes, kAreaAlign);
  p.lock_area_bytes = align_up(p.heap_slots() * kLockEntryBytes, kAreaAlign);
  p.lock_offset = offset / p.area_bytes * p.lock_area_bytes;
  return p;
}

PartitionPlan plan_partition(const Catalog& c, const TableSpec& t, uint64_t offset) {
  return plan_partition(t, offset, area_space(c));
}

uint64_t PartitionPlan::heap_slots() const {
  return heap.range_bytes / record_slot_size(heap.value_size);
}

Result<PartitionPlan> locate(const Catalog& c, const TableSpec& t, PartitionId p, NodeId16 node) {
  const std::vector<PartitionId> hosted = c.hosted(node, t);
  const auto it = std::lower_bound(hosted.begin(), hosted.end(), p);
  if (it == hosted.end() || *it != p) {
    return not_found("table '" + t.name + "' partition " + std::to_string(p) +
                     " has no copy on node " + std::to_string(node));
  }
  const uint64_t space = area_space(c);
  const uint64_t area = plan_partition(t, 0, space).area_bytes;
  PartitionPlan plan = plan_partition(t, area * static_cast<uint64_t>(it - hosted.begin()), space);
  plan.heap.name = t.name + "/p" + std::to_string(p);
  return plan;
}

ScratchLayout scratch_layout(const Catalog& c) {
  uint64_t hash_part = 0, ordered_part = 0, record_part = 0;
  for (const TableSpec& t : c.tables()) {
    const PartitionPlan p = plan_partition(c, t, 0);
    if (t.kind == TableKind::kHash) {
      hash_part = std::max<uint64_t>(hash_part, hash::HashClient::scratch_bytes(p.hash));
    } else {
      ordered_part =
          std::max<uint64_t>(ordered_part, xstore::XStoreClient::scratch_bytes(p.leaves));
      if (!t.inline_values) {
        record_part =
            std::max<uint64_t>(record_part, kScanRecordBatch * record_slot_size(t.value_size));
      }
    }
  }
  return {align_up(hash_part, 64), align_up(ordered_part, 64), align_up(record_part, 64)};
}

std::vector<std::pair<r2::RegionId, size_t>> regions_of(const ScratchPlan& scratch) {
  return {{kScratchRegion, std::max<uint64_t>(scratch.bytes(), 64)}};
}

std::vector<std::pair<r2::RegionId, size_t>> growable_regions_of(const Catalog& c, NodeId16 node,
                                                                 bool lock_regions) {
  std::vector<std::pair<r2::RegionId, size_t>> out;
  const uint64_t space = area_space(c);
  for (const TableSpec& t : c.tables()) {
    const size_t copies = c.hosted(node, t).size();
    if (copies == 0) continue;
    const PartitionPlan p = plan_partition(t, 0, space);
    out.emplace_back(table_region(t.id), p.area_bytes * copies);
    if (lock_regions && p.lock_area_bytes != 0) {
      out.emplace_back(lock_region(t.id), p.lock_area_bytes * copies);
    }
  }
  return out;
}

uint64_t load_bytes(const Catalog& c, NodeId16 node, bool lock_regions) {
  const uint64_t space = area_space(c);
  uint64_t total = 0;
  for (const TableSpec& t : c.tables()) {
    const uint64_t copies = c.hosted(node, t).size();
    if (copies == 0) continue;
    const PartitionPlan p = plan_partition(t, 0, space);
    const bool has_heap = p.heap.range_bytes != 0;
    uint64_t bytes = 0;
    if (has_heap) {
      bytes += t.capacity * record_slot_size(t.value_size);
      if (lock_regions) bytes += t.capacity * kLockEntryBytes;
    }
    if (t.kind == TableKind::kHash) {
      bytes += uint64_t{p.hash.buckets} * hash::kBucketBytes;
    } else {
      bytes += leaves_for(t.capacity) * p.leaves.leaf_size();
    }
    // Extents ahead of what is used: the heap's and the index's.
    bytes += bytes / 8 + 2 * kMinExtentBytes;
    total += copies * bytes;
  }
  return total;
}

LockPlan LockPlan::of(const Catalog& c) {
  LockPlan lp;
  for (const TableSpec& t : c.tables()) {
    const PartitionPlan p = plan_partition(c, t, 0);
    if (p.lock_area_bytes == 0) continue;
    lp.set(table_region(t.id), {lock_region(t.id), p.area_bytes, p.heap.range_offset,
                                record_slot_size(t.value_size), p.lock_area_bytes});
  }
  return lp;
}

void LockPlan::set(r2::RegionId record_region, const Geometry& g) {
  if (record_region >= by_region_.size()) by_region_.resize(record_region + size_t{1});
  // A geometry without areas or slots maps nothing (lock_of divides by both).
  by_region_[record_region] = g.area_bytes == 0 || g.slot_bytes == 0 ? Geometry{} : g;
}

}  // namespace drtmx::store::tables
