// Placement: where a node sends each partition's reads, locks and log
// entries now — the catalog's placement (catalog.h) restricted to the
// nodes still in the cluster. One per node (TxnNode owns it, in its
// NodeCaches); the live set changes only at a membership change, while
// the node's transactions are paused (txn/failover.h), and is read by
// every coroutine with one relaxed load. While every node is live the
// answer is the catalog's, on the same code path.
#pragma once

#include <atomic>
#include <cstdint>

#include "store/catalog.h"

namespace drtmx::store {

class Placement {
 public:
  explicit Placement(const Catalog& c)
      : catalog_(c), all_(c.nodes() >= 64 ? ~uint64_t{0} : (uint64_t{1} << c.nodes()) - 1) {
    live_.store(all_, std::memory_order_relaxed);
  }
  const Catalog& catalog() const { return catalog_; }

  PartitionReplicas replicas_of(const TableSpec& t, PartitionId p, NodeId16 local) const {
    const uint64_t live = live_.load(std::memory_order_relaxed);
    return live == all_ ? catalog_.replicas_of(t, p, local)
                        : catalog_.replicas_of(t, p, local, live);
  }
  NodeId16 primary(const TableSpec& t, PartitionId p, NodeId16 local) const {
    return replicas_of(t, p, local).primary;
  }
  // Bit n = node n (nodes < 64).
  uint64_t live() const { return live_.load(std::memory_order_acquire); }
  void set_live(uint64_t live) { live_.store(live & all_, std::memory_order_release); }
  bool degraded() const { return live() != all_; }

 private:
  const Catalog& catalog_;
  const uint64_t all_;
  std::atomic<uint64_t> live_;
};

}  // namespace drtmx::store
