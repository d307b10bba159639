// The per-coroutine TPC-C terminal (clause 5.2 in spirit, without keying
// and think times): draws a transaction type by the mix and its input by
// the specification's distributions, runs the procedure, and counts what
// the end-of-run check needs.
//
// Home warehouse: coroutine `index` = (node * threads + thread) * coroutines
// + co lives on `node`, and its home is one of the warehouses whose primary
// is that node (partitions node, node + nodes, ...), spread over threads and
// coroutines — so transactions are local except where the specification
// makes them remote.
//
// sums(): {New-Orders refused because a district was full, Payments refused
// because the client's HISTORY quota was used up, New-Orders rolled back,
// New-Orders committed}.
#pragma once

#include <atomic>
#include <memory>

#include "driver/workload.h"
#include "tpcc/tpcc_config.h"

namespace drtmx::bench::tpcc {

// Where each district's undelivered orders begin, as far as the terminals
// of one node know: the highest order id a committed Delivery removed from
// NEW-ORDER, per (warehouse, district). Delivery starts its search for the
// oldest undelivered order there (DeliveryInput::from) instead of walking
// every row delivered since the load.
//
// Why that finds the same row: a Delivery that removed order x saw x as
// the district's lowest NEW-ORDER key, and every NEW-ORDER key inserted
// later is D_NEXT_O_ID at the time, above x. So once x's Delivery
// committed, no key below x exists or ever will, and a scan from x finds
// exactly what a scan from 0 finds — and a key below x cannot appear in
// the scanned range, so its validation loses nothing either.
//
// Shared by the terminals of a node (any thread): relaxed atomic maxima,
// since a bound that is lower than it could be is still a bound.
class DeliveryHints {
 public:
  explicit DeliveryHints(uint32_t warehouses)
      : n_(size_t{warehouses} + 1), from_(new std::atomic<uint32_t>[n_ * (kDistricts + 1)]) {
    for (size_t i = 0; i < n_ * (kDistricts + 1); ++i) from_[i].store(0);
  }
  // A lower bound of district (w, d)'s oldest undelivered order id.
  uint32_t from(uint32_t w, uint32_t d) const {
    return w < n_ && d <= kDistricts ? at(w, d).load(std::memory_order_relaxed) : 0;
  }
  // Order `o_id` of (w, d) was delivered by a committed Delivery.
  void delivered(uint32_t w, uint32_t d, uint32_t o_id) {
    if (w >= n_ || d > kDistricts) return;
    std::atomic<uint32_t>& a = at(w, d);
    uint32_t cur = a.load(std::memory_order_relaxed);
    while (cur < o_id && !a.compare_exchange_weak(cur, o_id, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<uint32_t>& at(uint32_t w, uint32_t d) const {
    return from_[size_t{w} * (kDistricts + 1) + d];
  }
  size_t n_;
  std::unique_ptr<std::atomic<uint32_t>[]> from_;
};

enum ClientSum : int { kOrdersFull, kHistoryFull, kRollbacks, kNewOrdersCommitted, kClientSums };

// The home warehouse of coroutine `index`.
uint32_t home_warehouse(const Config& c, uint32_t index);

// `hints` (may be null: every Delivery searches from order id 0) is shared
// by the clients of a node and must outlive them.
std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            DeliveryHints* hints);

}  // namespace drtmx::bench::tpcc
