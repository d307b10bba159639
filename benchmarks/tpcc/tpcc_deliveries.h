// What the terminals of one node share about Delivery (clause 2.7): where
// each district's undelivered orders begin, and the deferred-execution
// queue of each warehouse.
//
// Bounds. The highest order id a committed Delivery removed from NEW-ORDER,
// per (warehouse, district). Delivery starts its search for the oldest
// undelivered order there (DeliveryInput::from) instead of walking every
// row delivered since the load. It finds the same row: a Delivery that
// removed order x saw x as the district's lowest NEW-ORDER key, and every
// NEW-ORDER key inserted later is D_NEXT_O_ID at the time, above x. So once
// x's Delivery committed, no key below x exists or ever will, and a scan
// from x finds exactly what a scan from 0 finds — a key below x cannot
// appear in the scanned range either, so its validation loses nothing.
//
// Deferred execution (clause 2.7.2). A terminal that draws a Delivery
// queues it for its warehouse and goes on with its next transaction; the
// queue is served by one agent at a time — the terminal that claims it —
// so the Deliveries of a warehouse run one after another. Run concurrently
// they would all pick the same oldest orders and all but one abort, each
// after reading some hundred rows (with 8 terminals per warehouse, nearly
// every Delivery aborted at least once).
//
// Thread-safe (the terminals of a node run on all its worker threads):
// relaxed atomics for the bounds (a bound lower than it could be is still a
// bound), an acquire/release flag per warehouse for the agent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tpcc/tpcc_config.h"

namespace drtmx::bench::tpcc {

class Deliveries {
 public:
  explicit Deliveries(uint32_t warehouses);

  // A lower bound of district (w, d)'s oldest undelivered order id.
  uint32_t from(uint32_t w, uint32_t d) const;
  // Orders of (w, d) below `bound` are delivered for good: from() becomes
  // at least `bound`. A committed Delivery of order o passes o + 1 (its
  // NEW-ORDER row is gone even if the index has not dropped it yet, and a
  // scan from o would meet that row and abort); after a restart the loader
  // passes the oldest undelivered order it found.
  void delivered(uint32_t w, uint32_t d, uint32_t bound);

  // Queues a Delivery of warehouse w.
  void request(uint32_t w);
  // Becomes w's agent and takes one queued Delivery: false when none is
  // queued or another terminal is the agent. The agent calls done() when
  // that Delivery finished (committed or not), before claiming the next.
  bool claim(uint32_t w);
  void done(uint32_t w);
  // Deliveries queued and not yet claimed.
  uint32_t queued(uint32_t w) const;

 private:
  struct alignas(64) Warehouse {  // one cache line each: different threads
    std::atomic<uint32_t> from[kDistricts + 1];
    std::atomic<uint32_t> queued{0};
    std::atomic<bool> agent{false};
  };
  size_t n_;
  std::unique_ptr<Warehouse[]> w_;
};

}  // namespace drtmx::bench::tpcc
