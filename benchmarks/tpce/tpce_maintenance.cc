// Data-Maintenance and Trade-Cleanup (clauses 3.3.11, 3.3.12; tpce_txns.h).
#include <algorithm>

#include "tpce/tpce_txn_util.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

using txn::Abort;

namespace {

// Reads a row for update, lets `change` modify it, writes it back.
template <typename Row, typename Fn>
Abort update(txn::Txn& tx, txn::TableId t, uint64_t key, Fn change) {
  Row row;
  TPCE_TRY(tx.get_for_update(t, key, &row));
  change(row);
  return tx.put(t, key, &row);
}

}  // namespace

Abort data_maintenance(txn::Txn& tx, const DataMaintenanceInput& in, DataMaintenanceOutput* out) {
  *out = DataMaintenanceOutput{};
  switch (in.table) {
    case 0: {  // ACCOUNT_PERMISSION: the ACL of the first account's owner row
      TPCE_TRY(update<AccountPermissionRow>(
          tx, kAccountPermission, account_permission_key(account_of(in.c, 0), 0),
          [](AccountPermissionRow& r) { r.ap_acl[3] = r.ap_acl[3] == '0' ? '1' : '0'; }));
      break;
    }
    case 1:  // ADDRESS: the customer's second address line
      TPCE_TRY(update<AddressRow>(tx, kAddress, customer_address_key(in.c), [](AddressRow& r) {
        toggle_text(r.ad_line2, sizeof r.ad_line2);
      }));
      break;
    case 2:  // COMPANY: the S&P rating
      TPCE_TRY(update<CompanyRow>(tx, kCompany, company_key(in.co), [](CompanyRow& r) {
        r.co_sp_rate[0] = r.co_sp_rate[0] == 'A' ? 'B' : 'A';
      }));
      break;
    case 3:  // CUSTOMER: the second e-mail address
      TPCE_TRY(update<CustomerRow>(tx, kCustomer, customer_key(in.c), [](CustomerRow& r) {
        toggle_text(r.c_email_2, sizeof r.c_email_2);
      }));
      break;
    case 4:  // CUSTOMER_TAXRATE: the local rate moves to another local one
      TPCE_TRY(update<CustomerTaxrateRow>(
          tx, kCustomerTaxrate, customer_taxrate_key(in.c, 1), [&](CustomerTaxrateRow& r) {
            r.cx_tx_id =
                kTaxrates / 2 + (r.cx_tx_id - kTaxrates / 2 + 1 + in.tx_id % 10) % (kTaxrates / 2);
          }));
      break;
    case 5:  // DAILY_MARKET: the volume of a day
      TPCE_TRY(update<DailyMarketRow>(tx, kDailyMarket, daily_market_key(in.s, in.day),
                                      [](DailyMarketRow& r) { r.dm_vol += 1; }));
      break;
    case 6:  // EXCHANGE: the description
      TPCE_TRY(update<ExchangeRow>(tx, kExchange, exchange_key(in.ex), [](ExchangeRow& r) {
        toggle_text(r.ex_desc, sizeof r.ex_desc);
      }));
      break;
    case 7:  // FINANCIAL: a quarter's start, one day on
      TPCE_TRY(update<FinancialRow>(tx, kFinancial, financial_key(in.co, in.day % 20),
                                    [](FinancialRow& r) { r.fi_basic_eps += 1; }));
      break;
    case 8:  // NEWS_ITEM: the date, one day on
      TPCE_TRY(update<NewsItemRow>(tx, kNewsItem, news_key(in.co, in.day % 2),
                                   [](NewsItemRow& r) { r.ni_dts += 86400000; }));
      break;
    case 9:  // SECURITY: the exchange date, one day on
      TPCE_TRY(update<SecurityRow>(tx, kSecurity, security_key(in.s),
                                   [](SecurityRow& r) { r.s_exch_date += 86400000; }));
      break;
    case 10:  // TAXRATE: the name
      TPCE_TRY(update<TaxrateRow>(tx, kTaxrate, in.tx_id % kTaxrates,
                                  [](TaxrateRow& r) { toggle_text(r.tx_name, sizeof r.tx_name); }));
      break;
    default: {  // WATCH_ITEM: a customer's first item replaced by another security
      txn::Txn::Rows rows;
      TPCE_TRY(tx.scan(kWatchItem, watch_item_key(in.c, 0), watch_item_key(in.c, (1u << 18) - 1),
                       1000, &rows));
      if (rows.keys.empty()) break;
      bool present = false;
      for (uint64_t k : rows.keys) present |= k == watch_item_key(in.c, in.new_s);
      if (present) break;  // already watched: nothing to change
      TPCE_TRY(tx.remove(kWatchItem, rows.keys[0]));
      const WatchItemRow wi{in.new_s};
      TPCE_TRY(tx.insert(kWatchItem, watch_item_key(in.c, in.new_s), &wi));
      break;
    }
  }
  out->updated = 1;
  return Abort::kNone;
}

Abort trade_cleanup(txn::Txn& tx, const TradeCleanupInput& in, TradeCleanupOutput* out) {
  *out = TradeCleanupOutput{};
  txn::Txn::Rows rows;
  const TradeHistoryRow now{in.now};
  auto cancel = [&](uint64_t trade, bool pending) -> Abort {
    TradeRow t;
    TPCE_TRY(tx.get_for_update(kTrade, trade, &t));
    t.t_st_id = kCncl;
    TPCE_TRY(tx.put(kTrade, trade, &t));
    if (pending) TPCE_TRY(tx.insert(kTradeHistory, trade_history_key(trade, kSbmt), &now));
    TPCE_TRY(tx.insert(kTradeHistory, trade_history_key(trade, kCncl), &now));
    ++out->canceled;
    return Abort::kNone;
  };
  // The loader's submitted trades (a run that stopped before their result).
  if (in.tail_to > in.tail_from) {
    TPCE_TRY(tx.scan(kTrade, trade_key(in.unit, t_num(static_cast<uint32_t>(in.tail_from), 0)),
                     trade_key(in.unit, t_num(static_cast<uint32_t>(in.tail_to), 0)) - 1, 4096,
                     &rows));
    for (size_t i = 0; i < rows.keys.size(); ++i) {
      if (row_at<TradeRow>(rows, i).t_st_id != kSbmt) continue;
      if (out->canceled == in.max) {
        out->more = true;
        return Abort::kNone;
      }
      TPCE_TRY(cancel(rows.keys[i], false));
    }
  }
  // Pending limit orders placed before the cutoff, all sectors of the unit.
  const uint64_t from = std::max(in.from, unit_bits(in.unit));
  TPCE_TRY(tx.scan(kTradeRequestBySector, from, unit_bits(in.unit + 1) - 1, 4 * in.max, &rows));
  const txn::Txn::Rows index = rows;
  std::vector<txn::TableKey> keys;
  for (size_t i = 0; i < index.keys.size(); ++i) {
    keys.push_back({kTradeRequest, row_at<IndexRow>(index, i).key});
  }
  TPCE_TRY(tx.prefetch(keys, false));
  for (size_t i = 0; i < index.keys.size(); ++i) {
    const uint64_t trk = row_at<IndexRow>(index, i).key;
    TradeRequestRow tr;
    TPCE_TRY(tx.get(kTradeRequest, trk, &tr));
    if (tr.tr_dts >= in.cutoff) continue;
    if (out->canceled == in.max) {
      out->more = true;
      out->next = index.keys[i];
      return Abort::kNone;
    }
    TPCE_TRY(tx.remove(kTradeRequest, trk));
    TPCE_TRY(tx.remove(kTradeRequestBySector, index.keys[i]));
    TPCE_TRY(cancel(tr.tr_t_id, true));
  }
  if (index.keys.size() == 4 * in.max) {  // the rest of the unit's orders next time
    out->more = true;
    out->next = index.keys.back() + 1;
  }
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpce
