// TPC-E without a cluster run: options refused with messages naming them;
// the generator's cardinalities and distributions against the
// specification's at a small scale, and the same seed giving the same data;
// each transaction against a brute-force model over a map-backed database
// (the generated rows in a std::map, the procedures run on a Txn over it);
// the loader and the consistency checks on an in-process store, and each
// corruption failing with the condition it breaks.
#include "tpce/tpce.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "r2/support/inproc_cluster.h"
#include "store/tables/plan.h"
#include "support/local_node.h"
#include "tpce/tpce_check.h"
#include "tpce/tpce_client.h"
#include "tpce/tpce_gen.h"
#include "tpce/tpce_loader.h"
#include "tpce/tpce_market.h"
#include "tpce/tpce_schema.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {
namespace {

using store::tables::StoreNode;
using txn::Abort;

WorkloadEnv env(uint16_t nodes) {
  WorkloadEnv e;
  e.nodes = nodes;
  e.threads = 1;
  e.coroutines = 4;
  e.replicas = 1;
  return e;
}

// One node, one load unit, a small number of initial trades.
Config small(const std::string& days = "0.02") {
  auto c = parse({{"initial-trade-days", days}, {"market-days", "10"}}, env(1));
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

TEST(TpceOptions, DefaultsFollowTheSpecification) {
  auto c = parse({}, env(3));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->customers(), 3000u);
  EXPECT_EQ(c->units(), 3u);
  EXPECT_EQ(c->securities(), 3u * 685);
  EXPECT_EQ(c->companies(), 1500u);
  EXPECT_EQ(c->brokers(), 30u);
  EXPECT_EQ(c->mix, (std::array<uint32_t, 10>{49, 130, 10, 180, 140, 80, 101, 100, 190, 20}));
  EXPECT_DOUBLE_EQ(c->read_only_pct(), 76.9);
  EXPECT_EQ(c->initial_trades(), 14400u);  // 0.25 day x 57 600
  EXPECT_NE(make(*c)->describe().find("SCALED-DOWN"), std::string::npos);
  auto m = parse({{"mix", "0,0,0,0,0,0,50,50,0,0"}, {"initial-trade-days", "1"}}, env(1));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->mix[kTradeOrder], 500u);
  EXPECT_EQ(m->initial_trades(), 57600u);
}

TEST(TpceOptions, BadValuesNameTheOption) {
  const std::pair<WorkloadOptions, const char*> bad[] = {
      {{{"customers", "1500"}}, "--customers=1500"},
      {{{"customers", "0"}}, "--customers=0"},
      {{{"mix", "4.9,13,1,18,14,8,10.1,10,19"}}, "--mix="},
      {{{"mix", "5,13,1,18,14,8,10.1,10,19,2"}}, "adding up to 100"},
      {{{"mix", "4.95,13,1,18,14,8,10.05,10,19,2"}}, "one decimal"},
      {{{"initial-trade-days", "0"}}, "--initial-trade-days=0"},
      {{{"initial-trade-days", "x"}}, "--initial-trade-days=x"},
      {{{"market-days", "2000"}}, "--market-days=2000"},
      {{{"customers", "100000"}}, "load units"},
  };
  for (const auto& [opts, msg] : bad) {
    auto c = parse(opts, env(3));
    ASSERT_FALSE(c.is_ok()) << msg;
    EXPECT_NE(c.status().message().find(msg), std::string::npos) << c.status().message();
  }
}

// --trade-room sized the trade tables for the trades a run could add; the
// tables grow now, and the option is refused with a message saying so (not
// as an unknown option: drtmx-bench still lists it, so the run reaches
// parse()).
TEST(TpceOptions, TradeRoomIsRefusedAsNoLongerNeeded) {
  for (const char* v : {"60000", "5", "x"}) {
    auto c = parse({{"trade-room", v}}, env(1));
    ASSERT_FALSE(c.is_ok()) << v;
    EXPECT_EQ(c.status().message(),
              "--trade-room is no longer needed: TPC-E's tables grow as the run inserts rows; "
              "drop the option");
  }
  bool listed = false;
  for (const auto& [k, help] : info().options) listed |= k == "trade-room";
  EXPECT_TRUE(listed);
  auto c = parse({}, env(1));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(make(*c)->describe().find("trade_room"), std::string::npos);
}

// The trade ids' key bits are the only limit: each client its own slot's
// sequence numbers above the initial trades', in every unit; the highest
// trade number keeps every key that holds one apart from its neighbours.
TEST(TpceSchema, TradeLimitsAreTheKeyEncodings) {
  auto c = parse({}, env(3));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(kTradeSeqs, 67108864u);               // 26 bits
  EXPECT_EQ(trade_quota(*c), 67108864u - 14400);  // 0.25 initial trade days
  auto full = parse({{"initial-trade-days", "300"}}, env(3));
  ASSERT_TRUE(full.is_ok());
  EXPECT_EQ(trade_quota(*full), 67108864u - 17280000);  // the specification's 300 days
  const uint32_t u = kMaxUnits - 1, slot = 4094;
  const uint64_t last = t_num(kTradeSeqs - 1, slot);
  EXPECT_EQ(last, kTNumMask - 1);
  const uint64_t trade = trade_key(u, last);
  EXPECT_EQ(unit_of(trade), u);
  EXPECT_EQ(trade_num(trade), last);
  EXPECT_LT(trade, trade_key(u + 1, 0));
  EXPECT_EQ(unit_of(trade_history_key(trade, 7)), u);
  EXPECT_EQ(unit_of(holding_history_key(trade, 255)), u);
  const uint64_t ca = account_of(uint64_t{u} * kCustomersPerUnit + 999, 15);
  EXPECT_EQ(unit_of(trade_by_account_key(ca, 0)), u);
  EXPECT_LT(trade_by_account_key(ca, 0), trade_key(u + 1, 0));
  const uint32_t s = kMaxUnits * kSecuritiesPerUnit - 1;
  EXPECT_EQ(unit_of(trade_by_security_key(u, s, last)), u);
  EXPECT_EQ(trade_of_request_key(trade_request_key(s, trade)), trade);
  EXPECT_EQ(unit_of(tr_by_sector_key(u, kSectors - 1, 9, last)), u);
  // Capacities: the loaded rows per unit (the tables grow).
  std::map<txn::TableId, uint64_t> cap;
  for (const store::TableSpec& t : table_specs(*c)) cap[t.id] = t.capacity;
  EXPECT_EQ(cap[kTrade], 14400u);
  EXPECT_EQ(cap[kTradeByAccount], 14400u);
  EXPECT_EQ(cap[kTradeRequest], c->incomplete_tail());
}

// A client that used up its slot's sequence numbers runs a Trade-Status
// instead of a Trade-Order and counts it for the check, which names the
// key-space limit.
TEST(TpceClient, TradeOrdersStopAtTheLastSequenceNumber) {
  auto c = parse({{"mix", "0,0,0,0,0,0,100,0,0,0"}}, env(1));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Market market(c->seed, c->securities());
  auto client = make_client(*c, 1, 7, &market, kTradeSeqs - 1);  // neither DM nor TC owner
  EXPECT_EQ(client->next().type, kTradeOrder);
  client->committed();
  EXPECT_EQ(client->next().type, kTradeStatus);
  std::vector<int64_t> sums;
  client->sums(sums);
  ASSERT_EQ(sums.size(), size_t{kClientSums});
  EXPECT_EQ(sums[kOrdersCommitted], 1);
  EXPECT_EQ(sums[kTradeIdsFull], 1);
}

// The generated rows of a database, by (table, key).
using RowMap = std::map<std::pair<txn::TableId, uint64_t>, std::vector<uint8_t>>;

RowMap generate(const Config& c, uint32_t units) {
  RowMap rows;
  const Sink sink = [&](txn::TableId t, uint64_t k, const void* row, size_t n) -> Status {
    auto [it, fresh] = rows.try_emplace({t, k});
    if (!fresh)
      return internal_error("duplicate key " + std::to_string(k) + " in table " +
                            std::to_string(t));
    it->second.assign(static_cast<const uint8_t*>(row), static_cast<const uint8_t*>(row) + n);
    return Status();
  };
  EXPECT_TRUE(generate_fixed(c, sink).is_ok());
  for (uint32_t u = 0; u < units; ++u) {
    Status s = generate_unit(c, u, sink);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return rows;
}

template <typename Row>
Row as(const std::vector<uint8_t>& v) {
  Row r;
  EXPECT_EQ(v.size(), sizeof r);
  std::memcpy(&r, v.data(), sizeof r);
  return r;
}

size_t count(const RowMap& rows, txn::TableId t) {
  size_t n = 0;
  for (auto it = rows.lower_bound({t, 0}); it != rows.end() && it->first.first == t; ++it) ++n;
  return n;
}

template <typename Row, typename Fn>
void each(const RowMap& rows, txn::TableId t, Fn fn) {
  for (auto it = rows.lower_bound({t, 0}); it != rows.end() && it->first.first == t; ++it) {
    fn(it->first.second, as<Row>(it->second));
  }
}

TEST(TpceGenerator, CardinalitiesOfTheSpecification) {
  const Config c = small("0.05");  // 2 880 trades
  const RowMap rows = generate(c, 1);
  // Fixed tables (clause 2.6.1).
  EXPECT_EQ(count(rows, kStatusType), 5u);
  EXPECT_EQ(count(rows, kTradeType), 5u);
  EXPECT_EQ(count(rows, kSector), 12u);
  EXPECT_EQ(count(rows, kIndustry), 102u);
  EXPECT_EQ(count(rows, kCharge), 15u);
  EXPECT_EQ(count(rows, kCommissionRate), 240u);
  EXPECT_EQ(count(rows, kTaxrate), 320u);
  EXPECT_EQ(count(rows, kZipCode), 14741u);
  EXPECT_EQ(count(rows, kExchange), 4u);
  // Per load unit.
  EXPECT_EQ(count(rows, kCustomer), 1000u);
  EXPECT_EQ(count(rows, kBroker), 10u);
  EXPECT_EQ(count(rows, kSecurity), 685u);
  EXPECT_EQ(count(rows, kLastTrade), 685u);
  EXPECT_EQ(count(rows, kCompany), 500u);
  EXPECT_EQ(count(rows, kCompanyCompetitor), 1500u);
  EXPECT_EQ(count(rows, kFinancial), 10000u);
  EXPECT_EQ(count(rows, kNewsItem), 1000u);
  EXPECT_EQ(count(rows, kDailyMarket), 685u * c.market_days);
  EXPECT_EQ(count(rows, kCustomerTaxrate), 2000u);
  EXPECT_EQ(count(rows, kWatchList), 1000u);
  EXPECT_EQ(count(rows, kAddress), 1000u + 500 + 4);
  EXPECT_EQ(count(rows, kTrade), c.initial_trades());
  EXPECT_EQ(count(rows, kTradeByAccount), c.initial_trades());
  EXPECT_EQ(count(rows, kTradeBySecurity), c.initial_trades());
  // Tiers 20 / 60 / 20 %, accounts by tier, 5 per customer on average.
  std::map<int, int> tiers;
  uint64_t accounts = 0;
  each<CustomerRow>(rows, kCustomer, [&](uint64_t, const CustomerRow& r) {
    ++tiers[r.c_tier];
    static const uint32_t kMin[] = {0, 1, 2, 5}, kMax[] = {0, 4, 8, 10};
    EXPECT_GE(r.c_accounts, kMin[r.c_tier]);
    EXPECT_LE(r.c_accounts, kMax[r.c_tier]);
    accounts += r.c_accounts;
  });
  EXPECT_NEAR(tiers[1], 200, 45);
  EXPECT_NEAR(tiers[2], 600, 50);
  EXPECT_NEAR(tiers[3], 200, 45);
  EXPECT_EQ(count(rows, kCustomerAccount), accounts);
  EXPECT_NEAR(double(accounts) / 1000, 5.0, 0.3);
  const double per_list = double(count(rows, kWatchItem)) / 1000;
  EXPECT_NEAR(per_list, 100, 5);  // 50 .. 150
  // Trade types 30 / 30 / 20 / 10 / 10 %, quantities, statuses.
  std::map<int, int> types, status;
  uint64_t completed = 0, cash = 0;
  each<TradeRow>(rows, kTrade, [&](uint64_t, const TradeRow& t) {
    ++types[t.t_tt_id];
    ++status[t.t_st_id];
    EXPECT_TRUE(t.t_qty == 100 || t.t_qty == 200 || t.t_qty == 400 || t.t_qty == 800);
    completed += t.t_st_id == kCmpt;
    cash += t.t_st_id == kCmpt && t.t_is_cash;
  });
  const double n = c.initial_trades();
  EXPECT_NEAR(types[kTMB] / n, 0.30, 0.03);
  EXPECT_NEAR(types[kTMS] / n, 0.30, 0.03);
  EXPECT_NEAR(types[kTLB] / n, 0.20, 0.03);
  EXPECT_NEAR(types[kTLS] / n, 0.10, 0.03);
  EXPECT_NEAR(types[kTSL] / n, 0.10, 0.03);
  EXPECT_EQ(status[kPndg] + status[kSbmt], static_cast<int>(c.incomplete_tail()));
  EXPECT_EQ(count(rows, kSettlement), completed);
  EXPECT_EQ(count(rows, kCashTransaction), cash);
  EXPECT_NEAR(double(cash) / completed, 0.92, 0.03);
  EXPECT_EQ(count(rows, kTradeRequest), static_cast<size_t>(status[kPndg]));
  EXPECT_EQ(count(rows, kTradeRequestBySector), static_cast<size_t>(status[kPndg]));
}

TEST(TpceGenerator, SameSeedSameDataOtherSeedOther) {
  const Config c = small();
  const RowMap a = generate(c, 1), b = generate(c, 1);
  EXPECT_TRUE(a == b);
  Config other = c;
  other.seed = 2;
  const RowMap d = generate(other, 1);
  EXPECT_EQ(a.size() == d.size() && std::equal(a.begin(), a.end(), d.begin()), false);
}

// A Txn over a map of rows: the brute-force model the procedures run on.
class ModelTxn : public txn::Txn {
 public:
  explicit ModelTxn(RowMap rows) : rows(std::move(rows)) {}
  Abort get(txn::TableId t, txn::Key k, void* out) override {
    auto it = rows.find({t, k});
    if (it == rows.end()) return Abort::kRecordMissing;
    std::memcpy(out, it->second.data(), it->second.size());
    return Abort::kNone;
  }
  Abort get_for_update(txn::TableId t, txn::Key k, void* out) override { return get(t, k, out); }
  Abort put(txn::TableId t, txn::Key k, const void* v) override {
    auto it = rows.find({t, k});
    if (it == rows.end()) return Abort::kRecordMissing;
    std::memcpy(it->second.data(), v, it->second.size());
    return Abort::kNone;
  }
  Abort prefetch(std::span<const txn::TableKey> keys, bool) override {
    for (const auto& k : keys)
      if (rows.count({k.table, k.key}) == 0) return Abort::kRecordMissing;
    return Abort::kNone;
  }
  Abort insert(txn::TableId t, txn::Key k, const void* v) override {
    const size_t n = sizes.at(t);
    auto [it, fresh] = rows.try_emplace({t, k});
    if (!fresh) return Abort::kDuplicateInsert;
    it->second.assign(static_cast<const uint8_t*>(v), static_cast<const uint8_t*>(v) + n);
    return Abort::kNone;
  }
  Abort remove(txn::TableId t, txn::Key k) override {
    return rows.erase({t, k}) == 1 ? Abort::kNone : Abort::kRecordMissing;
  }
  Abort scan(txn::TableId t, txn::Key from, txn::Key to, size_t limit, Rows* out) override {
    out->keys.clear();
    out->values.clear();
    for (auto it = rows.lower_bound({t, from}); it != rows.end() && it->first.first == t &&
                                                it->first.second <= to && out->keys.size() < limit;
         ++it) {
      out->keys.push_back(it->first.second);
      out->values.insert(out->values.end(), it->second.begin(), it->second.end());
    }
    return Abort::kNone;
  }
  template <typename Row>
  Row at(txn::TableId t, uint64_t k) {
    return as<Row>(rows.at({t, k}));
  }
  RowMap rows;
  std::map<txn::TableId, size_t> sizes;
};

ModelTxn model(const Config& c) {
  ModelTxn m(generate(c, c.units()));
  for (const store::TableSpec& t : table_specs(c)) m.sizes[t.id] = t.value_size;
  return m;
}

// The brute-force invariants over the whole model: C2, C3, C5 as the
// checks state them, by iterating every row.
void expect_invariants(ModelTxn& m, const Config& c) {
  std::map<uint64_t, int64_t> cash;
  each<TradeRow>(m.rows, kTrade, [&](uint64_t k, const TradeRow& t) {
    const bool se = m.rows.count({kSettlement, k}) > 0,
               ct = m.rows.count({kCashTransaction, k}) > 0;
    EXPECT_EQ(se, t.t_st_id == kCmpt) << k;
    EXPECT_EQ(ct, t.t_st_id == kCmpt && t.t_is_cash) << k;
    if (ct) cash[t.t_ca_id] += m.at<CashTransactionRow>(kCashTransaction, k).ct_amt;
  });
  each<CustomerAccountRow>(m.rows, kCustomerAccount, [&](uint64_t, const CustomerAccountRow& a) {
    EXPECT_EQ(a.ca_bal, account_base_balance(c.seed, a.ca_id) + cash[a.ca_id]) << a.ca_id;
  });
  std::map<std::pair<uint64_t, uint32_t>, int64_t> held;
  each<HoldingRow>(m.rows, kHolding, [&](uint64_t k, const HoldingRow& h) {
    const uint64_t local = (k >> 42) & 0x3fff;
    const uint64_t ca =
        account_of(unit_of(k) * uint64_t{kCustomersPerUnit} + local / 16, local % 16);
    held[{ca, static_cast<uint32_t>((k >> 24) & 0x3ffff)}] += h.h_qty;
  });
  size_t summaries = 0;
  each<HoldingSummaryRow>(m.rows, kHoldingSummary, [&](uint64_t k, const HoldingSummaryRow& hs) {
    const uint64_t local = (k >> 18) & 0x3fff;
    const uint64_t ca =
        account_of(unit_of(k) * uint64_t{kCustomersPerUnit} + local / 16, local % 16);
    const std::pair<uint64_t, uint32_t> key{ca, static_cast<uint32_t>(k & 0x3ffff)};
    EXPECT_EQ(hs.hs_qty, held[key]) << k;
    ++summaries;
  });
  size_t nonzero = 0;
  for (const auto& [k, q] : held) nonzero += q != 0;
  EXPECT_EQ(summaries, nonzero);
}

TEST(TpceModel, CustomerPositionSumsCashAndHoldings) {
  const Config c = small();
  ModelTxn m = model(c);
  for (uint64_t cu : {0ull, 17ull, 999ull}) {
    const auto row = m.at<CustomerRow>(kCustomer, customer_key(cu));
    int64_t cash = 0, assets = 0;
    for (uint32_t j = 0; j < row.c_accounts; ++j) {
      const uint64_t ca = account_of(cu, j);
      cash += m.at<CustomerAccountRow>(kCustomerAccount, account_key(ca)).ca_bal;
      for (uint32_t s = 0; s < c.securities(); ++s) {
        auto it = m.rows.find({kHoldingSummary, holding_summary_key(ca, s)});
        if (it == m.rows.end()) continue;
        assets += int64_t{as<HoldingSummaryRow>(it->second).hs_qty} *
                  m.at<LastTradeRow>(kLastTrade, security_key(s)).lt_price;
      }
    }
    CustomerPositionOutput out;
    ASSERT_EQ(customer_position(m, {cu, true, 3}, &out), Abort::kNone);
    EXPECT_EQ(out.accounts, row.c_accounts);
    EXPECT_EQ(out.cash, cash);
    EXPECT_EQ(out.assets, assets);
    EXPECT_LE(out.trades, 10u);
  }
}

TEST(TpceModel, TradeLookupFramesFindTheTradesBruteForceDoes) {
  const Config c = small();
  ModelTxn m = model(c);
  // Frame 2: an account's trades at or before a bound, newest first.
  uint64_t ca = 0;
  each<TradeRow>(m.rows, kTrade, [&](uint64_t, const TradeRow& t) { ca = t.t_ca_id; });
  const uint64_t bound = t_num(c.initial_trades() * 3 / 4, 0);
  std::vector<uint64_t> want;
  each<TradeRow>(m.rows, kTrade, [&](uint64_t k, const TradeRow& t) {
    if (t.t_ca_id == ca && trade_num(k) <= bound) want.push_back(k);
  });
  std::reverse(want.begin(), want.end());
  if (want.size() > 20) want.resize(20);
  TradeLookupInput in;
  in.frame = 2;
  in.ca = ca;
  in.tn = bound;
  TradeLookupOutput out;
  ASSERT_EQ(trade_lookup(m, in, &out), Abort::kNone);
  EXPECT_EQ(out.trades, want);
  // Frame 3: a security's trades from a bound on, oldest first.
  const uint32_t s = m.at<TradeRow>(kTrade, want.empty() ? trade_key(0, 0) : want[0]).t_s;
  in = TradeLookupInput{};
  in.frame = 3;
  in.s = s;
  in.tn = t_num(c.initial_trades() / 4, 0);
  std::vector<uint64_t> want3;
  each<TradeRow>(m.rows, kTrade, [&](uint64_t k, const TradeRow& t) {
    if (t.t_s == s && trade_num(k) >= in.tn && want3.size() < 20) want3.push_back(k);
  });
  ASSERT_EQ(trade_lookup(m, in, &out), Abort::kNone);
  EXPECT_EQ(out.trades, want3);
  uint32_t completed = 0;
  for (uint64_t k : want3) completed += m.at<TradeRow>(kTrade, k).t_st_id == kCmpt;
  EXPECT_EQ(out.settlements, completed);
  // Trade-Status: the last 50 by status.
  TradeStatusOutput ts;
  ASSERT_EQ(trade_status(m, {ca}, &ts), Abort::kNone);
  uint32_t all = 0;
  each<TradeRow>(m.rows, kTrade, [&](uint64_t, const TradeRow& t) { all += t.t_ca_id == ca; });
  EXPECT_EQ(ts.trades, std::min<uint32_t>(all, 50));
}

TEST(TpceModel, TradeOrderThenResultKeepsTheInvariants) {
  const Config c = small();
  ModelTxn m = model(c);
  expect_invariants(m, c);
  uint32_t seq = c.initial_trades();
  // A buy and a sell of the same security for one account, then a sell
  // larger than the position (it goes short), each completed.
  const uint64_t ca = account_of(5, 0);
  const uint32_t s = account_basket(c.seed, ca, c.securities())[0];
  for (auto [tt, qty] : {std::pair<uint8_t, int32_t>{kTMB, 400}, {kTMS, 200}, {kTMS, 800}}) {
    const int64_t bal = m.at<CustomerAccountRow>(kCustomerAccount, account_key(ca)).ca_bal;
    auto it = m.rows.find({kHoldingSummary, holding_summary_key(ca, s)});
    const int32_t before = it == m.rows.end() ? 0 : as<HoldingSummaryRow>(it->second).hs_qty;
    TradeOrderInput in;
    in.ca = ca;
    in.s = s;
    in.tt = tt;
    in.qty = qty;
    in.trade = trade_key(0, t_num(seq++, 1));
    in.now = kLoadTime + int64_t{500} * 86400000;
    TradeOrderOutput out;
    ASSERT_EQ(trade_order(m, in, &out), Abort::kNone);
    ASSERT_TRUE(out.submitted);
    EXPECT_EQ(m.at<TradeRow>(kTrade, in.trade).t_st_id, kSbmt);
    EXPECT_EQ(m.rows.count({kTradeByAccount, trade_by_account_key(ca, trade_num(in.trade))}), 1u);
    TradeResultOutput res;
    ASSERT_EQ(trade_result(m, {out.order, in.now + 1000}, &res), Abort::kNone);
    const TradeRow t = m.at<TradeRow>(kTrade, in.trade);
    EXPECT_EQ(t.t_st_id, kCmpt);
    EXPECT_EQ(res.settlement, settlement_amount(type_is_sell(tt), qty, out.order.price, t.t_chrg,
                                                t.t_comm, t.t_tax));
    EXPECT_EQ(m.at<CustomerAccountRow>(kCustomerAccount, account_key(ca)).ca_bal,
              bal + (t.t_is_cash ? res.settlement : 0));
    it = m.rows.find({kHoldingSummary, holding_summary_key(ca, s)});
    const int32_t after = it == m.rows.end() ? 0 : as<HoldingSummaryRow>(it->second).hs_qty;
    EXPECT_EQ(after, before + (type_is_sell(tt) ? -qty : qty));
    // A second Trade-Result of the same trade is refused.
    TradeResultOutput again;
    EXPECT_EQ(trade_result(m, {out.order, in.now + 2000}, &again), Abort::kUserAbort);
    EXPECT_TRUE(again.not_submitted);
    expect_invariants(m, c);
  }
  // The rollback leaves nothing.
  const size_t trades = count(m.rows, kTrade);
  TradeOrderInput rb;
  rb.ca = ca;
  rb.s = s;
  rb.trade = trade_key(0, t_num(seq, 1));
  rb.roll_back = true;
  TradeOrderOutput out;
  ModelTxn copy = m;
  EXPECT_EQ(trade_order(copy, rb, &out), Abort::kUserAbort);
  EXPECT_TRUE(out.rolled_back);
  EXPECT_EQ(count(m.rows, kTrade), trades);
}

TEST(TpceModel, LimitOrdersWaitForMarketFeedAndBrokerVolumeSeesThem) {
  const Config c = small();
  ModelTxn m = model(c);
  const uint64_t ca = account_of(7, 0);
  const uint32_t s = 3;
  const int64_t now = kLoadTime + int64_t{500} * 86400000;
  TradeOrderInput in;
  in.ca = ca;
  in.s = s;
  in.tt = kTLB;
  in.qty = 200;
  in.limit_price = 2000;
  in.trade = trade_key(0, t_num(c.initial_trades(), 1));
  in.now = now;
  TradeOrderOutput out;
  ASSERT_EQ(trade_order(m, in, &out), Abort::kNone);
  EXPECT_FALSE(out.submitted);
  EXPECT_EQ(m.at<TradeRow>(kTrade, in.trade).t_st_id, kPndg);
  // Broker-Volume over every broker and sector: brute force over TRADE_REQUEST.
  const uint32_t broker = m.at<CustomerAccountRow>(kCustomerAccount, account_key(ca)).ca_b_id;
  for (uint32_t sector = 0; sector < kSectors; ++sector) {
    BrokerVolumeInput bv;
    for (uint32_t b = 0; b < c.brokers(); ++b) bv.brokers.push_back(b);
    bv.sector = sector;
    std::vector<int64_t> want(c.brokers(), 0);
    each<TradeRequestRow>(m.rows, kTradeRequest, [&](uint64_t, const TradeRequestRow& tr) {
      const auto sec = m.at<SecurityRow>(kSecurity, security_key(tr.tr_s));
      const auto co = m.at<CompanyRow>(kCompany, company_key(sec.s_co_id));
      if (m.at<IndustryRow>(kIndustry, co.co_in_id).in_sc_id == sector)
        want[tr.tr_b_id] += int64_t{tr.tr_qty} * tr.tr_bid_price;
    });
    BrokerVolumeOutput bo;
    ASSERT_EQ(broker_volume(m, bv, &bo), Abort::kNone);
    EXPECT_EQ(bo.volume, want) << sector;
    const auto sec = m.at<SecurityRow>(kSecurity, security_key(s));
    const auto co = m.at<CompanyRow>(kCompany, company_key(sec.s_co_id));
    if (m.at<IndustryRow>(kIndustry, co.co_in_id).in_sc_id == sector) {
      EXPECT_GE(bo.volume[broker], int64_t{200} * 2000);  // the new order counts for its broker
    }
  }
  // A price above the limit triggers nothing; at the limit the order is submitted.
  MarketFeedOutput mf;
  ASSERT_EQ(market_feed(m, {{{s, 2001, 100}}, now + 10}, &mf), Abort::kNone);
  EXPECT_TRUE(mf.submitted.empty());
  EXPECT_EQ(m.at<LastTradeRow>(kLastTrade, security_key(s)).lt_price, 2001);
  ASSERT_EQ(market_feed(m, {{{s, 2000, 100}}, now + 20}, &mf), Abort::kNone);
  bool found = false;
  for (const Submitted& x : mf.submitted) found |= x.trade == in.trade;
  EXPECT_TRUE(found);
  EXPECT_EQ(m.at<TradeRow>(kTrade, in.trade).t_st_id, kSbmt);
  EXPECT_EQ(m.rows.count({kTradeRequest, trade_request_key(s, in.trade)}), 0u);
  EXPECT_TRUE(triggered(kTLS, 1000, 1000) && !triggered(kTLS, 1000, 999));
  EXPECT_TRUE(triggered(kTSL, 1000, 999) && !triggered(kTSL, 1000, 1001));
}

TEST(TpceModel, TradeCleanupCancelsTheLoadersIncompleteTrades) {
  const Config c = small();
  ModelTxn m = model(c);
  ASSERT_GT(count(m.rows, kTradeRequest), 0u);
  TradeCleanupInput in;
  in.unit = 0;
  in.now = kLoadTime + int64_t{500} * 86400000;
  in.cutoff = in.now;
  in.tail_from = c.initial_trades() - c.incomplete_tail();
  in.tail_to = c.initial_trades();
  in.max = 1000;
  TradeCleanupOutput out;
  ASSERT_EQ(trade_cleanup(m, in, &out), Abort::kNone);
  EXPECT_EQ(out.canceled, c.incomplete_tail());
  EXPECT_EQ(count(m.rows, kTradeRequest), 0u);
  EXPECT_EQ(count(m.rows, kTradeRequestBySector), 0u);
  each<TradeRow>(m.rows, kTrade, [&](uint64_t, const TradeRow& t) {
    EXPECT_TRUE(t.t_st_id == kCmpt || t.t_st_id == kCncl);
  });
  // In batches: max 7 at a time, resumed until done.
  ModelTxn b = model(c);
  in.max = 7;
  uint32_t total = 0;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(trade_cleanup(b, in, &out), Abort::kNone);
    total += out.canceled;
    in.from = out.more ? out.next : 0;
    if (!out.more && out.canceled == 0) break;
  }
  EXPECT_EQ(total, c.incomplete_tail());
}

TEST(TpceModel, ReadOnlyTransactionsAnswerFromTheData) {
  const Config c = small();
  ModelTxn m = model(c);
  SecurityDetailOutput sd;
  ASSERT_EQ(security_detail(m, {10, 2, 5}, &sd), Abort::kNone);
  EXPECT_EQ(sd.competitors, 3u);
  EXPECT_EQ(sd.financials, 20u);
  EXPECT_EQ(sd.days, 5u);
  EXPECT_EQ(sd.news, 2u);
  EXPECT_EQ(sd.last_price, m.at<LastTradeRow>(kLastTrade, security_key(10)).lt_price);
  // Market-Watch of a watch list: brute-force values.
  MarketWatchInput mw;
  mw.c = 12;
  mw.day = 4;
  int64_t old_value = 0, new_value = 0;
  uint32_t n = 0;
  for (uint32_t s = 0; s < c.securities(); ++s) {
    if (m.rows.count({kWatchItem, watch_item_key(12, s)}) == 0) continue;
    const int64_t shares = m.at<SecurityRow>(kSecurity, security_key(s)).s_num_out / 1000;
    new_value += m.at<LastTradeRow>(kLastTrade, security_key(s)).lt_price * shares;
    old_value += m.at<DailyMarketRow>(kDailyMarket, daily_market_key(s, 4)).dm_close * shares;
    ++n;
  }
  MarketWatchOutput out;
  ASSERT_EQ(market_watch(m, mw, &out), Abort::kNone);
  EXPECT_EQ(out.securities, n);
  EXPECT_EQ(out.new_value, new_value);
  EXPECT_EQ(out.old_value, old_value);
  mw.by = MarketWatchInput::kIndustry;
  mw.industry = company_industry(c.seed, 40);
  mw.co_from = 40;
  mw.co_to = 40;
  ASSERT_EQ(market_watch(m, mw, &out), Abort::kNone);
  EXPECT_EQ(out.securities, company_securities(40));
}

TEST(TpceModel, DataMaintenanceAndTradeUpdateChangeOneRowEach) {
  const Config c = small();
  ModelTxn m = model(c);
  for (uint32_t table = 0; table < 12; ++table) {
    const RowMap before = m.rows;
    DataMaintenanceInput in;
    in.table = table;
    in.c = 3;
    in.co = 4;
    in.s = 5;
    in.day = 1;
    in.ex = 2;
    in.tx_id = 7;
    in.new_s = 600;
    DataMaintenanceOutput out;
    ASSERT_EQ(data_maintenance(m, in, &out), Abort::kNone) << table;
    size_t changed = 0;
    for (const auto& [k, v] : m.rows) changed += before.count(k) == 0 || before.at(k) != v;
    EXPECT_GE(changed, 1u) << table;
    EXPECT_LE(changed, 1u + (table == 11)) << table;  // WATCH_ITEM: one out, one in
    EXPECT_EQ(m.rows.size(), before.size()) << table;
  }
  TradeLookupInput tu;
  tu.frame = 1;
  for (uint32_t i = 0; i < 5; ++i) tu.trades.push_back(trade_key(0, t_num(i, 0)));
  TradeLookupOutput out;
  ASSERT_EQ(trade_update(m, tu, &out), Abort::kNone);
  EXPECT_EQ(out.updated, 5u);
}

// One in-process node holding every partition (replicas 1), loaded.
struct Db : testing::LocalNode {
  explicit Db(const Config& cfg) : LocalNode(table_specs(cfg), cfg.nodes), c(cfg) {
    Status st = load(*node, catalog, c);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  Status check() {
    auto r = check_unit(*node, catalog, c, 0);
    return r.is_ok() ? Status() : r.status();
  }
  Config c;
};

TEST(TpceCheck, LoadedDatabasePassesAndClusterSumsAgree) {
  Db db(small());
  ASSERT_TRUE(db.check().is_ok()) << db.check().to_string();
  auto sums = audit_node(*db.node, db.catalog, db.c);
  ASSERT_TRUE(sums.is_ok()) << sums.status().to_string();
  EXPECT_TRUE(check_sums(db.c, *sums, {0, 0, 0, 0, 0}).is_ok());
  Status s = check_sums(db.c, *sums, {1, 0, 0, 0, 0});
  EXPECT_NE(s.message().find("C9"), std::string::npos) << s.message();
  s = check_sums(db.c, *sums, {0, 0, 0, 3, 0});
  EXPECT_NE(s.message().find("3 Trade-Orders found their client's trade ids used up"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("the trade keys allow " + std::to_string(trade_quota(db.c)) +
                             " trades per client (26-bit sequence numbers"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("--trade-room"), std::string::npos) << s.message();
}

void expect_violation(Db& db, const std::string& condition) {
  Status s = db.check();
  ASSERT_FALSE(s.is_ok()) << condition;
  EXPECT_NE(s.message().find(condition), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the primary"), std::string::npos) << s.message();
}

TEST(TpceCheck, CatchesEachCorruption) {
  const Config c = small();
  uint64_t done = 0, ca = 0;
  {
    const RowMap rows = generate(c, 1);
    each<TradeRow>(rows, kTrade, [&](uint64_t k, const TradeRow& t) {
      if (t.t_st_id == kCmpt && t.t_is_cash && done == 0) {
        done = k;
        ca = t.t_ca_id;
      }
    });
  }
  {  // C1: a history row a completed trade cannot have
    Db db(c);
    db.put(kTradeHistory, trade_history_key(done, kCncl), TradeHistoryRow{kLoadTime});
    expect_violation(db, "C1");
  }
  {  // C2: a completed trade without its settlement
    Db db(c);
    ASSERT_TRUE(db.node->partition(kSettlement, 0)->hash->remove(done).is_ok());
    expect_violation(db, "C2");
  }
  {  // C3: a balance off by a cent
    Db db(c);
    auto a = db.get<CustomerAccountRow>(kCustomerAccount, account_key(ca));
    a.ca_bal += 1;
    db.put(kCustomerAccount, account_key(ca), a);
    expect_violation(db, "C3");
  }
  {  // C4: a broker's trade count
    Db db(c);
    auto b = db.get<BrokerRow>(kBroker, broker_key(3));
    b.b_num_trades += 1;
    db.put(kBroker, broker_key(3), b);
    expect_violation(db, "C4");
  }
  {  // C5: a holding summary off the sum of its holdings
    Db db(c);
    const auto* lp = db.node->partition(kHoldingSummary, 0);
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    lp->tree->scan(0, 1, keys, values);
    ASSERT_FALSE(keys.empty());
    auto hs = db.get<HoldingSummaryRow>(kHoldingSummary, keys[0]);
    hs.hs_qty += 100;
    db.put(kHoldingSummary, keys[0], hs);
    expect_violation(db, "C5");
  }
  {  // C7: a trade missing from its account index
    Db db(c);
    ASSERT_TRUE(db.node->partition(kTradeByAccount, 0)
                    ->records->remove(trade_by_account_key(ca, trade_num(done)))
                    .is_ok());
    expect_violation(db, "C7");
  }
}

}  // namespace
}  // namespace drtmx::bench::tpce
