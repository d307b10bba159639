// RegionTable: what a node knows about every registered region in the
// cluster, and the one place where a work request is checked before it may
// touch memory. Shared by all backends so that a request rejected on shm is
// rejected the same way on verbs.
//
// Filled at set-up (local regions at register time, remote ones at connect)
// and read-only afterwards, so worker threads read it without locks.
#pragma once

#include <cstdint>
#include <vector>

#include "r2/fabric.h"

namespace drtmx::r2 {

struct RegionEntry {
  uint64_t base = 0;  // address usable by this backend (mapped or remote VA)
  uint64_t size = 0;  // 0 = no such region
  Persistence persistence = Persistence::kNone;
};

class RegionTable {
 public:
  void reset(uint16_t num_nodes) { nodes_.assign(num_nodes, {}); }
  void set(NodeId node, RegionId id, RegionEntry e);
  // Local regions, for the local-buffer check.
  void add_local(const void* base, uint64_t size);

  uint16_t num_nodes() const { return static_cast<uint16_t>(nodes_.size()); }
  const RegionEntry* find(NodeId node, RegionId id) const {
    if (node >= nodes_.size()) return nullptr;
    const auto& v = nodes_[node];
    if (id >= v.size() || v[id].size == 0) return nullptr;
    return &v[id];
  }
  // The local regions one caller's buffers were last found in (one per
  // endpoint, i.e. per thread: never shared). A transaction's buffers come
  // from a few regions (its arena, its scratch), so most checks end here
  // instead of in the search.
  struct LocalHint {
    static constexpr int kWays = 4;
    uintptr_t begin[kWays] = {};
    uintptr_t end[kWays] = {};
    int next = 0;
  };
  // Whether [p, p + len) lies in one local region; `hint` (optional) is
  // tried first and remembers the region found.
  bool is_local(const void* p, uint64_t len, LocalHint* hint = nullptr) const;

  // Checks everything about `wr` that can be checked without touching
  // memory: node, region, bounds, alignment of atomics, length, local buffer
  // (through `hint` when given).
  OpStatus check(const WorkRequest& wr, uint32_t max_op_bytes, LocalHint* hint = nullptr) const;

 private:
  std::vector<std::vector<RegionEntry>> nodes_;
  struct Local {
    uintptr_t begin, end;
  };
  static bool by_begin(const Local& a, const Local& b) { return a.begin < b.begin; }
  // [b, b + len) within [begin, end] (overflow-safe).
  static bool holds(uintptr_t begin, uintptr_t end, uintptr_t b, uint64_t len) {
    return b >= begin && b <= end && len <= end - b;
  }
  // The region holding [p, p + len), or nullptr.
  const Local* local_region(uintptr_t b, uint64_t len) const;
  std::vector<Local> local_;  // sorted by begin
};

}  // namespace drtmx::r2
