// TPC-E workload glue (tpce.h): options, tables, loader, clients, checks.
#include "tpce/tpce.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "tpce/tpce_check.h"
#include "tpce/tpce_client.h"
#include "tpce/tpce_loader.h"
#include "tpce/tpce_market.h"
#include "tpce/tpce_schema.h"

namespace drtmx::bench::tpce {
namespace {

class Tpce final : public Workload {
 public:
  explicit Tpce(const Config& c)
      : c_(c), market_(std::make_unique<Market>(c.seed, c.securities())) {}

  std::string name() const override { return "tpce"; }
  std::vector<std::string> txn_types() const override {
    return {"BrokerVolume",   "CustomerPosition", "MarketFeed",      "MarketWatch",
            "SecurityDetail", "TradeLookup",      "TradeOrder",      "TradeResult",
            "TradeStatus",    "TradeUpdate",      "DataMaintenance", "TradeCleanup"};
  }
  std::vector<store::TableSpec> tables() const override { return table_specs(c_); }
  std::string describe() const override {
    std::ostringstream os;
    os << "customers=" << c_.customers() << " (" << c_.customers_per_node << "/node, " << c_.units()
       << " load units) mix=";
    for (int i = 0; i < kMixTypes; ++i)
      os << (i ? "," : "") << c_.mix[i] / 10 << "." << c_.mix[i] % 10;
    os << " (read-only " << std::fixed << std::setprecision(1) << c_.read_only_pct() << "%)"
       << " dm_interval_ms=" << c_.dm_interval_ms << " tc_interval_ms=" << c_.tc_interval_ms
       << " SCALED-DOWN: initial_trade_days=" << std::setprecision(3) << c_.initial_trade_days
       << " (" << c_.initial_trades()
       << " trades per unit; spec 300 days) market_days=" << c_.market_days << " (spec 1305)";
    return os.str();
  }
  size_t arena_bytes() const override {
    // Market-Watch reads up to 150 securities x 3 rows, Broker-Volume the
    // pending requests of a sector, Trade-Result an account's holdings.
    return size_t{2} * 1024 * 1024;
  }
  std::string report(const std::vector<double>& per_type_per_s) const override {
    if (per_type_per_s.size() <= kTradeResult) return "";
    double total = 0, ro = 0;
    for (int t = 0; t < kMixTypes && t < static_cast<int>(per_type_per_s.size()); ++t) {
      total += per_type_per_s[t];
      if (read_only_type(t)) ro += per_type_per_s[t];
    }
    std::ostringstream os;
    os << std::fixed << std::setprecision(0) << "  tpsE              "
       << per_type_per_s[kTradeResult] << " (Trade-Results committed per second)\n"
       << std::setprecision(1) << "  read-only share   " << (total > 0 ? 100 * ro / total : 0)
       << "% of the mix's committed transactions (mix: " << c_.read_only_pct() << "%)\n";
    return os.str();
  }
  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    return tpce::load(node, cat, c_);
  }
  std::unique_ptr<WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    const uint32_t slot = index + 1;
    return make_client(c_, index, seed, market_.get(),
                       slot < next_seq_.size() ? next_seq_[slot] : 0);
  }

  // After a restart: each client's next trade sequence number (one above
  // the highest its slot has in the units whose primary is this node, where
  // its trades are) — a Trade-Order that committed just before the crash
  // included. Submitted trades the emulator held are lost with it: they
  // stay submitted (a legal state; the checks accept it).
  Status recovered(const store::tables::StoreNode& node, const store::Catalog& cat) override {
    const store::TableSpec& tt = *cat.find(kTrade);
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    for (store::PartitionId u : cat.primaries(node.node(), tt)) {
      const store::tables::LocalPartition* lp = node.partition(kTrade, u);
      if (lp == nullptr || lp->tree == nullptr)
        return internal_error("tpce: no local copy of trade unit " + std::to_string(u));
      for (uint64_t start = unit_bits(u);;) {
        const bool end = lp->tree->scan(start, 4096, keys, values);
        for (uint64_t k : keys) {
          if (unit_of(k) != u) return Status::ok();
          const uint32_t slot = k & ((1u << kTradeSlotBits) - 1);
          const auto seq = static_cast<uint32_t>(trade_num(k) >> kTradeSlotBits);
          if (slot == 0) continue;  // the loader's
          if (next_seq_.size() <= slot) next_seq_.resize(slot + 1, 0);
          next_seq_[slot] = std::max(next_seq_[slot], seq + 1);
        }
        if (end || keys.empty()) break;
        start = keys.back() + 1;
      }
    }
    return Status::ok();
  }
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    return audit_node(node, cat, c_);
  }
  Status check(const std::vector<int64_t>& node_sums,
               const std::vector<int64_t>& client_sums) const override {
    return check_sums(c_, node_sums, client_sums);
  }

 private:
  Config c_;
  // This node's market exchange emulator, shared by its clients (which
  // never outlive the workload).
  std::unique_ptr<Market> market_;
  // After a restart: per client slot, its next trade sequence number.
  std::vector<uint32_t> next_seq_;
};

}  // namespace

WorkloadInfo info() {
  WorkloadInfo w;
  w.name = "tpce";
  w.summary =
      "TPC-E v1.14: the brokerage mix of ten transactions (76.9% read-only), Data-Maintenance, "
      "Trade-Cleanup";
  w.options = {
      {"customers", "customers per node, a multiple of 1000 (load units; default 1000)"},
      {"initial-trade-days",
       "initial trade days, fractions allowed (57600 trades per load unit and day; default 0.25, "
       "spec 300)"},
      {"market-days", "DAILY_MARKET rows per security (default 260, spec 1305)"},
      {"mix",
       "percentages of BrokerVolume,CustomerPosition,MarketFeed,MarketWatch,SecurityDetail,"
       "TradeLookup,TradeOrder,TradeResult,TradeStatus,TradeUpdate (one decimal; default the "
       "specification's 4.9,13,1,18,14,8,10.1,10,19,2)"},
      {"dm-interval-ms",
       "Data-Maintenance period, one client of the cluster (default 1000; spec "
       "60000)"},
      {"tc-interval-ms", "Trade-Cleanup period on each node (default 2000)"},
      {"trade-room",
       "removed (refused): the tables grow as the run inserts rows, up to 2^26 trade sequence "
       "numbers per client"},
  };
  w.make = make_from<Config>(&parse, &make);
  return w;
}

std::unique_ptr<Workload> make(const Config& c) {
  return std::make_unique<Tpce>(c);
}

}  // namespace drtmx::bench::tpce
