// Memory keys of registered regions.
//
// Every region is registered in EVERY worker thread's protection domain, so
// a region has one lkey/rkey per thread. Thread t of node A uses the rkey
// that thread t of node B got for the region (its RC QP lives in B's thread-t
// PD), and its own thread-t lkey for local buffers.
//
// Both tables are filled by the set-up thread (register_region / connect)
// and read-only afterwards, so worker threads read them without locks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "r2/fabric.h"

namespace drtmx::r2::verbs {

// rkey of (node, region, thread), as learned from the node descriptors.
class RkeyTable {
 public:
  void reset(uint16_t num_nodes, uint16_t threads);
  void set(NodeId node, RegionId region, ThreadId thread, uint32_t rkey);
  // nullopt when the node, region or thread is unknown.
  std::optional<uint32_t> find(NodeId node, RegionId region, ThreadId thread) const;

 private:
  uint16_t threads_ = 0;
  // [node][region * threads + thread]; 0 is stored as "absent" via has_.
  std::vector<std::vector<uint32_t>> keys_;
  std::vector<std::vector<bool>> has_;
};

// lkeys of the local regions for one thread's PD.
class LocalKeys {
 public:
  void add(const void* base, uint64_t size, uint32_t lkey);
  // lkey of the region containing [p, p + len), or nullopt.
  std::optional<uint32_t> find(const void* p, uint64_t len) const;

 private:
  struct Range {
    uintptr_t begin, end;
    uint32_t lkey;
  };
  std::vector<Range> ranges_;
};

}  // namespace drtmx::r2::verbs
