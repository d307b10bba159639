#include "r2/common/region_table.h"

#include <algorithm>

namespace drtmx::r2 {

void RegionTable::set(NodeId node, RegionId id, RegionEntry e) {
  if (node >= nodes_.size()) nodes_.resize(node + 1u);
  auto& v = nodes_[node];
  if (id >= v.size()) v.resize(id + 1u);
  v[id] = e;
}

void RegionTable::add_local(const void* base, uint64_t size) {
  auto b = reinterpret_cast<uintptr_t>(base);
  const Local l{b, b + size};
  local_.insert(std::upper_bound(local_.begin(), local_.end(), l, by_begin), l);
}

bool RegionTable::is_local(const void* p, uint64_t len) const {
  auto b = reinterpret_cast<uintptr_t>(p);
  auto inside = [&](const Local& l) { return b >= l.begin && b <= l.end && len <= l.end - b; };
  // Every op checks its local buffer: the region starting last at or below
  // b first (regions do not overlap), by a binary search without branches
  // on the data (each mispredicted step of std::upper_bound cost more than
  // the step)...
  if (!local_.empty()) {
    const Local* at = local_.data();
    size_t n = local_.size();
    while (n > 1) {
      const size_t half = n / 2;
      at = at[half].begin <= b ? at + half : at;
      n -= half;
    }
    if (inside(*at)) return true;
  }
  // ... and only when that fails, every region (overlapping registrations).
  return std::any_of(local_.begin(), local_.end(), inside);
}

OpStatus RegionTable::check(const WorkRequest& wr, uint32_t max_op_bytes) const {
  const bool atomic = wr.verb == Verb::kCas || wr.verb == Verb::kFaa;
  const uint64_t len = atomic ? 8 : wr.len;
  if (len == 0 || len > max_op_bytes) return OpStatus::kBadLength;
  if (wr.remote.node >= nodes_.size()) return OpStatus::kBadNode;
  const RegionEntry* r = find(wr.remote.node, wr.remote.region);
  if (r == nullptr) return OpStatus::kBadRegion;
  // Overflow-safe: offset <= size and len <= size - offset.
  if (wr.remote.offset > r->size || len > r->size - wr.remote.offset) {
    return OpStatus::kOutOfBounds;
  }
  if (atomic && ((r->base + wr.remote.offset) % 8 != 0)) return OpStatus::kMisaligned;
  if (wr.local == nullptr || !is_local(wr.local, len)) return OpStatus::kBadLocalBuffer;
  if (atomic && reinterpret_cast<uintptr_t>(wr.local) % 8 != 0) return OpStatus::kMisaligned;
  return OpStatus::kOk;
}

}  // namespace drtmx::r2
