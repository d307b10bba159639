// Trade-Order (clause 3.3.7, tpce_txns.h).
#include <algorithm>

#include "tpce/tpce_gen.h"
#include "tpce/tpce_txn_util.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

using txn::Abort;

Abort trade_order(txn::Txn& tx, const TradeOrderInput& in, TradeOrderOutput* out) {
  *out = TradeOrderOutput{};
  // Frame 1: the account, its customer and broker.
  CustomerAccountRow ca;
  TPCE_TRY(tx.get(kCustomerAccount, account_key(in.ca), &ca));
  CustomerRow cu;
  TPCE_TRY(tx.get(kCustomer, customer_key(ca.ca_c_id), &cu));
  BrokerRow b;
  TPCE_TRY(tx.get(kBroker, broker_key(ca.ca_b_id), &b));
  // Frame 2: the executor's permission (the owner's is row 0).
  txn::Txn::Rows rows;
  TPCE_TRY(tx.scan(kAccountPermission, account_permission_key(in.ca, 0),
                   account_permission_key(in.ca, 3), 4, &rows));
  if (rows.keys.empty()) return tx.user_abort();  // not authorized: no permission at all
  const auto ap = row_at<AccountPermissionRow>(rows, in.permission % rows.keys.size());
  // Frame 3: the security, its company, price and the trade's costs.
  SecurityRow sec;
  TPCE_TRY(tx.get(kSecurity, security_key(in.s), &sec));
  CompanyRow co;
  TPCE_TRY(tx.get(kCompany, company_key(sec.s_co_id), &co));
  LastTradeRow lt;
  TPCE_TRY(tx.get(kLastTrade, security_key(in.s), &lt));
  TradeTypeRow tt;
  TPCE_TRY(tx.get(kTradeType, in.tt, &tt));
  const bool sell = tt.tt_is_sell, market = tt.tt_is_mrkt;
  const int64_t requested = market ? lt.lt_price : in.limit_price;
  HoldingSummaryRow hs{0, 0};
  bool have_hs = false;
  TPCE_TRY(get_if(tx, kHoldingSummary, holding_summary_key(in.ca, in.s), &hs, &have_hs));
  // Estimates over the holdings the trade would close (FIFO or LIFO).
  if (have_hs && (sell ? hs.hs_qty > 0 : hs.hs_qty < 0)) {
    TPCE_TRY(tx.scan(kHolding, holding_key(in.ca, in.s, 0), holding_key(in.ca, in.s, 0xffffff),
                     1000, &rows));
    int32_t needed = in.qty;
    for (size_t i = 0; i < rows.keys.size() && needed > 0; ++i) {
      const auto h = row_at<HoldingRow>(rows, in.lifo ? rows.keys.size() - 1 - i : i);
      const int32_t take = std::min(needed, h.h_qty < 0 ? -h.h_qty : h.h_qty);
      out->buy_value += int64_t{take} * h.h_price;
      out->sell_value += int64_t{take} * requested;
      needed -= take;
    }
  }
  if (sell && ca.ca_tax_st != 0) {  // the tax rates of the customer
    for (uint32_t k = 0; k < 2; ++k) {
      CustomerTaxrateRow cx;
      TPCE_TRY(tx.get(kCustomerTaxrate, customer_taxrate_key(ca.ca_c_id, k), &cx));
      TaxrateRow r;
      TPCE_TRY(tx.get(kTaxrate, cx.cx_tx_id, &r));
    }
  }
  ChargeRow ch;
  TPCE_TRY(tx.get(kCharge, charge_key(in.tt, cu.c_tier), &ch));
  CommissionRateRow cr;
  TPCE_TRY(tx.get(kCommissionRate,
                  commission_rate_key(cu.c_tier, in.tt, sec.s_ex_id, quantity_band(in.qty)), &cr));
  // Frame 4: the trade, its history and indexes; a limit order's request.
  TradeRow t{};
  t.t_id = in.trade;
  t.t_dts = in.now;
  t.t_st_id = market ? kSbmt : kPndg;
  t.t_tt_id = in.tt;
  t.t_is_cash = !in.margin;
  t.t_lifo = in.lifo;
  t.t_s = in.s;
  t.t_qty = in.qty;
  t.t_bid_price = requested;
  t.t_ca_id = in.ca;
  set_text(t.t_exec_name, sizeof t.t_exec_name,
           text(ap.ap_f_name, sizeof ap.ap_f_name) + " " + text(ap.ap_l_name, sizeof ap.ap_l_name));
  t.t_chrg = ch.ch_chrg;
  t.t_comm = commission(cr.cr_rate, in.qty, requested);
  const uint64_t tn = trade_num(in.trade);
  const uint32_t u = unit_of(in.trade);
  TPCE_TRY(tx.insert(kTrade, in.trade, &t));
  const IndexRow idx{in.trade};
  TPCE_TRY(tx.insert(kTradeByAccount, trade_by_account_key(in.ca, tn), &idx));
  TPCE_TRY(tx.insert(kTradeBySecurity, trade_by_security_key(u, in.s, tn), &idx));
  const TradeHistoryRow th{in.now};
  TPCE_TRY(tx.insert(kTradeHistory, trade_history_key(in.trade, t.t_st_id), &th));
  if (!market) {
    IndustryRow ind;
    TPCE_TRY(tx.get(kIndustry, co.co_in_id, &ind));
    const TradeRequestRow tr{.tr_t_id = in.trade,
                             .tr_bid_price = requested,
                             .tr_dts = in.now,
                             .tr_s = in.s,
                             .tr_qty = in.qty,
                             .tr_b_id = ca.ca_b_id,
                             .tr_tt_id = in.tt,
                             .pad_0 = {}};
    const uint64_t trk = trade_request_key(in.s, in.trade);
    TPCE_TRY(tx.insert(kTradeRequest, trk, &tr));
    const IndexRow by_sector{trk};
    TPCE_TRY(tx.insert(kTradeRequestBySector, tr_by_sector_key(u, ind.in_sc_id, ca.ca_b_id, tn),
                       &by_sector));
  }
  // Frame 5: the customer changed their mind.
  if (in.roll_back) {
    out->rolled_back = true;
    return tx.user_abort();
  }
  out->submitted = market;
  out->order = Submitted{in.trade, in.s, in.qty, lt.lt_price};
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpce
