// TPC-C (v5.11) workload settings: the scale (warehouses, and the explicit
// scaled-down options) and the transaction mix and remote ratios. The
// tables that grow during a run (ORDER, NEW-ORDER, ORDER-LINE,
// ORDER-BY-CUSTOMER, HISTORY) grow as rows arrive: only their key encodings
// bound them (tpcc_schema.h). parse() turns drtmx-bench options into a
// Config; every error names the option and what it accepts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "driver/workload.h"

namespace drtmx::bench::tpcc {

constexpr uint32_t kDistricts = 10;  // per warehouse (clause 4.2.2)
constexpr uint32_t kMaxOrderLines = 15;
constexpr uint32_t kMinOrderLines = 5;
constexpr int kTxnTypes = 5;
enum Type : int { kNewOrderTxn, kPaymentTxn, kOrderStatusTxn, kDeliveryTxn, kStockLevelTxn };

struct Config {
  // Cluster shape (from the driver).
  uint16_t nodes = 1;
  uint16_t threads = 1;
  uint16_t coroutines = 1;
  uint16_t replicas = 1;
  std::vector<uint16_t> copies;  // after a failover: per warehouse partition (empty: replicas)

  uint32_t warehouses_per_node = 1;  // default: one per worker thread
  // Scale. The specification's values are the defaults; anything else is a
  // scaled-down run, which describe() prints.
  uint32_t items = 100000;             // ITEM rows = STOCK rows per warehouse
  uint32_t customers = 3000;           // per district; also initial orders per district
  uint32_t stock_level_districts = 1;  // districts one Stock-Level scans (thesis: 20)
  std::array<uint32_t, kTxnTypes> mix = {45, 43, 4, 4, 4};  // percent, sums to 100
  uint32_t remote_item_pct = 1;      // New-Order lines supplied by another warehouse
  uint32_t remote_payment_pct = 15;  // Payments for a customer of another warehouse
  uint32_t by_last_name_pct = 60;    // Payment / Order-Status customer by last name
  uint32_t rollback_pct = 1;         // New-Orders with an unused item (roll back)
  bool force_distributed = false;    // every New-Order has a line on another node
  std::string variant = "standard";
  uint64_t seed = 1;  // the data's seed (identical on every copy)

  uint32_t warehouses() const { return uint32_t{nodes} * warehouses_per_node; }
  // Orders initially in NEW-ORDER per district (900 of 3000, clause 4.3.3.1).
  uint32_t initial_new_orders() const { return customers * 3 / 10; }
  bool full_scale() const { return items == 100000 && customers == 3000; }
};

// Options: --warehouses-per-node, --items, --customers,
// --stock-level-districts, --mix, --remote-item-pct, --remote-payment-pct,
// --rollback-pct,
// --variant=standard|no|no-os (presets; explicit options override them).
// --order-room (removed: the tables grow) is refused with a message saying
// so.
Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env);

}  // namespace drtmx::bench::tpcc
