// Trade-Result (clause 3.3.8, tpce_txns.h): the market emulator reports a
// submitted trade executed at a price; the trade is completed.
#include <algorithm>

#include "tpce/tpce_gen.h"
#include "tpce/tpce_txn_util.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

using txn::Abort;

Abort trade_result(txn::Txn& tx, const TradeResultInput& in, TradeResultOutput* out) {
  *out = TradeResultOutput{};
  const uint64_t trade = in.trade.trade;
  const int64_t price = in.trade.price;
  // Frame 1: the trade, its type, the holding summary.
  TradeRow t;
  TPCE_TRY(tx.get_for_update(kTrade, trade, &t));
  if (t.t_st_id != kSbmt) {
    out->not_submitted = true;
    return tx.user_abort();
  }
  TradeTypeRow tt;
  TPCE_TRY(tx.get(kTradeType, t.t_tt_id, &tt));
  const bool sell = tt.tt_is_sell;
  const uint64_t ca_id = t.t_ca_id;
  const uint32_t s = t.t_s;
  const int32_t qty = t.t_qty;
  const uint64_t hs_key = holding_summary_key(ca_id, s);
  HoldingSummaryRow hs{0, 0};
  bool have_hs = false;
  TPCE_TRY(get_if(tx, kHoldingSummary, hs_key, &hs, &have_hs, true));
  // Frame 2: the account, its customer; the holdings.
  CustomerAccountRow ca;
  TPCE_TRY(t.t_is_cash ? tx.get_for_update(kCustomerAccount, account_key(ca_id), &ca)
                       : tx.get(kCustomerAccount, account_key(ca_id), &ca));
  CustomerRow cu;
  TPCE_TRY(tx.get(kCustomer, customer_key(ca.ca_c_id), &cu));
  int32_t needed = qty;
  int64_t basis = 0;
  uint32_t hh_k = 0;
  auto history = [&](uint64_t h_t_id, int32_t before, int32_t after) {
    const HoldingHistoryRow hh{h_t_id, before, after};
    return tx.insert(kHoldingHistory, holding_history_key(trade, hh_k++), &hh);
  };
  if (have_hs && (sell ? hs.hs_qty > 0 : hs.hs_qty < 0)) {
    txn::Txn::Rows rows;
    TPCE_TRY(tx.scan(kHolding, holding_key(ca_id, s, 0), holding_key(ca_id, s, 0xffffff), 100000,
                     &rows));
    const size_t n = rows.keys.size();
    for (size_t i = 0; i < n && needed > 0; ++i) {
      const size_t at = t.t_lifo ? n - 1 - i : i;
      auto h = row_at<HoldingRow>(rows, at);
      const int32_t have = h.h_qty < 0 ? -h.h_qty : h.h_qty;
      const int32_t take = std::min(have, needed);
      const int32_t after = h.h_qty < 0 ? h.h_qty + take : h.h_qty - take;
      TPCE_TRY(history(h.h_t_id, h.h_qty, after));
      basis += int64_t{take} * h.h_price;
      needed -= take;
      if (after == 0) {
        TPCE_TRY(tx.remove(kHolding, rows.keys[at]));
      } else {
        h.h_qty = after;
        TPCE_TRY(tx.put(kHolding, rows.keys[at], &h));
      }
    }
  }
  if (needed > 0) {  // opens a holding (long for a buy, short for a sell)
    const HoldingRow h{.h_t_id = trade,
                       .h_dts = in.now,
                       .h_price = price,
                       .h_qty = sell ? -needed : needed,
                       .pad_0 = {}};
    TPCE_TRY(history(trade, 0, h.h_qty));
    TPCE_TRY(tx.insert(kHolding, holding_key(ca_id, s, hs.hs_next), &h));
    ++hs.hs_next;
  }
  hs.hs_qty += sell ? -qty : qty;
  if (hs.hs_qty == 0) {
    if (have_hs) TPCE_TRY(tx.remove(kHoldingSummary, hs_key));
  } else if (have_hs) {
    TPCE_TRY(tx.put(kHoldingSummary, hs_key, &hs));
  } else {
    TPCE_TRY(tx.insert(kHoldingSummary, hs_key, &hs));
  }
  // Frame 3: the tax on a sell's gain.
  int64_t tax = 0;
  if (sell && ca.ca_tax_st != 0) {
    const int64_t gain = int64_t{qty} * price - basis;
    int64_t rate = 0;
    for (uint32_t k = 0; k < 2; ++k) {
      CustomerTaxrateRow cx;
      TPCE_TRY(tx.get(kCustomerTaxrate, customer_taxrate_key(ca.ca_c_id, k), &cx));
      TaxrateRow r;
      TPCE_TRY(tx.get(kTaxrate, cx.cx_tx_id, &r));
      rate += r.tx_rate;
    }
    if (gain > 0) tax = gain * rate / 100000;
  }
  // Frame 4: the commission.
  SecurityRow sec;
  TPCE_TRY(tx.get(kSecurity, security_key(s), &sec));
  CommissionRateRow cr;
  TPCE_TRY(tx.get(kCommissionRate,
                  commission_rate_key(cu.c_tier, t.t_tt_id, sec.s_ex_id, quantity_band(qty)), &cr));
  const int64_t comm = commission(cr.cr_rate, qty, price);
  // Frame 5: the trade completed, its history, the broker.
  t.t_st_id = kCmpt;
  t.t_trade_price = price;
  t.t_comm = comm;
  t.t_tax = tax;
  t.t_dts = in.now;
  TPCE_TRY(tx.put(kTrade, trade, &t));
  const TradeHistoryRow th{in.now};
  TPCE_TRY(tx.insert(kTradeHistory, trade_history_key(trade, kCmpt), &th));
  BrokerRow b;
  TPCE_TRY(tx.get_for_update(kBroker, broker_key(ca.ca_b_id), &b));
  b.b_num_trades += 1;
  b.b_comm_total += comm;
  TPCE_TRY(tx.put(kBroker, broker_key(ca.ca_b_id), &b));
  // Frame 6: settlement, and the cash of a cash trade.
  const int64_t amt = settlement_amount(sell, qty, price, t.t_chrg, comm, tax);
  SettlementRow se{};
  set_text(se.se_cash_type, sizeof se.se_cash_type, t.t_is_cash ? "Cash Account" : "Margin");
  se.se_cash_due_date = in.now + 2 * 86400000;
  se.se_amt = amt;
  TPCE_TRY(tx.insert(kSettlement, trade, &se));
  if (t.t_is_cash) {
    CashTransactionRow ct{};
    ct.ct_dts = in.now;
    ct.ct_amt = amt;
    set_text(ct.ct_name, sizeof ct.ct_name,
             std::string(sell ? "Sell " : "Buy ") + std::to_string(qty) + " shares");
    TPCE_TRY(tx.insert(kCashTransaction, trade, &ct));
    ca.ca_bal += amt;
    TPCE_TRY(tx.put(kCustomerAccount, account_key(ca_id), &ca));
  }
  out->settlement = amt;
  out->tax = tax;
  out->comm = comm;
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpce
