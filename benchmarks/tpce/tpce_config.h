// TPC-E (v1.14) workload settings: the scale (load units of 1 000
// customers per node, initial trade days, market history days), the mix of
// the ten transactions, and the timed Data-Maintenance and Trade-Cleanup.
// The tables that grow during a run (TRADE and those that grow with it)
// grow as rows arrive: only the trade ids' key bits bound them
// (tpce_schema.h). parse() turns drtmx-bench options into a Config; every
// error names the option and what it accepts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "driver/workload.h"

namespace drtmx::bench::tpce {

// The report's transaction types, in TxnDraw::type order. The first ten are
// drawn by the mix; Data-Maintenance and Trade-Cleanup are timed.
enum Type : int {
  kBrokerVolume,
  kCustomerPosition,
  kMarketFeed,
  kMarketWatch,
  kSecurityDetail,
  kTradeLookup,
  kTradeOrder,
  kTradeResult,
  kTradeStatus,
  kTradeUpdate,
  kDataMaintenance,
  kTradeCleanup,
};
constexpr int kMixTypes = 10;
constexpr int kTxnTypes = 12;
// Types that only read (run as Kind::kReadOnly).
constexpr bool read_only_type(int t) {
  return t == kBrokerVolume || t == kCustomerPosition || t == kMarketWatch ||
         t == kSecurityDetail || t == kTradeLookup || t == kTradeStatus;
}

// Scaling constants of the specification (clause 2.6.1 / 4.x): per load
// unit of 1 000 customers, 10 brokers, 685 securities and 500 companies;
// one tpsE per 500 customers, so 2 x 8 x 3 600 = 57 600 trades per load
// unit and initial trade day (300 days: 17 280 per customer).
constexpr uint32_t kCustomersPerUnit = 1000;
constexpr uint32_t kBrokersPerUnit = 10;
constexpr uint32_t kSecuritiesPerUnit = 685;
constexpr uint32_t kCompaniesPerUnit = 500;
constexpr uint32_t kTradesPerUnitDay = 57600;
constexpr uint32_t kMaxUnits = 255;  // the unit is the top key byte

struct Config {
  // Cluster shape (from the driver).
  uint16_t nodes = 1;
  uint16_t threads = 1;
  uint16_t coroutines = 1;
  uint16_t replicas = 1;
  // After a failover: the live copies of each unit's partition (empty:
  // `replicas` everywhere). The replication check (C10) counts on them.
  std::vector<uint16_t> copies;
  int64_t backups(uint32_t unit) const {
    return int64_t{unit < copies.size() ? copies[unit] : replicas} - 1;
  }

  uint32_t customers_per_node = 1000;  // a multiple of 1 000 (load units)
  // Initial trade days (spec: 300). Fractions allowed: 0.25 = 14 400
  // trades per load unit.
  double initial_trade_days = 0.25;
  uint32_t market_days = 260;  // DAILY_MARKET rows per security (spec: 1 305)
  // Percent x 10 of BrokerVolume, CustomerPosition, MarketFeed, MarketWatch,
  // SecurityDetail, TradeLookup, TradeOrder, TradeResult, TradeStatus,
  // TradeUpdate (clause 6.2.2.1); sums to 1000.
  std::array<uint32_t, kMixTypes> mix = {49, 130, 10, 180, 140, 80, 101, 100, 190, 20};
  uint32_t dm_interval_ms = 1000;  // Data-Maintenance period (spec: 60 000)
  uint32_t tc_interval_ms = 2000;  // Trade-Cleanup period of each node
  uint64_t seed = 1;               // the data's seed (identical on every copy)

  uint32_t units_per_node() const { return customers_per_node / kCustomersPerUnit; }
  uint32_t units() const { return uint32_t{nodes} * units_per_node(); }
  uint32_t customers() const { return units() * kCustomersPerUnit; }
  uint32_t securities() const { return units() * kSecuritiesPerUnit; }
  uint32_t companies() const { return units() * kCompaniesPerUnit; }
  uint32_t brokers() const { return units() * kBrokersPerUnit; }
  // Trades the loader generates per load unit.
  uint32_t initial_trades() const;
  // The last trades of each unit's initial ones are left incomplete
  // (pending or submitted) for Trade-Cleanup, as a run that stopped.
  uint32_t incomplete_tail() const;
  // The read-only share of the mix, percent.
  double read_only_pct() const;
};

// Options: --customers, --initial-trade-days, --market-days, --mix,
// --dm-interval-ms, --tc-interval-ms. --trade-room (removed: the tables
// grow) is refused with a message saying so.
Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env);

}  // namespace drtmx::bench::tpce
