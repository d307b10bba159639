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

#include <memory>

#include "driver/workload.h"
#include "tpcc/tpcc_config.h"
#include "tpcc/tpcc_deliveries.h"

namespace drtmx::bench::tpcc {

enum ClientSum : int { kOrdersFull, kHistoryFull, kRollbacks, kNewOrdersCommitted, kClientSums };

// The home warehouse of coroutine `index`.
uint32_t home_warehouse(const Config& c, uint32_t index);

// `deliveries` is shared by the clients of a node and must outlive them;
// null: every terminal runs its Deliveries itself, each searching from
// order id 0. `history_seq`: the sequence number of the client's next
// HISTORY key (0 after a load; after a restart, one above the highest its
// slot has in the recovered database).
//
// pending_sums(): a New-Order adds one to kNewOrdersCommitted; the other
// sums count transactions that did not commit.
std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            Deliveries* deliveries, uint32_t history_seq = 0);

}  // namespace drtmx::bench::tpcc
