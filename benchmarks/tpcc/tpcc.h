// TPC-C (specification v5.11) as a drtmx-bench workload (--bench=tpcc),
// written with the public stored-procedure API (txn/txn.h) the way a user
// would.
//
// Warehouses are partitions (nodes x --warehouses-per-node, default one per
// worker thread); warehouse w is partition w - 1, its primary node
// (w - 1) % nodes. ITEM is read-only and replicated on every node.
// WAREHOUSE, DISTRICT, CUSTOMER and STOCK are hash tables; ORDER, NEW-ORDER,
// ORDER-LINE, HISTORY and the two indexes (customer by last name, order by
// customer) are XStore ordered tables (tpcc_schema.h).
//
// Transactions (tpcc_txns.h): New-Order, Payment, Order-Status, Delivery,
// Stock-Level; standard mix 45/43/4/4/4 (--mix), presets --variant=standard,
// no (New-Order only, each with a line supplied by another node: the
// thesis's TPC-C/no) and no-os (10 % New-Order / 90 % Order-Status).
//
// Oracle: the consistency conditions of clause 3.3.2 on every primary and
// backup copy after the run (tpcc_check.h); a violation fails the run and
// names the condition, warehouse and district.
#pragma once

#include <memory>

#include "driver/workload.h"
#include "tpcc/tpcc_config.h"

namespace drtmx::bench::tpcc {

// The registry entry (src/driver/workloads.cc).
WorkloadInfo info();

std::unique_ptr<Workload> make(const Config& c);

}  // namespace drtmx::bench::tpcc
