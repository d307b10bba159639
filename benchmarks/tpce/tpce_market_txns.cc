// Market-Feed, Market-Watch and Security-Detail (clauses 3.3.3 - 3.3.5,
// tpce_txns.h).
#include <algorithm>

#include "tpce/tpce_txn_util.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

using txn::Abort;

Abort market_feed(txn::Txn& tx, const MarketFeedInput& in, MarketFeedOutput* out) {
  out->submitted.clear();
  txn::Txn::Rows rows;
  for (const Tick& tk : in.ticks) {
    // Frame 1: the last trade of the security.
    LastTradeRow lt;
    TPCE_TRY(tx.get_for_update(kLastTrade, security_key(tk.s), &lt));
    lt.lt_price = tk.price;
    lt.lt_vol += tk.qty;
    lt.lt_dts = in.now;
    TPCE_TRY(tx.put(kLastTrade, security_key(tk.s), &lt));
    // The pending limit orders this price triggers are submitted.
    const uint64_t lo = uint64_t{tk.s} << 46, hi = lo | ((uint64_t{1} << 46) - 1);
    TPCE_TRY(tx.scan(kTradeRequest, lo, hi, 1000, &rows));
    uint32_t sector = ~0u;
    for (size_t i = 0; i < rows.keys.size(); ++i) {
      const auto tr = row_at<TradeRequestRow>(rows, i);
      if (!triggered(tr.tr_tt_id, tr.tr_bid_price, tk.price)) continue;
      if (sector == ~0u) {
        SecurityRow sec;
        TPCE_TRY(tx.get(kSecurity, security_key(tk.s), &sec));
        CompanyRow co;
        TPCE_TRY(tx.get(kCompany, company_key(sec.s_co_id), &co));
        IndustryRow ind;
        TPCE_TRY(tx.get(kIndustry, co.co_in_id, &ind));
        sector = ind.in_sc_id;
      }
      const uint64_t trade = tr.tr_t_id;
      TPCE_TRY(tx.remove(kTradeRequest, rows.keys[i]));
      TPCE_TRY(tx.remove(kTradeRequestBySector,
                         tr_by_sector_key(unit_of(trade), sector, tr.tr_b_id, trade_num(trade))));
      TradeRow t;
      TPCE_TRY(tx.get_for_update(kTrade, trade, &t));
      t.t_st_id = kSbmt;
      TPCE_TRY(tx.put(kTrade, trade, &t));
      const TradeHistoryRow th{in.now};
      TPCE_TRY(tx.insert(kTradeHistory, trade_history_key(trade, kSbmt), &th));
      out->submitted.push_back(Submitted{trade, tk.s, tr.tr_qty, tk.price});
    }
  }
  return Abort::kNone;
}

Abort market_watch(txn::Txn& tx, const MarketWatchInput& in, MarketWatchOutput* out) {
  *out = MarketWatchOutput{};
  txn::Txn::Rows rows;
  std::vector<uint32_t> secs;
  switch (in.by) {
    case MarketWatchInput::kWatchList:
      TPCE_TRY(tx.scan(kWatchItem, watch_item_key(in.c, 0), watch_item_key(in.c, (1u << 18) - 1),
                       1000, &rows));
      for (size_t i = 0; i < rows.keys.size(); ++i)
        secs.push_back(row_at<WatchItemRow>(rows, i).wi_s);
      break;
    case MarketWatchInput::kAccount:
      TPCE_TRY(tx.scan(kHoldingSummary, holding_summary_key(in.ca, 0),
                       holding_summary_key(in.ca, (1u << 18) - 1), 1000, &rows));
      for (uint64_t k : rows.keys) secs.push_back(static_cast<uint32_t>(k & ((1u << 18) - 1)));
      break;
    case MarketWatchInput::kIndustry:
      TPCE_TRY(tx.scan(kCompanyByIndustry, company_by_industry_key(in.industry, in.co_from),
                       company_by_industry_key(in.industry, in.co_to), 1000, &rows));
      for (uint64_t k : rows.keys) {
        const auto co = static_cast<uint32_t>(k & 0xffffffffu);
        for (uint32_t i = 0; i < company_securities(co); ++i)
          secs.push_back(company_security(co, i));
      }
      break;
  }
  std::vector<txn::TableKey> keys;
  for (uint32_t s : secs) {
    keys.push_back({kLastTrade, security_key(s)});
    keys.push_back({kSecurity, security_key(s)});
    keys.push_back({kDailyMarket, daily_market_key(s, in.day)});
  }
  TPCE_TRY(tx.prefetch(keys, false));
  for (uint32_t s : secs) {
    LastTradeRow lt;
    TPCE_TRY(tx.get(kLastTrade, security_key(s), &lt));
    SecurityRow sec;
    TPCE_TRY(tx.get(kSecurity, security_key(s), &sec));
    DailyMarketRow dm;
    TPCE_TRY(tx.get(kDailyMarket, daily_market_key(s, in.day), &dm));
    const int64_t shares = sec.s_num_out / 1000;  // thousands: sums stay in range
    out->new_value += lt.lt_price * shares;
    out->old_value += dm.dm_close * shares;
    ++out->securities;
  }
  return Abort::kNone;
}

Abort security_detail(txn::Txn& tx, const SecurityDetailInput& in, SecurityDetailOutput* out) {
  *out = SecurityDetailOutput{};
  // Independent reads go in one round each (prefetch): the security; its
  // company, exchange and last trade; the competitors; the addresses and
  // the competitors' companies and industries; then the scans.
  SecurityRow sec;
  TPCE_TRY(tx.get(kSecurity, security_key(in.s), &sec));
  const uint32_t co_id = sec.s_co_id;
  const txn::TableKey second[] = {{kCompany, company_key(co_id)},
                                  {kExchange, exchange_key(sec.s_ex_id)},
                                  {kLastTrade, security_key(in.s)}};
  TPCE_TRY(tx.prefetch(second, false));
  CompanyRow co;
  TPCE_TRY(tx.get(kCompany, company_key(co_id), &co));
  ExchangeRow ex;
  TPCE_TRY(tx.get(kExchange, exchange_key(sec.s_ex_id), &ex));
  LastTradeRow lt;
  TPCE_TRY(tx.get(kLastTrade, security_key(in.s), &lt));
  out->last_price = lt.lt_price;
  txn::Txn::Rows rows;
  TPCE_TRY(tx.scan(kCompanyCompetitor, company_competitor_key(co_id, 0),
                   company_competitor_key(co_id, 3), 3, &rows));
  std::vector<txn::TableKey> keys = {{kAddress, co.co_ad_id}, {kAddress, ex.ex_ad_id}};
  std::vector<CompanyCompetitorRow> comps;
  for (size_t i = 0; i < rows.keys.size(); ++i) {
    comps.push_back(row_at<CompanyCompetitorRow>(rows, i));
    keys.push_back({kCompany, company_key(comps.back().cp_comp_co_id)});
    keys.push_back({kIndustry, comps.back().cp_in_id});
  }
  std::sort(keys.begin(), keys.end(), [](auto& a, auto& b) {
    return a.table != b.table ? a.table < b.table : a.key < b.key;
  });
  keys.erase(std::unique(keys.begin(), keys.end(),
                         [](auto& a, auto& b) { return a.table == b.table && a.key == b.key; }),
             keys.end());
  TPCE_TRY(tx.prefetch(keys, false));
  AddressRow ad;
  TPCE_TRY(tx.get(kAddress, co.co_ad_id, &ad));
  AddressRow ex_ad;
  TPCE_TRY(tx.get(kAddress, ex.ex_ad_id, &ex_ad));
  ZipCodeRow zc;
  TPCE_TRY(tx.get(kZipCode, ad.ad_zc, &zc));
  for (const CompanyCompetitorRow& cp : comps) {
    CompanyRow comp;
    TPCE_TRY(tx.get(kCompany, company_key(cp.cp_comp_co_id), &comp));
    IndustryRow ind;
    TPCE_TRY(tx.get(kIndustry, cp.cp_in_id, &ind));
    ++out->competitors;
  }
  TPCE_TRY(tx.scan(kFinancial, financial_key(co_id, 0), financial_key(co_id, 255), 20, &rows));
  out->financials = static_cast<uint32_t>(rows.keys.size());
  TPCE_TRY(tx.scan(kDailyMarket, daily_market_key(in.s, in.day), daily_market_key(in.s, 0xffff),
                   in.max_rows, &rows));
  out->days = static_cast<uint32_t>(rows.keys.size());
  TPCE_TRY(tx.scan(kNewsItem, news_key(co_id, 0), news_key(co_id, 15), 2, &rows));
  out->news = static_cast<uint32_t>(rows.keys.size());
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpce
