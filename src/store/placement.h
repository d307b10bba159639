// Placement: where a node sends each partition's reads, locks and log
// entries now — the catalog's placement (catalog.h) restricted to the
// nodes still in the cluster. One per node (TxnNode owns it, in its
// NodeCaches); it changes only at a membership change (txn/failover.h) and
// is read by every coroutine with relaxed loads. While every node is live
// the answer is the catalog's, on the same code path.
//
// Two masks, because a failover changes them at different times while
// transactions run:
//   * live: the nodes that get log entries (backups). Set as soon as the
//     node loss is handled: a partition whose backup was removed goes on
//     committing with the backups left.
//   * route: the nodes a partition's primary is chosen among. It keeps the
//     removed nodes until the survivors have repaired the moved partitions'
//     copies (promote): until then a partition whose primary was removed is
//     still routed to it, and every op there fails at once (the fabric
//     fences non-members) — only those partitions pause.
// route is always a superset of live.
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
    route_.store(all_, std::memory_order_relaxed);
  }
  const Catalog& catalog() const { return catalog_; }

  PartitionReplicas replicas_of(const TableSpec& t, PartitionId p, NodeId16 local) const {
    const uint64_t route = route_.load(std::memory_order_relaxed);
    if (route == all_) {
      if (live_.load(std::memory_order_relaxed) == all_) return catalog_.replicas_of(t, p, local);
    }
    PartitionReplicas r = catalog_.replicas_of(t, p, local, route);
    const uint64_t live = live_.load(std::memory_order_relaxed);
    if (live == route) return r;
    // Moving: the backups among the live nodes only.
    uint16_t kept = 0;
    for (uint16_t i = 0; i < r.backup_count; ++i) {
      const NodeId16 b = r.backups[i];
      if (b < 64 && ((live >> b) & 1) != 0) r.backups[kept++] = b;
    }
    r.backup_count = kept;
    return r;
  }
  NodeId16 primary(const TableSpec& t, PartitionId p, NodeId16 local) const {
    return replicas_of(t, p, local).primary;
  }
  // Bit n = node n (nodes < 64).
  uint64_t live() const { return live_.load(std::memory_order_acquire); }
  uint64_t route() const { return route_.load(std::memory_order_acquire); }
  // Both masks (a failover while transactions are paused, or promote).
  void set_live(uint64_t live) {
    live_.store(live & all_, std::memory_order_release);
    route_.store(live & all_, std::memory_order_release);
  }
  // Backups first: `live` (a subset of the routing mask now) gets the log
  // entries from here on; primaries stay where they were until set_live().
  void drop_backups(uint64_t live) { live_.store(live & route(), std::memory_order_release); }
  bool degraded() const { return live() != all_; }

 private:
  const Catalog& catalog_;
  const uint64_t all_;
  std::atomic<uint64_t> live_;
  std::atomic<uint64_t> route_;
};

}  // namespace drtmx::store
