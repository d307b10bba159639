// TPC-E driver of one coroutine (tpce_client.h).
#include "tpce/tpce_client.h"

#include <algorithm>
#include <chrono>

#include "tpce/tpce_gen.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {
namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Client final : public WorkloadClient {
 public:
  Client(const Config& c, uint32_t index, uint64_t seed, Market* market, uint32_t seq)
      : c_(c),
        market_(market),
        rng_(mix64(seed, index + 1)),
        node_(client_node(c, index)),
        slot_(index + 1),
        seq_(std::max(seq, c.initial_trades())),
        quota_(trade_quota(c)) {
    const uint32_t per_node = uint32_t{c.threads} * c.coroutines;
    dm_owner_ = index == 0;
    tc_owner_ = index % per_node == 0;
    next_dm_ = next_tc_ = wall_ms();
    tc_from_.assign(c.units_per_node(), 0);
  }

  TxnDraw next() override {
    settle();
    drawn_ = true;
    const int64_t now = wall_ms();
    if (dm_owner_ && now >= next_dm_) {
      next_dm_ = now + c_.dm_interval_ms;
      type_ = kDataMaintenance;
      draw_dm();
      return {type_, [this](txn::Txn& tx) { return data_maintenance(tx, dm_, &dm_out_); }};
    }
    if (tc_owner_ && now >= next_tc_) {
      type_ = kTradeCleanup;
      tc_unit_ = (tc_unit_ + 1) % c_.units_per_node();
      tc_ = TradeCleanupInput{};
      tc_.unit = local_unit(tc_unit_);
      tc_.now = now;
      tc_.cutoff = now - 10 * int64_t{c_.tc_interval_ms};
      tc_.tail_from = c_.initial_trades() - c_.incomplete_tail();
      tc_.tail_to = c_.initial_trades();
      tc_.from = tc_from_[tc_unit_];
      next_tc_ = now + c_.tc_interval_ms;
      return {type_, [this](txn::Txn& tx) { return trade_cleanup(tx, tc_, &tc_out_); }};
    }
    type_ = draw_type();
    if (type_ == kTradeResult && !market_->take(&tr_.trade)) type_ = kTradeOrder;
    if (type_ == kTradeOrder && seq_ - c_.initial_trades() >= quota_) {
      ++sums_[kTradeIdsFull];  // reported by the check; a harmless read instead
      type_ = kTradeStatus;
    }
    switch (type_) {
      case kBrokerVolume:
        draw_bv();
        return ro([this](txn::Txn& tx) { return broker_volume(tx, bv_, &bv_out_); });
      case kCustomerPosition:
        cp_ = CustomerPositionInput{customer(), rng_.percent(50),
                                    static_cast<uint32_t>(rng_.uniform(0, 1000))};
        return ro([this](txn::Txn& tx) { return customer_position(tx, cp_, &cp_out_); });
      case kMarketFeed:
        mf_.ticks = market_->ticker(rng_, now, 20, node_, c_.nodes);
        mf_.now = now;
        return rw([this](txn::Txn& tx) { return market_feed(tx, mf_, &mf_out_); });
      case kMarketWatch:
        draw_mw();
        return ro([this](txn::Txn& tx) { return market_watch(tx, mw_, &mw_out_); });
      case kSecurityDetail: {
        const uint32_t rows = static_cast<uint32_t>(rng_.uniform(5, 20));
        sd_ = SecurityDetailInput{security(),
                                  static_cast<uint32_t>(rng_.uniform(0, c_.market_days - 5)), rows};
        return ro([this](txn::Txn& tx) { return security_detail(tx, sd_, &sd_out_); });
      }
      case kTradeLookup:
        draw_lookup(false);
        return ro([this](txn::Txn& tx) { return trade_lookup(tx, tl_, &tl_out_); });
      case kTradeOrder:
        draw_order(now);
        return rw([this](txn::Txn& tx) { return trade_order(tx, to_, &to_out_); });
      case kTradeResult:
        tr_.now = now;
        return rw([this](txn::Txn& tx) { return trade_result(tx, tr_, &tr_out_); });
      case kTradeStatus:
        ts_ = TradeStatusInput{account()};
        return ro([this](txn::Txn& tx) { return trade_status(tx, ts_, &ts_out_); });
      default:
        draw_lookup(true);
        return rw([this](txn::Txn& tx) { return trade_update(tx, tl_, &tl_out_); });
    }
  }

  void committed() override {
    drawn_ = false;
    switch (type_) {
      case kTradeOrder:
        ++seq_;
        ++sums_[kOrdersCommitted];
        if (to_out_.submitted) market_->submit(to_out_.order);
        break;
      case kTradeResult:
        ++sums_[kResultsCommitted];
        market_->completed(tr_.trade);
        break;
      case kMarketFeed:
        for (const Submitted& s : mf_out_.submitted) market_->submit(s);
        break;
      case kTradeCleanup:
        sums_[kCanceledByCleanup] += tc_out_.canceled;
        tc_from_[tc_unit_] = tc_out_.more ? tc_out_.next : 0;
        if (tc_out_.more) next_tc_ = 0;  // go on at once
        break;
      default:
        break;
    }
  }

  void pending_sums(std::vector<int64_t>& out) const override {
    out.assign(kClientSums, 0);
    if (type_ == kTradeOrder) out[kOrdersCommitted] = 1;
    if (type_ == kTradeResult) out[kResultsCommitted] = 1;
    if (type_ == kTradeCleanup) out[kCanceledByCleanup] = tc_out_.canceled;
  }

  void sums(std::vector<int64_t>& out) const override {
    out.assign(sums_, sums_ + kClientSums);
    if (drawn_ && type_ == kTradeOrder && to_out_.rolled_back) ++out[kRollbacks];
  }

 private:
  TxnDraw ro(txn::Procedure p) { return {type_, std::move(p), txn::Kind::kReadOnly}; }
  TxnDraw rw(txn::Procedure p) { return {type_, std::move(p), txn::Kind::kReadWrite}; }

  // The previous draw did not commit: a rolled-back order is counted, a
  // Trade-Result's trade goes back to the emulator.
  void settle() {
    if (!drawn_) return;
    if (type_ == kTradeOrder && to_out_.rolled_back) ++sums_[kRollbacks];
    if (type_ == kTradeResult && !tr_out_.not_submitted) market_->submit(tr_.trade);
    drawn_ = false;
  }

  int draw_type() {
    const uint32_t r = static_cast<uint32_t>(rng_.uniform(0, 999));
    uint32_t acc = 0;
    for (int t = 0; t < kMixTypes; ++t) {
      acc += c_.mix[t];
      if (r < acc) return t;
    }
    return kTradeStatus;  // not reached: the mix adds up to 1000
  }

  uint32_t local_unit(uint32_t k) const { return node_ + k * c_.nodes; }
  uint64_t customer() {
    const uint32_t u = local_unit(static_cast<uint32_t>(rng_.uniform(0, c_.units_per_node() - 1)));
    return uint64_t{u} * kCustomersPerUnit + rng_.uniform(0, kCustomersPerUnit - 1);
  }
  uint64_t account() {
    const uint64_t cu = customer();
    return account_of(cu,
                      static_cast<uint32_t>(rng_.uniform(0, customer_accounts(c_.seed, cu) - 1)));
  }
  uint32_t security() { return static_cast<uint32_t>(rng_.uniform(0, c_.securities() - 1)); }
  // A trade number bound: some time within the initial trades or after.
  uint64_t trade_bound() {
    const uint32_t n = c_.initial_trades();
    return t_num(static_cast<uint32_t>(rng_.uniform(n / 2, n + 1000)), 4095);
  }

  void draw_bv() {
    bv_ = BrokerVolumeInput{};
    const uint32_t B = c_.brokers();
    const uint32_t n = std::min<uint32_t>(B, static_cast<uint32_t>(rng_.uniform(20, 40)));
    while (bv_.brokers.size() < n) {
      const auto b = static_cast<uint32_t>(rng_.uniform(0, B - 1));
      if (std::find(bv_.brokers.begin(), bv_.brokers.end(), b) == bv_.brokers.end())
        bv_.brokers.push_back(b);
    }
    bv_.sector = static_cast<uint32_t>(rng_.uniform(0, kSectors - 1));
    bv_.units = c_.units();
  }

  void draw_mw() {
    mw_ = MarketWatchInput{};
    const uint64_t r = rng_.uniform(1, 100);
    if (r <= 60) {
      mw_.by = MarketWatchInput::kWatchList;
      mw_.c = customer();
    } else if (r <= 95) {
      mw_.by = MarketWatchInput::kAccount;
      mw_.ca = account();
    } else {
      mw_.by = MarketWatchInput::kIndustry;
      mw_.industry = static_cast<uint32_t>(rng_.uniform(0, kIndustries - 1));
      mw_.co_from = static_cast<uint32_t>(rng_.uniform(0, c_.companies() - 1));
      mw_.co_to = mw_.co_from + 500;
    }
    mw_.day = static_cast<uint32_t>(rng_.uniform(0, c_.market_days - 1));
  }

  void draw_lookup(bool update) {
    tl_ = TradeLookupInput{};
    const uint64_t r = rng_.uniform(1, 100);
    tl_.frame = update ? static_cast<uint8_t>(rng_.uniform(1, 3))
                       : static_cast<uint8_t>(r <= 30   ? 1
                                              : r <= 60 ? 2
                                              : r <= 90 ? 3
                                                        : 4);
    tl_.max_trades = 20;
    tl_.units = c_.units();
    switch (tl_.frame) {
      case 1: {
        const uint32_t n = c_.initial_trades();
        for (uint32_t i = 0; i < tl_.max_trades; ++i) {
          const uint32_t u =
              local_unit(static_cast<uint32_t>(rng_.uniform(0, c_.units_per_node() - 1)));
          tl_.trades.push_back(
              trade_key(u, t_num(static_cast<uint32_t>(rng_.uniform(0, n - 1)), 0)));
        }
        break;
      }
      case 3:
        tl_.s = security();
        tl_.tn = t_num(static_cast<uint32_t>(rng_.uniform(0, c_.initial_trades())), 0);
        break;
      default:
        tl_.ca = account();
        tl_.tn = trade_bound();
        break;
    }
  }

  void draw_order(int64_t now) {
    to_ = TradeOrderInput{};
    to_.ca = account();
    to_.permission = rng_.percent(90) ? 0 : static_cast<uint32_t>(rng_.uniform(1, 3));
    // A security of the account's basket, as EGen draws it (the spec's
    // customers trade what their accounts hold): HOLDING_SUMMARY stays at
    // one row per account and basket security, HOLDING at buys' open lots.
    const std::vector<uint32_t> basket = account_basket(c_.seed, to_.ca, c_.securities());
    to_.s = basket[rng_.uniform(0, basket.size() - 1)];
    const uint64_t t = rng_.uniform(1, 100);
    to_.tt = t <= 30 ? kTMB : t <= 60 ? kTMS : t <= 80 ? kTLB : t <= 90 ? kTLS : kTSL;
    static const int32_t kQty[] = {100, 200, 400, 800};
    to_.qty = kQty[rng_.uniform(0, 3)];
    to_.limit_price =
        security_base_price(c_.seed, to_.s) * static_cast<int64_t>(rng_.uniform(90, 110)) / 100;
    to_.margin = rng_.percent(8);
    to_.lifo = rng_.percent(35);
    to_.roll_back = rng_.percent(1);
    to_.trade = trade_key(account_unit(to_.ca), t_num(seq_, slot_));
    to_.now = now;
    to_out_ = TradeOrderOutput{};
  }

  void draw_dm() {
    dm_ = DataMaintenanceInput{};
    dm_.table = dm_table_++ % 12;
    dm_.c = customer();
    dm_.co = static_cast<uint32_t>(rng_.uniform(0, c_.companies() - 1));
    dm_.s = security();
    dm_.day = static_cast<uint32_t>(rng_.uniform(0, c_.market_days - 1));
    dm_.ex = static_cast<uint32_t>(rng_.uniform(0, kExchanges - 1));
    dm_.tx_id = static_cast<uint32_t>(rng_.uniform(0, kTaxrates - 1));
    dm_.new_s = security();
  }

  const Config c_;
  Market* const market_;
  Rng rng_;
  const uint32_t node_, slot_;
  uint32_t seq_;  // the sequence number of this client's next trade
  const uint32_t quota_;
  bool dm_owner_ = false, tc_owner_ = false;
  int64_t next_dm_ = 0, next_tc_ = 0;
  uint32_t dm_table_ = 0, tc_unit_ = 0;
  std::vector<uint64_t> tc_from_;
  int type_ = 0;
  bool drawn_ = false;
  int64_t sums_[kClientSums] = {};
  BrokerVolumeInput bv_;
  BrokerVolumeOutput bv_out_;
  CustomerPositionInput cp_;
  CustomerPositionOutput cp_out_;
  MarketFeedInput mf_;
  MarketFeedOutput mf_out_;
  MarketWatchInput mw_;
  MarketWatchOutput mw_out_;
  SecurityDetailInput sd_;
  SecurityDetailOutput sd_out_;
  TradeLookupInput tl_;
  TradeLookupOutput tl_out_;
  TradeOrderInput to_;
  TradeOrderOutput to_out_;
  TradeResultInput tr_;
  TradeResultOutput tr_out_;
  TradeStatusInput ts_;
  TradeStatusOutput ts_out_;
  DataMaintenanceInput dm_;
  DataMaintenanceOutput dm_out_;
  TradeCleanupInput tc_;
  TradeCleanupOutput tc_out_;
};

}  // namespace

uint32_t client_node(const Config& c, uint32_t index) {
  return index / (uint32_t{c.threads} * c.coroutines);
}

uint32_t trade_quota(const Config& c) {
  return kTradeSeqs - c.initial_trades();
}

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            Market* market, uint32_t seq) {
  return std::make_unique<Client>(c, index, seed, market, seq);
}

}  // namespace drtmx::bench::tpce
