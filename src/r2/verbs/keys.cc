#include "r2/verbs/keys.h"

namespace drtmx::r2::verbs {

void RkeyTable::reset(uint16_t num_nodes, uint16_t threads) {
  threads_ = threads;
  keys_.assign(num_nodes, {});
  has_.assign(num_nodes, {});
}

void RkeyTable::set(NodeId node, RegionId region, ThreadId thread, uint32_t rkey) {
  if (node >= keys_.size() || thread >= threads_) return;
  const size_t i = size_t{region} * threads_ + thread;
  if (i >= keys_[node].size()) {
    keys_[node].resize(i + 1, 0);
    has_[node].resize(i + 1, false);
  }
  keys_[node][i] = rkey;
  has_[node][i] = true;
}

std::optional<uint32_t> RkeyTable::find(NodeId node, RegionId region, ThreadId thread) const {
  if (node >= keys_.size() || thread >= threads_) return std::nullopt;
  const size_t i = size_t{region} * threads_ + thread;
  if (i >= keys_[node].size() || !has_[node][i]) return std::nullopt;
  return keys_[node][i];
}

void LocalKeys::add(const void* base, uint64_t size, uint32_t lkey) {
  auto b = reinterpret_cast<uintptr_t>(base);
  ranges_.push_back({b, b + size, lkey});
}

std::optional<uint32_t> LocalKeys::find(const void* p, uint64_t len) const {
  auto b = reinterpret_cast<uintptr_t>(p);
  for (const Range& r : ranges_) {
    if (b >= r.begin && b <= r.end && len <= r.end - b) return r.lkey;
  }
  return std::nullopt;
}

}  // namespace drtmx::r2::verbs
