// The twelve TPC-E transactions (clause 3.3) as stored procedures over the
// public Txn API. Each takes its input (drawn by the client, tpce_client.cc)
// and fills an output; a procedure may run several times (aborts are
// retried), so it resets its output on every attempt. Read-only ones
// (Broker-Volume, Customer-Position, Market-Watch, Security-Detail,
// Trade-Lookup, Trade-Status) only get, prefetch and scan.
//
// Frames follow the specification's; where SQL would join, the procedure
// reads the rows by key (tpce_schema.h says which index serves what).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tpce/tpce_config.h"
#include "tpce/tpce_schema.h"
#include "txn/txn.h"

namespace drtmx::bench::tpce {

// A trade the market emulator completes later with Trade-Result.
struct Submitted {
  uint64_t trade = 0;  // TRADE key
  uint32_t s = 0;
  int32_t qty = 0;
  int64_t price = 0;  // the price it executes at
};

// Broker-Volume (clause 3.3.1): for brokers and a sector, the volume of
// their pending limit orders on the sector's securities.
struct BrokerVolumeInput {
  std::vector<uint32_t> brokers;  // broker numbers (20..40)
  uint32_t sector = 0;
  uint32_t units = 1;  // load units to look in
};
struct BrokerVolumeOutput {
  std::vector<int64_t> volume;  // per broker of the input, cents
  uint32_t requests = 0;        // TRADE_REQUEST rows counted
};
txn::Abort broker_volume(txn::Txn& tx, const BrokerVolumeInput& in, BrokerVolumeOutput* out);

// Customer-Position (clause 3.3.2): a customer's accounts with their cash
// and holdings at the last trade price; with history, the last 10 trades
// of one account and their TRADE_HISTORY.
struct CustomerPositionInput {
  uint64_t c = 0;
  bool history = false;
  uint32_t account_draw = 0;  // the account is account_draw % accounts
};
struct CustomerPositionOutput {
  uint32_t accounts = 0;
  int64_t cash = 0;    // sum of CA_BAL
  int64_t assets = 0;  // sum of HS_QTY x LT_PRICE
  uint32_t trades = 0, history_rows = 0;
};
txn::Abort customer_position(txn::Txn& tx, const CustomerPositionInput& in,
                             CustomerPositionOutput* out);

// Market-Feed (clause 3.3.3): new prices for up to 20 securities; pending
// limit orders they trigger are submitted (`out->submitted`, for the
// market emulator).
struct Tick {
  uint32_t s = 0;
  int64_t price = 0;
  int32_t qty = 0;
};
struct MarketFeedInput {
  std::vector<Tick> ticks;
  int64_t now = 0;
};
struct MarketFeedOutput {
  std::vector<Submitted> submitted;
};
txn::Abort market_feed(txn::Txn& tx, const MarketFeedInput& in, MarketFeedOutput* out);
// Whether a pending limit order of type tt at `bid` executes at `price`.
constexpr bool triggered(uint8_t tt, int64_t bid, int64_t price) {
  return tt == kTLB ? price <= bid : tt == kTLS ? price >= bid : tt == kTSL ? price <= bid : true;
}

// Market-Watch (clause 3.3.4): the percentage change, since a past day, of
// the market value of a watch list, an account's holdings or an industry's
// securities (of companies in a range).
struct MarketWatchInput {
  enum By : uint8_t { kWatchList, kAccount, kIndustry } by = kWatchList;
  uint64_t c = 0;                                 // kWatchList
  uint64_t ca = 0;                                // kAccount
  uint32_t industry = 0, co_from = 0, co_to = 0;  // kIndustry
  uint32_t day = 0;                               // DAILY_MARKET day index
};
struct MarketWatchOutput {
  uint32_t securities = 0;
  int64_t old_value = 0, new_value = 0;  // cents
};
txn::Abort market_watch(txn::Txn& tx, const MarketWatchInput& in, MarketWatchOutput* out);

// Security-Detail (clause 3.3.5): a security, its company, address,
// exchange, competitors, financials, market history and news.
struct SecurityDetailInput {
  uint32_t s = 0;
  uint32_t day = 0, max_rows = 5;  // DAILY_MARKET from `day`, at most max_rows (5..20)
};
struct SecurityDetailOutput {
  uint32_t competitors = 0, financials = 0, days = 0, news = 0;
  int64_t last_price = 0;
};
txn::Abort security_detail(txn::Txn& tx, const SecurityDetailInput& in, SecurityDetailOutput* out);

// Trade-Lookup (clause 3.3.6) and Trade-Update (3.3.9): frame 1 given
// trades; 2 an account's trades at or before a trade number (newest
// first); 3 a security's trades from a trade number on, in every unit; 4
// an account's trade and the holding history it made.
struct TradeLookupInput {
  uint8_t frame = 1;
  std::vector<uint64_t> trades;  // frame 1
  uint64_t ca = 0;               // frames 2, 4
  uint32_t s = 0;                // frame 3
  uint64_t tn = 0;               // frames 2, 3, 4: the trade-number bound
  uint32_t units = 1;            // frame 3
  uint32_t max_trades = 20;
};
struct TradeLookupOutput {
  std::vector<uint64_t> trades;  // the trades found
  uint32_t history_rows = 0, settlements = 0, cash_rows = 0, holding_history = 0;
  uint32_t updated = 0;  // Trade-Update
};
txn::Abort trade_lookup(txn::Txn& tx, const TradeLookupInput& in, TradeLookupOutput* out);
txn::Abort trade_update(txn::Txn& tx, const TradeLookupInput& in, TradeLookupOutput* out);

// Trade-Order (clause 3.3.7): a new trade of an account; a market order is
// submitted at once (out->submitted, for the market emulator), a limit
// order waits in TRADE_REQUEST for Market-Feed. 1 % roll back (kUserAbort).
struct TradeOrderInput {
  uint64_t ca = 0;
  uint32_t permission = 0;  // 0: the owner; k: ACCOUNT_PERMISSION row k
  uint32_t s = 0;
  uint8_t tt = kTMB;
  int32_t qty = 100;
  int64_t limit_price = 0;  // limit orders
  bool margin = false, lifo = false, roll_back = false;
  uint64_t trade = 0;  // the new TRADE key
  int64_t now = 0;
};
struct TradeOrderOutput {
  bool rolled_back = false;
  bool submitted = false;  // a market order: out->order goes to the emulator
  Submitted order;
  int64_t buy_value = 0, sell_value = 0;  // frame 3's estimates
};
txn::Abort trade_order(txn::Txn& tx, const TradeOrderInput& in, TradeOrderOutput* out);

// Trade-Result (clause 3.3.8): completes a submitted trade at its price:
// holdings, settlement, cash, balance, broker.
struct TradeResultInput {
  Submitted trade;
  int64_t now = 0;
};
struct TradeResultOutput {
  int64_t settlement = 0, tax = 0, comm = 0;
  bool not_submitted = false;  // the trade was no longer submitted (kUserAbort)
};
txn::Abort trade_result(txn::Txn& tx, const TradeResultInput& in, TradeResultOutput* out);

// Trade-Status (clause 3.3.10): an account's last 50 trades with their
// status, type, security and exchange names, the customer and broker.
struct TradeStatusInput {
  uint64_t ca = 0;
};
struct TradeStatusOutput {
  uint32_t trades = 0;
  std::array<uint32_t, kStatusTypes> by_status{};
};
txn::Abort trade_status(txn::Txn& tx, const TradeStatusInput& in, TradeStatusOutput* out);

// Data-Maintenance (clause 3.3.11): one of its twelve tables' updates.
struct DataMaintenanceInput {
  uint32_t table = 0;  // 0..11: ACCOUNT_PERMISSION, ADDRESS, COMPANY, CUSTOMER,
                       // CUSTOMER_TAXRATE, DAILY_MARKET, EXCHANGE, FINANCIAL,
                       // NEWS_ITEM, SECURITY, TAXRATE, WATCH_ITEM
  uint64_t c = 0;      // a customer
  uint32_t co = 0, s = 0, day = 0, ex = 0, tx_id = 0, new_s = 0;
};
struct DataMaintenanceOutput {
  uint32_t updated = 0;
};
txn::Abort data_maintenance(txn::Txn& tx, const DataMaintenanceInput& in,
                            DataMaintenanceOutput* out);

// Trade-Cleanup (clause 3.3.12): cancels a unit's pending limit orders
// placed before `cutoff` (and its loaded submitted trades, the tail of the
// initial trades), at most `max` per transaction.
struct TradeCleanupInput {
  uint32_t unit = 0;
  int64_t cutoff = 0, now = 0;
  uint64_t tail_from = 0, tail_to = 0;  // loader sequence numbers of its incomplete tail
  uint64_t from = 0;                    // TRADE_REQUEST_BY_SECTOR key to resume at
  uint32_t max = 20;
};
struct TradeCleanupOutput {
  uint32_t canceled = 0;
  bool more = false;  // stopped at `max` or at the scan's end: resume at `next`
  uint64_t next = 0;
};
txn::Abort trade_cleanup(txn::Txn& tx, const TradeCleanupInput& in, TradeCleanupOutput* out);

}  // namespace drtmx::bench::tpce
