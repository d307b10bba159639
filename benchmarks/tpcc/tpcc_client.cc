// TPC-C terminal (tpcc_client.h).
#include "tpcc/tpcc_client.h"

#include <algorithm>

#include "tpcc/tpcc_loader.h"
#include "tpcc/tpcc_random.h"
#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {
namespace {

using txn::Abort;

class Client final : public WorkloadClient {
 public:
  Client(const Config& c, uint32_t index, uint64_t seed, Deliveries* deliveries,
         uint32_t history_seq)
      : c_(c),
        dl_(deliveries),
        rng_(seed * 0xD1B54A32D192ED03ull ^ (uint64_t{index} + 1) * 0x9E3779B97F4A7C15ull),
        C_(NURandC::for_run(NURandC::for_load(c.seed), seed)),
        home_(home_warehouse(c, index)),
        node_((home_ - 1) % c.nodes),
        slot_(index + 1),
        terminal_district_(index % kDistricts + 1),
        seq_(history_seq) {
    // Deliveries are queued only when the terminal has something else to
    // do meanwhile (a mix of Deliveries alone runs them in every terminal).
    queue_deliveries_ = dl_ != nullptr && c_.mix[kDeliveryTxn] < 100;
  }

  TxnDraw next() override {
    account_previous();
    if (agent_) {  // the Delivery this terminal took from the queue is over
      dl_->done(home_);
      agent_ = false;
    }
    if (queue_deliveries_ && dl_->claim(home_)) {
      agent_ = true;
      type_ = kDeliveryTxn;
    } else {
      type_ = draw_type(false);
      if (type_ == kDeliveryTxn && queue_deliveries_) {
        // Deferred (clause 2.7.2): queued for the warehouse's agent — this
        // terminal, if no Delivery of the warehouse is running; else it goes
        // on with another transaction of the mix.
        dl_->request(home_);
        if (dl_->claim(home_)) {
          agent_ = true;
        } else {
          type_ = draw_type(true);
        }
      }
    }
    if (type_ == kPaymentTxn && seq_ >= kHistoryRowsPerClient) {
      ++sums_[kHistoryFull];  // reported by the check; run something harmless instead
      type_ = kOrderStatusTxn;
    }
    ++clock_;
    switch (type_) {
      case kNewOrderTxn:
        draw_new_order();
        return {type_, [this](txn::Txn& tx) { return new_order(tx, c_, no_, &no_out_); }};
      case kPaymentTxn:
        draw_payment();
        return {type_, [this](txn::Txn& tx) { return payment(tx, c_, pay_, &pay_out_); }};
      case kOrderStatusTxn:
        draw_order_status();
        return {type_, [this](txn::Txn& tx) { return order_status(tx, c_, os_, &os_out_); },
                txn::Kind::kReadOnly};
      case kDeliveryTxn:
        del_ = DeliveryInput{home_, static_cast<uint32_t>(rng_.uniform(1, 10)), date(), {}};
        for (uint32_t d = 1; dl_ != nullptr && d <= kDistricts; ++d) {
          del_.from[d] = dl_->from(home_, d);
        }
        return {type_, [this](txn::Txn& tx) { return delivery(tx, c_, del_, &del_out_); }};
      default:
        sl_ =
            StockLevelInput{home_, terminal_district_, static_cast<int32_t>(rng_.uniform(10, 20))};
        return {type_, [this](txn::Txn& tx) { return stock_level(tx, c_, sl_, &sl_out_); },
                txn::Kind::kReadOnly};
    }
  }

  void committed() override {
    if (type_ == kNewOrderTxn) ++sums_[kNewOrdersCommitted];
    if (type_ == kDeliveryTxn && dl_ != nullptr) {
      for (uint32_t d = 1; d <= kDistricts; ++d) {
        if (del_out_.o_ids[d] != 0) dl_->delivered(del_.w, d, del_out_.o_ids[d] + 1);
      }
    }
    if (type_ == kPaymentTxn) ++seq_;
    drawn_ = false;  // nothing left to account
  }

  void pending_sums(std::vector<int64_t>& out) const override {
    out.assign(kClientSums, 0);
    if (type_ == kNewOrderTxn) out[kNewOrdersCommitted] = 1;
  }

  void sums(std::vector<int64_t>& out) const override {
    out.assign(sums_, sums_ + kClientSums);
    // The last draw may have ended in a rollback after the last next().
    if (drawn_ && type_ == kNewOrderTxn) {
      out[kRollbacks] += no_out_.rolled_back;
      out[kOrdersFull] += no_out_.full;
    }
  }

 private:
  int64_t date() const { return kLoadTime + static_cast<int64_t>(clock_); }

  // A transaction type by the mix, or by the mix without Delivery (its
  // share left out; the caller ensures the rest is not empty).
  int draw_type(bool skip_delivery) {
    const uint32_t total = skip_delivery ? 100 - c_.mix[kDeliveryTxn] : 100;
    const uint32_t r = static_cast<uint32_t>(rng_.uniform(0, total - 1));
    uint32_t acc = 0;
    for (int t = 0; t < kTxnTypes; ++t) {
      if (skip_delivery && t == kDeliveryTxn) continue;
      acc += c_.mix[t];
      if (r < acc) return t;
    }
    return kNewOrderTxn;  // not reached: the weights add up to total
  }

  // A New-Order that did not commit: rolled back on purpose, or refused.
  void account_previous() {
    if (drawn_ && type_ == kNewOrderTxn) {
      sums_[kRollbacks] += no_out_.rolled_back;
      sums_[kOrdersFull] += no_out_.full;
    }
    no_out_ = NewOrderOutput{};
    drawn_ = true;
  }

  uint32_t other_warehouse() {
    const uint32_t W = c_.warehouses();
    if (W == 1) return home_;
    uint32_t w = static_cast<uint32_t>(rng_.uniform(1, W - 1));
    return w >= home_ ? w + 1 : w;
  }
  // A warehouse whose primary is another node (or any other warehouse on a
  // single node).
  uint32_t warehouse_on_other_node() {
    if (c_.nodes == 1) return other_warehouse();
    uint32_t n = static_cast<uint32_t>(rng_.uniform(0, c_.nodes - 2));
    if (n >= node_) ++n;
    return n + static_cast<uint32_t>(rng_.uniform(0, c_.warehouses_per_node - 1)) * c_.nodes + 1;
  }

  void draw_new_order() {
    no_.w = home_;
    no_.d = static_cast<uint32_t>(rng_.uniform(1, kDistricts));
    no_.c = static_cast<uint32_t>(nurand(rng_, 1023, C_.c_id, 1, c_.customers));
    no_.ol_cnt = static_cast<uint32_t>(rng_.uniform(kMinOrderLines, kMaxOrderLines));
    no_.entry_d = date();
    for (uint32_t i = 0; i < no_.ol_cnt; ++i) {
      uint32_t item;
      do {  // distinct items per order
        item = static_cast<uint32_t>(nurand(rng_, 8191, C_.ol_i_id, 1, c_.items));
      } while (std::find(no_.item.begin(), no_.item.begin() + i, item) != no_.item.begin() + i);
      no_.item[i] = item;
      no_.supply_w[i] =
          c_.remote_item_pct && rng_.percent(c_.remote_item_pct) ? other_warehouse() : home_;
      no_.quantity[i] = static_cast<uint32_t>(rng_.uniform(1, 10));
    }
    if (c_.force_distributed && c_.warehouses() > 1) {
      no_.supply_w[rng_.uniform(0, no_.ol_cnt - 1)] = warehouse_on_other_node();
    }
    if (c_.rollback_pct && rng_.percent(c_.rollback_pct)) no_.item[no_.ol_cnt - 1] = c_.items + 1;
  }

  uint32_t last_name_number() {
    return static_cast<uint32_t>(nurand(rng_, 255, C_.c_last, 0, std::min(999u, c_.customers - 1)));
  }

  void draw_payment() {
    pay_.w = home_;
    pay_.d = static_cast<uint32_t>(rng_.uniform(1, kDistricts));
    if (c_.warehouses() > 1 && c_.remote_payment_pct && rng_.percent(c_.remote_payment_pct)) {
      pay_.c_w = other_warehouse();
      pay_.c_d = static_cast<uint32_t>(rng_.uniform(1, kDistricts));
    } else {
      pay_.c_w = home_;
      pay_.c_d = pay_.d;
    }
    pay_.by_name = rng_.percent(c_.by_last_name_pct);
    pay_.c = static_cast<uint32_t>(nurand(rng_, 1023, C_.c_id, 1, c_.customers));
    pay_.last = last_name_number();
    pay_.amount = static_cast<int64_t>(rng_.uniform(100, 500000));
    pay_.history_slot = slot_;
    pay_.history_seq = seq_;
    pay_.date = date();
  }

  void draw_order_status() {
    os_.w = home_;
    os_.d = static_cast<uint32_t>(rng_.uniform(1, kDistricts));
    os_.by_name = rng_.percent(c_.by_last_name_pct);
    os_.c = static_cast<uint32_t>(nurand(rng_, 1023, C_.c_id, 1, c_.customers));
    os_.last = last_name_number();
  }

  const Config c_;
  Deliveries* const dl_;
  bool queue_deliveries_ = false;
  bool agent_ = false;  // running a Delivery claimed from the queue
  Rng rng_;
  const NURandC C_;
  const uint32_t home_, node_, slot_, terminal_district_;
  uint32_t seq_ = 0;  // the sequence number of this client's next HISTORY row
  int type_ = 0;
  bool drawn_ = false;
  uint64_t clock_ = 0;
  int64_t sums_[kClientSums] = {};
  NewOrderInput no_;
  NewOrderOutput no_out_;
  PaymentInput pay_;
  PaymentOutput pay_out_;
  OrderStatusInput os_;
  OrderStatusOutput os_out_;
  DeliveryInput del_;
  DeliveryOutput del_out_;
  StockLevelInput sl_;
  StockLevelOutput sl_out_;
};

}  // namespace

uint32_t home_warehouse(const Config& c, uint32_t index) {
  const uint32_t per_node = uint32_t{c.threads} * c.coroutines;
  const uint32_t node = index / per_node, local = index % per_node;
  const uint32_t thread = local / c.coroutines, co = local % c.coroutines;
  const uint32_t j = (thread + uint32_t{c.threads} * co) % c.warehouses_per_node;
  return node + j * c.nodes + 1;
}

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            Deliveries* deliveries, uint32_t history_seq) {
  return std::make_unique<Client>(c, index, seed, deliveries, history_seq);
}

}  // namespace drtmx::bench::tpcc
