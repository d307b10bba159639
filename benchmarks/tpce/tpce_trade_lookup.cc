// Trade-Lookup, Trade-Update and Trade-Status (clauses 3.3.6, 3.3.9,
// 3.3.10; tpce_txns.h).
#include <algorithm>

#include "tpce/tpce_txn_util.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

using txn::Abort;

namespace {

// The trades a frame names (frames 1 - 3) or the one of frame 4.
Abort find_trades(txn::Txn& tx, const TradeLookupInput& in, std::vector<uint64_t>* trades) {
  trades->clear();
  txn::Txn::Rows rows;
  switch (in.frame) {
    case 2:
    case 4:
      TPCE_TRY(tx.scan(kTradeByAccount, trade_by_account_key(in.ca, in.tn),
                       trade_by_account_key(in.ca, 0), in.frame == 4 ? 1 : in.max_trades, &rows));
      for (size_t i = 0; i < rows.keys.size(); ++i)
        trades->push_back(row_at<IndexRow>(rows, i).key);
      return Abort::kNone;
    case 3: {
      // Every unit's trades of the security from tn on; the first
      // max_trades by trade number (time) overall.
      std::vector<std::pair<uint64_t, uint64_t>> found;  // (tn, trade)
      for (uint32_t u = 0; u < in.units; ++u) {
        TPCE_TRY(tx.scan(kTradeBySecurity, trade_by_security_key(u, in.s, in.tn),
                         trade_by_security_key(u, in.s, kTNumMask), in.max_trades, &rows));
        for (size_t i = 0; i < rows.keys.size(); ++i) {
          found.push_back({rows.keys[i] & kTNumMask, row_at<IndexRow>(rows, i).key});
        }
      }
      std::sort(found.begin(), found.end());
      for (size_t i = 0; i < found.size() && i < in.max_trades; ++i)
        trades->push_back(found[i].second);
      return Abort::kNone;
    }
    default:
      *trades = in.trades;
      if (trades->size() > in.max_trades) trades->resize(in.max_trades);
      return Abort::kNone;
  }
}

}  // namespace

Abort trade_lookup(txn::Txn& tx, const TradeLookupInput& in, TradeLookupOutput* out) {
  *out = TradeLookupOutput{};
  TPCE_TRY(find_trades(tx, in, &out->trades));
  txn::Txn::Rows rows;
  if (in.frame == 4) {
    for (uint64_t trade : out->trades) {
      TPCE_TRY(tx.scan(kHoldingHistory, holding_history_key(trade, 0),
                       holding_history_key(trade, 255), 256, &rows));
      out->holding_history += static_cast<uint32_t>(rows.keys.size());
    }
    return Abort::kNone;
  }
  std::vector<txn::TableKey> keys;
  for (uint64_t trade : out->trades) keys.push_back({kTrade, trade});
  TPCE_TRY(tx.prefetch(keys, false));
  // The settlements and cash transactions of the completed ones in one round.
  std::vector<TradeRow> ts(out->trades.size());
  keys.clear();
  for (size_t i = 0; i < out->trades.size(); ++i) {
    TPCE_TRY(tx.get(kTrade, out->trades[i], &ts[i]));
    if (ts[i].t_st_id != kCmpt) continue;
    keys.push_back({kSettlement, out->trades[i]});
    if (ts[i].t_is_cash) keys.push_back({kCashTransaction, out->trades[i]});
  }
  TPCE_TRY(tx.prefetch(keys, false));
  for (size_t i = 0; i < out->trades.size(); ++i) {
    const uint64_t trade = out->trades[i];
    const TradeRow& t = ts[i];
    if (t.t_st_id == kCmpt) {
      SettlementRow se;
      TPCE_TRY(tx.get(kSettlement, trade, &se));
      ++out->settlements;
      if (t.t_is_cash) {
        CashTransactionRow ct;
        TPCE_TRY(tx.get(kCashTransaction, trade, &ct));
        ++out->cash_rows;
      }
    }
    TPCE_TRY(tx.scan(kTradeHistory, trade_history_key(trade, 0),
                     trade_history_key(trade, kStatusTypes - 1), kStatusTypes, &rows));
    out->history_rows += static_cast<uint32_t>(rows.keys.size());
  }
  return Abort::kNone;
}

// Frame 1 renames the executor of each trade; frame 2 changes the
// settlement's cash type of each completed trade; frame 3 the cash
// transaction's name of each completed cash trade (all toggled, so the
// data stays the same size run after run).
Abort trade_update(txn::Txn& tx, const TradeLookupInput& in, TradeLookupOutput* out) {
  *out = TradeLookupOutput{};
  TradeLookupInput look = in;
  if (look.frame == 4) look.frame = 1;
  TPCE_TRY(find_trades(tx, look, &out->trades));
  for (uint64_t trade : out->trades) {
    if (look.frame == 1) {
      TradeRow t;
      TPCE_TRY(tx.get_for_update(kTrade, trade, &t));
      toggle_text(t.t_exec_name, sizeof t.t_exec_name);
      TPCE_TRY(tx.put(kTrade, trade, &t));
      ++out->updated;
      continue;
    }
    TradeRow t;
    TPCE_TRY(tx.get(kTrade, trade, &t));
    if (t.t_st_id != kCmpt) continue;
    if (look.frame == 2) {
      SettlementRow se;
      TPCE_TRY(tx.get_for_update(kSettlement, trade, &se));
      toggle_text(se.se_cash_type, sizeof se.se_cash_type);
      TPCE_TRY(tx.put(kSettlement, trade, &se));
      ++out->updated;
    } else if (t.t_is_cash) {
      CashTransactionRow ct;
      TPCE_TRY(tx.get_for_update(kCashTransaction, trade, &ct));
      toggle_text(ct.ct_name, sizeof ct.ct_name);
      TPCE_TRY(tx.put(kCashTransaction, trade, &ct));
      ++out->updated;
    }
  }
  return Abort::kNone;
}

Abort trade_status(txn::Txn& tx, const TradeStatusInput& in, TradeStatusOutput* out) {
  *out = TradeStatusOutput{};
  txn::Txn::Rows rows;
  TPCE_TRY(tx.scan(kTradeByAccount, trade_by_account_key(in.ca, kTNumMask),
                   trade_by_account_key(in.ca, 0), 50, &rows));
  std::vector<txn::TableKey> keys;
  for (size_t i = 0; i < rows.keys.size(); ++i)
    keys.push_back({kTrade, row_at<IndexRow>(rows, i).key});
  // The status and trade type names (replicated) in the same round.
  const size_t trades = keys.size();
  for (uint8_t i = 0; i < kStatusTypes; ++i) keys.push_back({kStatusType, i});
  for (uint8_t i = 0; i < kTradeTypes; ++i) keys.push_back({kTradeType, i});
  TPCE_TRY(tx.prefetch(keys, false));
  keys.resize(trades);
  std::vector<uint32_t> secs;
  for (const txn::TableKey& k : keys) {
    TradeRow t;
    TPCE_TRY(tx.get(kTrade, k.key, &t));
    StatusTypeRow st;
    TPCE_TRY(tx.get(kStatusType, t.t_st_id, &st));
    TradeTypeRow tt;
    TPCE_TRY(tx.get(kTradeType, t.t_tt_id, &tt));
    ++out->trades;
    ++out->by_status[t.t_st_id % kStatusTypes];
    secs.push_back(t.t_s);
  }
  std::sort(secs.begin(), secs.end());
  secs.erase(std::unique(secs.begin(), secs.end()), secs.end());
  keys.clear();
  for (uint32_t s : secs) keys.push_back({kSecurity, security_key(s)});
  keys.push_back({kCustomerAccount, account_key(in.ca)});
  for (uint32_t ex = 0; ex < kExchanges; ++ex) keys.push_back({kExchange, exchange_key(ex)});
  TPCE_TRY(tx.prefetch(keys, false));
  for (uint32_t s : secs) {
    SecurityRow sec;
    TPCE_TRY(tx.get(kSecurity, security_key(s), &sec));
    ExchangeRow ex;
    TPCE_TRY(tx.get(kExchange, exchange_key(sec.s_ex_id), &ex));
  }
  // Frame 2: the customer and the broker.
  CustomerAccountRow ca;
  TPCE_TRY(tx.get(kCustomerAccount, account_key(in.ca), &ca));
  const txn::TableKey people[] = {{kCustomer, customer_key(ca.ca_c_id)},
                                  {kBroker, broker_key(ca.ca_b_id)}};
  TPCE_TRY(tx.prefetch(people, false));
  CustomerRow cu;
  TPCE_TRY(tx.get(kCustomer, customer_key(ca.ca_c_id), &cu));
  BrokerRow b;
  TPCE_TRY(tx.get(kBroker, broker_key(ca.ca_b_id), &b));
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpce
