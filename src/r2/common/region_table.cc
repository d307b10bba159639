#include "r2/common/region_table.h"

namespace drtmx::r2 {

void RegionTable::set(NodeId node, RegionId id, RegionEntry e) {
  if (node >= nodes_.size()) nodes_.resize(node + 1u);
  auto& v = nodes_[node];
  if (id >= v.size()) v.resize(id + 1u);
  v[id] = e;
}

void RegionTable::add_local(const void* base, uint64_t size) {
  auto b = reinterpret_cast<uintptr_t>(base);
  local_.push_back({b, b + size});
}

bool RegionTable::is_local(const void* p, uint64_t len) const {
  auto b = reinterpret_cast<uintptr_t>(p);
  for (const Local& l : local_) {
    if (b >= l.begin && b <= l.end && len <= l.end - b) return true;
  }
  return false;
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
