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

const RegionTable::Local* RegionTable::local_region(uintptr_t b, uint64_t len) const {
  auto inside = [&](const Local& l) { return holds(l.begin, l.end, b, len); };
  // The region starting last at or below b first (regions do not
  // overlap), by a binary search without branches on the data (each
  // mispredicted step of std::upper_bound cost more than the step)...
  if (!local_.empty()) {
    const Local* at = local_.data();
    size_t n = local_.size();
    while (n > 1) {
      const size_t half = n / 2;
      at = at[half].begin <= b ? at + half : at;
      n -= half;
    }
    if (inside(*at)) return at;
  }
  // ... and only when that fails, every region (overlapping registrations).
  auto it = std::find_if(local_.begin(), local_.end(), inside);
  return it == local_.end() ? nullptr : &*it;
}

bool RegionTable::is_local(const void* p, uint64_t len, LocalHint* hint) const {
  const auto b = reinterpret_cast<uintptr_t>(p);
  if (hint != nullptr) {
    for (int i = 0; i < LocalHint::kWays; ++i) {
      if (holds(hint->begin[i], hint->end[i], b, len)) return true;
    }
  }
  const Local* l = local_region(b, len);
  if (l == nullptr) return false;
  if (hint != nullptr) {
    hint->begin[hint->next] = l->begin;
    hint->end[hint->next] = l->end;
    hint->next = (hint->next + 1) % LocalHint::kWays;
  }
  return true;
}

OpStatus RegionTable::check(const WorkRequest& wr, uint32_t max_op_bytes, LocalHint* hint) const {
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
  if (wr.local == nullptr || !is_local(wr.local, len, hint)) return OpStatus::kBadLocalBuffer;
  if (atomic && reinterpret_cast<uintptr_t>(wr.local) % 8 != 0) return OpStatus::kMisaligned;
  return OpStatus::kOk;
}

}  // namespace drtmx::r2
