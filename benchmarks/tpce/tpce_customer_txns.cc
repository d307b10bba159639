// Customer-Position and Broker-Volume (clauses 3.3.2, 3.3.1; tpce_txns.h).
#include <algorithm>

#include "tpce/tpce_txn_util.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

using txn::Abort;

Abort customer_position(txn::Txn& tx, const CustomerPositionInput& in,
                        CustomerPositionOutput* out) {
  *out = CustomerPositionOutput{};
  // Frame 1: the customer, each account's balance and holdings at the last
  // trade prices.
  CustomerRow cu;
  TPCE_TRY(tx.get(kCustomer, customer_key(in.c), &cu));
  std::vector<txn::TableKey> keys;
  for (uint32_t j = 0; j < cu.c_accounts; ++j) {
    keys.push_back({kCustomerAccount, account_key(account_of(in.c, j))});
  }
  TPCE_TRY(tx.prefetch(keys, false));
  txn::Txn::Rows rows;
  std::vector<std::pair<uint32_t, int32_t>> held;  // (security, quantity)
  for (uint32_t j = 0; j < cu.c_accounts; ++j) {
    CustomerAccountRow ca;
    TPCE_TRY(tx.get(kCustomerAccount, account_key(account_of(in.c, j)), &ca));
    out->cash += ca.ca_bal;
    ++out->accounts;
  }
  // The holding summaries of all the customer's accounts are one key range
  // (account numbers customer * 16 + j are adjacent): one scan.
  if (cu.c_accounts > 0) {
    TPCE_TRY(tx.scan(kHoldingSummary, holding_summary_key(account_of(in.c, 0), 0),
                     holding_summary_key(account_of(in.c, cu.c_accounts - 1), (1u << 18) - 1),
                     100000, &rows));
    for (size_t i = 0; i < rows.keys.size(); ++i) {
      held.push_back({static_cast<uint32_t>(rows.keys[i] & ((1u << 18) - 1)),
                      row_at<HoldingSummaryRow>(rows, i).hs_qty});
    }
  }
  keys.clear();
  for (const auto& [s, q] : held) keys.push_back({kLastTrade, security_key(s)});
  std::sort(keys.begin(), keys.end(), [](auto& a, auto& b) { return a.key < b.key; });
  keys.erase(std::unique(keys.begin(), keys.end(), [](auto& a, auto& b) { return a.key == b.key; }),
             keys.end());
  TPCE_TRY(tx.prefetch(keys, false));
  for (const auto& [s, q] : held) {
    LastTradeRow lt;
    TPCE_TRY(tx.get(kLastTrade, security_key(s), &lt));
    out->assets += int64_t{q} * lt.lt_price;
  }
  if (!in.history || cu.c_accounts == 0) return Abort::kNone;
  // Frame 2: the last 10 trades of one account and their history.
  const uint64_t ca_id = account_of(in.c, in.account_draw % cu.c_accounts);
  TPCE_TRY(tx.scan(kTradeByAccount, trade_by_account_key(ca_id, kTNumMask),
                   trade_by_account_key(ca_id, 0), 10, &rows));
  std::vector<uint64_t> trades;
  for (size_t i = 0; i < rows.keys.size(); ++i) trades.push_back(row_at<IndexRow>(rows, i).key);
  keys.clear();
  for (uint64_t t : trades) keys.push_back({kTrade, t});
  for (uint8_t i = 0; i < kStatusTypes; ++i) keys.push_back({kStatusType, i});
  TPCE_TRY(tx.prefetch(keys, false));
  for (uint64_t trade : trades) {
    TradeRow t;
    TPCE_TRY(tx.get(kTrade, trade, &t));
    ++out->trades;
    TPCE_TRY(tx.scan(kTradeHistory, trade_history_key(trade, 0),
                     trade_history_key(trade, kStatusTypes - 1), kStatusTypes, &rows));
    for (uint64_t k : rows.keys) {
      StatusTypeRow st;
      TPCE_TRY(tx.get(kStatusType, k & 7, &st));
      ++out->history_rows;
    }
  }
  return Abort::kNone;
}

Abort broker_volume(txn::Txn& tx, const BrokerVolumeInput& in, BrokerVolumeOutput* out) {
  *out = BrokerVolumeOutput{};
  out->volume.assign(in.brokers.size(), 0);
  std::vector<txn::TableKey> keys;
  for (uint32_t b : in.brokers) keys.push_back({kBroker, broker_key(b)});
  TPCE_TRY(tx.prefetch(keys, false));
  for (uint32_t b : in.brokers) {
    BrokerRow row;
    TPCE_TRY(tx.get(kBroker, broker_key(b), &row));
  }
  SectorRow sc;
  TPCE_TRY(tx.get(kSector, in.sector, &sc));
  // Each unit's pending requests of the sector (its index partition), of
  // the listed brokers.
  txn::Txn::Rows rows;
  std::vector<std::pair<size_t, uint64_t>> hits;  // (broker position, TRADE_REQUEST key)
  for (uint32_t u = 0; u < in.units; ++u) {
    const uint64_t lo = tr_by_sector_key(u, in.sector, 0, 0);
    TPCE_TRY(tx.scan(kTradeRequestBySector, lo, lo | ((uint64_t{1} << 42) - 1), 100000, &rows));
    for (size_t i = 0; i < rows.keys.size(); ++i) {
      const uint32_t b = u * kBrokersPerUnit + static_cast<uint32_t>((rows.keys[i] >> 38) & 15);
      auto it = std::find(in.brokers.begin(), in.brokers.end(), b);
      if (it == in.brokers.end()) continue;
      hits.push_back({static_cast<size_t>(it - in.brokers.begin()), row_at<IndexRow>(rows, i).key});
    }
  }
  keys.clear();
  for (const auto& h : hits) keys.push_back({kTradeRequest, h.second});
  TPCE_TRY(tx.prefetch(keys, false));
  for (const auto& [pos, key] : hits) {
    TradeRequestRow tr;
    TPCE_TRY(tx.get(kTradeRequest, key, &tr));
    out->volume[pos] += int64_t{tr.tr_qty} * tr.tr_bid_price;
    ++out->requests;
  }
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpce
