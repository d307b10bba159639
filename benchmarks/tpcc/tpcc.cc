// TPC-C workload glue (tpcc.h): options, tables, loader, clients, oracle.
#include "tpcc/tpcc.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "tpcc/tpcc_check.h"
#include "tpcc/tpcc_client.h"
#include "tpcc/tpcc_loader.h"
#include "tpcc/tpcc_schema.h"

namespace drtmx::bench::tpcc {
namespace {

class Tpcc final : public Workload {
 public:
  explicit Tpcc(const Config& c)
      : c_(c), deliveries_(std::make_unique<Deliveries>(c.warehouses())) {}

  std::string name() const override { return "tpcc"; }
  std::vector<std::string> txn_types() const override {
    return {"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"};
  }
  std::vector<store::TableSpec> tables() const override { return table_specs(c_); }
  std::string describe() const override {
    std::ostringstream os;
    os << "variant=" << c_.variant << " warehouses=" << c_.warehouses() << " ("
       << c_.warehouses_per_node << "/node) mix=";
    for (int i = 0; i < kTxnTypes; ++i) os << (i ? "," : "") << c_.mix[i];
    os << " remote_item=" << c_.remote_item_pct << "% remote_payment=" << c_.remote_payment_pct
       << "%";
    if (c_.force_distributed) os << " every_new_order_distributed";
    if (c_.rollback_pct != 1) os << " rollback=" << c_.rollback_pct << "%";
    os << " stock_level_districts=" << c_.stock_level_districts;
    if (!c_.full_scale()) {
      os << " SCALED-DOWN: items=" << c_.items
         << " (spec 100000) customers_per_district=" << c_.customers << " (spec 3000)";
    }
    return os.str();
  }
  size_t arena_bytes() const override {
    // Stock-Level keeps up to 300 ORDER-LINE and 300 STOCK rows per district
    // scanned in its read set; Delivery ten orders' lines and customers.
    return (128 + size_t{c_.stock_level_districts} * 160) * 1024;
  }

  std::string report(const std::vector<double>& per_type_per_s) const override {
    if (per_type_per_s.size() <= kNewOrderTxn) return "";
    std::ostringstream os;
    os << "  tpmC              " << static_cast<uint64_t>(per_type_per_s[kNewOrderTxn] * 60)
       << " (New-Orders committed per minute)\n";
    return os.str();
  }

  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    return tpcc::load(node, cat, c_);
  }
  std::unique_ptr<WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    const uint32_t slot = index + 1;
    return make_client(c_, index, seed, deliveries_.get(),
                       slot < history_next_.size() ? history_next_[slot] : 0);
  }

  // After a restart: each client's next HISTORY sequence number (one above
  // the highest its slot has in its home warehouse — a Payment that
  // committed just before the crash included), and the Delivery bounds
  // (each district's oldest undelivered order). Both from the primaries of
  // this node, where this node's clients have their homes.
  Status recovered(const store::tables::StoreNode& node, const store::Catalog& cat) override {
    const store::TableSpec& wt = *cat.find(kWarehouse);
    const uint64_t seq_mask = (uint64_t{1} << kHistorySeqBits) - 1;
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    // Visits the keys of ordered table t in [lo, hi] in this node's copy of p.
    auto keys_of = [&](txn::TableId t, store::PartitionId p, uint64_t lo, uint64_t hi, size_t limit,
                       const std::function<void(uint64_t)>& fn) -> Status {
      const store::tables::LocalPartition* lp = node.partition(t, p);
      if (lp == nullptr || lp->tree == nullptr)
        return internal_error("tpcc: no local copy of " + cat.find(t)->name + " partition " +
                              std::to_string(p));
      size_t seen = 0;
      for (uint64_t start = lo;;) {
        const bool end = lp->tree->scan(start, 4096, keys, values);
        for (uint64_t k : keys) {
          if (k > hi || seen == limit) return Status::ok();
          ++seen;
          fn(k);
        }
        if (end || keys.empty() || keys.back() >= hi) return Status::ok();
        start = keys.back() + 1;
      }
    };
    for (store::PartitionId p : cat.hosted(node.node(), wt)) {
      if (!node.is_primary(wt, p)) continue;
      const uint32_t w = p + 1;
      DRTMX_RETURN_IF_ERROR(keys_of(kHistory, p, wh(w), wh(w + 1) - 1, ~size_t{0}, [&](uint64_t k) {
        const uint64_t slot = (k >> kHistorySeqBits) & kMaxHistorySlot;
        const uint32_t next = static_cast<uint32_t>((k & seq_mask) + 1);
        if (slot == 0) return;  // the loader's rows
        if (history_next_.size() <= slot) history_next_.resize(slot + 1, 0);
        history_next_[slot] = std::max(history_next_[slot], next);
      }));
      for (uint32_t d = 1; d <= kDistricts; ++d) {
        uint32_t oldest = 0;
        DRTMX_RETURN_IF_ERROR(keys_of(kNewOrder, p, new_order_key(w, d, 0),
                                      new_order_key(w, d, kMaxOrderId), 1,
                                      [&](uint64_t k) { oldest = order_id_of(k); }));
        if (oldest == 0) {  // none undelivered: the next order is the oldest
          DistrictNextRow next{};
          auto r = node.get_local(*cat.find(kDistrictNext), district_key(w, d),
                                  {reinterpret_cast<uint8_t*>(&next), sizeof next});
          if (!r.is_ok()) return r.status();
          if (*r) oldest = next.d_next_o_id;
        }
        if (oldest > 0) deliveries_->delivered(w, d, oldest);
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
  // Shared by this node's terminals (tpcc_client.h); the clients never
  // outlive the workload.
  std::unique_ptr<Deliveries> deliveries_;
  // After a restart: per client slot, its next HISTORY sequence number.
  std::vector<uint32_t> history_next_;
};

}  // namespace

WorkloadInfo info() {
  WorkloadInfo w;
  w.name = "tpcc";
  w.summary = "TPC-C v5.11: New-Order, Payment, Order-Status, Delivery, Stock-Level";
  w.options = {
      {"variant",
       "standard (mix 45,43,4,4,4), no (New-Order only, every one distributed) or no-os "
       "(10% New-Order, 90% Order-Status); default standard"},
      {"warehouses-per-node", "warehouses (partitions) per node (default: worker threads)"},
      {"mix",
       "percentages of NewOrder,Payment,OrderStatus,Delivery,StockLevel (overrides "
       "--variant's)"},
      {"remote-item-pct", "percent of New-Order lines supplied by another warehouse (default 1)"},
      {"remote-payment-pct", "percent of Payments for another warehouse's customer (default 15)"},
      {"rollback-pct", "percent of New-Orders that roll back on an unused item (default 1)"},
      {"stock-level-districts", "districts one Stock-Level scans, 1..20 (default 1; thesis 20)"},
      {"order-room", "removed (refused): the tables grow as the run inserts rows, up to " +
                         std::to_string(kMaxOrderId) +
                         " orders per district (the order keys' limit)"},
      {"items", "SCALED-DOWN runs only: ITEM / STOCK rows (default 100000)"},
      {"customers", "SCALED-DOWN runs only: customers and initial orders per district (3000)"},
  };
  w.make = make_from<Config>(&parse, &make);
  return w;
}

std::unique_ptr<Workload> make(const Config& c) {
  return std::make_unique<Tpcc>(c);
}

}  // namespace drtmx::bench::tpcc
