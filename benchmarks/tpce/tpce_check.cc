// TPC-E consistency checks (tpce_check.h).
#include "tpce/tpce_check.h"

#include <cstring>
#include <map>
#include <string>
#include <unordered_map>

#include "base/hash.h"
#include "tpce/tpce_client.h"
#include "tpce/tpce_gen.h"
#include "tpce/tpce_schema.h"

namespace drtmx::bench::tpce {
namespace {

using store::TableSpec;
using store::tables::StoreNode;

constexpr int kPerUnit = 8;  // sums per unit before the per-table digests
// Times at or after this are the run's (the loader's are in 2023).
constexpr int64_t kRunTime = kLoadTime + int64_t{400} * 86400000;

int64_t digest_of(uint64_t table, uint64_t key, const void* row, size_t n) {
  uint64_t h = hash_mix(key, table);
  const auto* b = static_cast<const uint8_t*>(row);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, b + i, std::min<size_t>(8, n - i));
    h = hash_mix(word, h);
  }
  return static_cast<int64_t>(h & 0xffffff);
}

// The legal TRADE_HISTORY status sets (bit per status) and the T_ST_ID each
// ends in.
bool legal_history(uint32_t mask, uint8_t* last) {
  const uint32_t P = 1u << kPndg, S = 1u << kSbmt, C = 1u << kCmpt, X = 1u << kCncl;
  struct Path {
    uint32_t mask;
    uint8_t last;
  };
  static const Path kPaths[] = {{P, kPndg},     {S, kSbmt},         {P | S, kSbmt},
                                {S | C, kCmpt}, {P | S | C, kCmpt}, {P | X, kCncl},
                                {S | X, kCncl}, {P | S | X, kCncl}};
  for (const Path& p : kPaths) {
    if (p.mask == mask) {
      *last = p.last;
      return true;
    }
  }
  return false;
}

// The fields of a pending trade both TRADE and TRADE_REQUEST carry (C8).
int64_t request_hash(uint64_t trade, uint32_t s, int32_t qty, int64_t bid, uint8_t tt) {
  return static_cast<int64_t>(
      hash_mix(hash_mix(trade, s), hash_mix(static_cast<uint64_t>(bid), uint64_t(qty) << 8 | tt)) &
      0xffffffff);
}

class Checker {
 public:
  Checker(const StoreNode& node, const store::Catalog& cat, const Config& c, uint32_t u)
      : node_(node), cat_(cat), c_(c), u_(u) {
    // The live view: after a failover a promoted backup is the primary.
    backup_ = !node.is_primary(*cat.find(kCustomer), u);
    sums_.table_digest.assign(kTableCount, 0);
    sums_.requests_by_unit.assign(c.units(), 0);
    sums_.requests_hash_by_unit.assign(c.units(), 0);
  }

  Result<UnitSums> run() {
    DRTMX_RETURN_IF_ERROR(trades());
    DRTMX_RETURN_IF_ERROR(history());
    DRTMX_RETURN_IF_ERROR(accounts());
    DRTMX_RETURN_IF_ERROR(holdings());
    DRTMX_RETURN_IF_ERROR(indexes());
    DRTMX_RETURN_IF_ERROR(market());
    DRTMX_RETURN_IF_ERROR(rest());
    return sums_;
  }

 private:
  struct Trade {
    uint8_t st = 0, tt = 0, cash = 0, hist = 0;
    uint64_t ca = 0;
    uint32_t s = 0;
    int32_t qty = 0;
    int64_t bid = 0, comm = 0, done_at = 0, canceled_at = 0;
  };

  Status trades() {
    return scan<TradeRow>(kTrade, unit_bits(u_), unit_bits(u_ + 1) - 1,
                          [&](uint64_t k, const TradeRow& t) -> Status {
                            if (t.t_id != k || account_unit(t.t_ca_id) != u_)
                              return violated("C7", "trade " + std::to_string(k),
                                              "T_ID or its account does not match its key");
                            Trade& x = trades_[k];
                            x.st = t.t_st_id;
                            x.tt = t.t_tt_id;
                            x.cash = t.t_is_cash;
                            x.ca = t.t_ca_id;
                            x.s = t.t_s;
                            x.qty = t.t_qty;
                            x.bid = t.t_bid_price;
                            x.comm = t.t_comm;
                            if ((k & 0xfff) != 0) ++sums_.added;
                            return Status();
                          });
  }

  Status history() {
    DRTMX_RETURN_IF_ERROR(scan<TradeHistoryRow>(
        kTradeHistory, unit_bits(u_), unit_bits(u_ + 1) - 1,
        [&](uint64_t k, const TradeHistoryRow& h) -> Status {
          const uint64_t trade = unit_bits(u_) | ((k & ((uint64_t{1} << 56) - 1)) >> 3);
          const uint8_t st = k & 7;
          auto it = trades_.find(trade);
          if (it == trades_.end() || st >= kStatusTypes)
            return violated("C1", "trade " + std::to_string(trade),
                            "a TRADE_HISTORY row without its trade");
          it->second.hist |= static_cast<uint8_t>(1u << st);
          if (st == kCmpt) it->second.done_at = h.th_dts;
          if (st == kCncl) it->second.canceled_at = h.th_dts;
          return Status();
        }));
    for (const auto& [k, t] : trades_) {
      uint8_t last = 0;
      if (!legal_history(t.hist, &last) || last != t.st) {
        return violated("C1 (trade status transitions)", "trade " + std::to_string(k),
                        "TRADE_HISTORY statuses mask " + std::to_string(t.hist) + " with T_ST_ID " +
                            std::to_string(t.st));
      }
      if (t.st == kCmpt && t.done_at >= kRunTime) ++sums_.completed;
      if (t.st == kCncl && t.canceled_at >= kRunTime) ++sums_.canceled;
      if (t.st == kPndg) {
        ++sums_.pending;
        sums_.pending_hash += request_hash(k, t.s, t.qty, t.bid, t.tt);
      }
      // C2
      SettlementRow se;
      bool have_se = false, have_ct = false;
      DRTMX_RETURN_IF_ERROR(get(kSettlement, k, &se, &have_se));
      CashTransactionRow ct;
      DRTMX_RETURN_IF_ERROR(get(kCashTransaction, k, &ct, &have_ct));
      const bool done = t.st == kCmpt;
      if (have_se != done || have_ct != (done && t.cash) || (have_ct && ct.ct_amt != se.se_amt)) {
        return violated(
            "C2 (settlement and cash rows match completed trades)", "trade " + std::to_string(k),
            std::string("status ") + std::to_string(t.st) + ", cash " + std::to_string(t.cash) +
                ", SETTLEMENT " + (have_se ? "present" : "absent") + ", CASH_TRANSACTION " +
                (have_ct ? "present" : "absent"));
      }
      if (have_ct) cash_[t.ca] += ct.ct_amt;
    }
    return Status();
  }

  Status accounts() {
    std::map<uint32_t, std::pair<int64_t, int64_t>> per_broker;  // broker -> (trades, comm)
    std::unordered_map<uint64_t, uint32_t> broker_of;
    for (uint32_t i = 0; i < kCustomersPerUnit; ++i) {
      const uint64_t cu = uint64_t{u_} * kCustomersPerUnit + i;
      CustomerRow row;
      DRTMX_RETURN_IF_ERROR(need(kCustomer, customer_key(cu), &row));
      for (uint32_t j = 0; j < row.c_accounts; ++j) {
        const uint64_t ca = account_of(cu, j);
        CustomerAccountRow a;
        DRTMX_RETURN_IF_ERROR(need(kCustomerAccount, account_key(ca), &a));
        broker_of[ca] = a.ca_b_id;
        const int64_t want = account_base_balance(c_.seed, ca) + cash_[ca];
        if (a.ca_bal != want) {
          return violated("C3 (balances match cash transactions)", "account " + std::to_string(ca),
                          "CA_BAL " + std::to_string(a.ca_bal) + " vs " + std::to_string(want) +
                              " (balance before trading + sum(CT_AMT))");
        }
      }
      for (uint32_t k = 0; k < 2; ++k) {
        CustomerTaxrateRow cx;
        DRTMX_RETURN_IF_ERROR(need(kCustomerTaxrate, customer_taxrate_key(cu, k), &cx));
      }
      WatchListRow wl;
      DRTMX_RETURN_IF_ERROR(need(kWatchList, watch_list_key(cu), &wl));
      AddressRow ad;
      DRTMX_RETURN_IF_ERROR(need(kAddress, customer_address_key(cu), &ad));
    }
    for (const auto& [k, t] : trades_) {
      if (t.st != kCmpt) continue;
      auto it = broker_of.find(t.ca);
      if (it == broker_of.end())
        return violated("C7", "trade " + std::to_string(k), "its account does not exist");
      auto& b = per_broker[it->second];
      b.first += 1;
      b.second += t.comm;
    }
    for (uint32_t k = 0; k < kBrokersPerUnit; ++k) {
      const uint32_t b = u_ * kBrokersPerUnit + k;
      BrokerRow row;
      DRTMX_RETURN_IF_ERROR(need(kBroker, broker_key(b), &row));
      const auto want = per_broker[b];
      if (row.b_num_trades != want.first || row.b_comm_total != want.second) {
        return violated("C4 (broker totals match completed trades)", "broker " + std::to_string(b),
                        "B_NUM_TRADES " + std::to_string(row.b_num_trades) + " vs " +
                            std::to_string(want.first) + ", B_COMM_TOTAL " +
                            std::to_string(row.b_comm_total) + " vs " +
                            std::to_string(want.second));
      }
    }
    return Status();
  }

  Status holdings() {
    std::map<uint64_t, int64_t> sum;       // HS key -> sum(H_QTY)
    std::map<uint64_t, int32_t> by_trade;  // H_T_ID -> H_QTY
    DRTMX_RETURN_IF_ERROR(scan<HoldingRow>(
        kHolding, unit_bits(u_), unit_bits(u_ + 1) - 1, [&](uint64_t k, const HoldingRow& h) {
          const uint64_t hs = unit_bits(u_) | ((k >> 42) & 0x3fff) << 18 | ((k >> 24) & 0x3ffff);
          if (h.h_qty == 0)
            return violated("C5 (holdings)", "holding " + std::to_string(k), "H_QTY is 0");
          sum[hs] += h.h_qty;
          by_trade[h.h_t_id] = h.h_qty;
          return Status();
        }));
    DRTMX_RETURN_IF_ERROR(scan<HoldingSummaryRow>(
        kHoldingSummary, unit_bits(u_), unit_bits(u_ + 1) - 1,
        [&](uint64_t k, const HoldingSummaryRow& hs) -> Status {
          auto it = sum.find(k);
          const int64_t have = it == sum.end() ? 0 : it->second;
          if (hs.hs_qty == 0 || have != hs.hs_qty) {
            return violated(
                "C5 (holding summaries equal the sum of holdings)",
                "holding summary " + std::to_string(k),
                "HS_QTY " + std::to_string(hs.hs_qty) + " vs sum(H_QTY) " + std::to_string(have));
          }
          if (it != sum.end()) sum.erase(it);
          return Status();
        }));
    if (!sum.empty()) {
      return violated("C5 (holding summaries equal the sum of holdings)",
                      "holding summary " + std::to_string(sum.begin()->first),
                      "holdings without a HOLDING_SUMMARY row");
    }
    std::map<uint64_t, int64_t> net;  // H_T_ID -> sum of changes
    DRTMX_RETURN_IF_ERROR(
        scan<HoldingHistoryRow>(kHoldingHistory, unit_bits(u_), unit_bits(u_ + 1) - 1,
                                [&](uint64_t, const HoldingHistoryRow& hh) {
                                  net[hh.hh_h_t_id] += int64_t{hh.hh_after_qty} - hh.hh_before_qty;
                                  return Status();
                                }));
    for (const auto& [t, q] : by_trade) {
      if (net[t] != q)
        return violated("C6 (holding history matches holdings)",
                        "holding of trade " + std::to_string(t),
                        "H_QTY " + std::to_string(q) + " vs history " + std::to_string(net[t]));
    }
    for (const auto& [t, q] : net) {
      if (q != 0 && by_trade.count(t) == 0)
        return violated("C6 (holding history matches holdings)",
                        "holding of trade " + std::to_string(t),
                        "closed, but its history adds up to " + std::to_string(q));
    }
    return Status();
  }

  Status indexes() {
    uint64_t by_account = 0, by_security = 0, by_sector = 0;
    DRTMX_RETURN_IF_ERROR(scan<IndexRow>(
        kTradeByAccount, unit_bits(u_), unit_bits(u_ + 1) - 1, [&](uint64_t k, const IndexRow& ix) {
          auto it = trades_.find(ix.key);
          if (it == trades_.end() || trade_by_account_key(it->second.ca, trade_num(ix.key)) != k)
            return violated("C7 (trade indexes)", "TRADE_BY_ACCOUNT entry " + std::to_string(k),
                            "no trade of that account");
          ++by_account;
          return Status();
        }));
    DRTMX_RETURN_IF_ERROR(scan<IndexRow>(
        kTradeBySecurity, unit_bits(u_), unit_bits(u_ + 1) - 1,
        [&](uint64_t k, const IndexRow& ix) {
          auto it = trades_.find(ix.key);
          if (it == trades_.end() ||
              trade_by_security_key(u_, it->second.s, trade_num(ix.key)) != k)
            return violated("C7 (trade indexes)", "TRADE_BY_SECURITY entry " + std::to_string(k),
                            "no trade of that security");
          ++by_security;
          return Status();
        }));
    DRTMX_RETURN_IF_ERROR(
        scan<IndexRow>(kTradeRequestBySector, unit_bits(u_), unit_bits(u_ + 1) - 1,
                       [&](uint64_t k, const IndexRow& ix) {
                         const uint64_t trade = trade_of_request_key(ix.key);
                         auto it = trades_.find(trade);
                         if (it == trades_.end() || it->second.st != kPndg ||
                             ix.key != trade_request_key(it->second.s, trade) ||
                             trade_num(trade) != (k & kTNumMask))
                           return violated("C7 (trade indexes)",
                                           "TRADE_REQUEST_BY_SECTOR entry " + std::to_string(k),
                                           "not a pending trade of this unit");
                         ++by_sector;
                         return Status();
                       }));
    if (by_account != trades_.size() || by_security != trades_.size() ||
        by_sector != static_cast<uint64_t>(sums_.pending)) {
      return violated("C7 (trade indexes)", "unit " + std::to_string(u_),
                      std::to_string(trades_.size()) + " trades (" + std::to_string(sums_.pending) +
                          " pending), " + std::to_string(by_account) + " TRADE_BY_ACCOUNT, " +
                          std::to_string(by_security) + " TRADE_BY_SECURITY, " +
                          std::to_string(by_sector) + " TRADE_REQUEST_BY_SECTOR entries");
    }
    return Status();
  }

  // The unit's market partition: every security and company row, and the
  // pending requests on its securities (by their trades' units, for C8).
  Status market() {
    const uint32_t s0 = u_ * kSecuritiesPerUnit, s1 = s0 + kSecuritiesPerUnit;
    for (uint32_t s = s0; s < s1; ++s) {
      SecurityRow sec;
      DRTMX_RETURN_IF_ERROR(need(kSecurity, security_key(s), &sec));
      LastTradeRow lt;
      DRTMX_RETURN_IF_ERROR(need(kLastTrade, security_key(s), &lt));
    }
    for (uint32_t co = u_ * kCompaniesPerUnit; co < (u_ + 1) * kCompaniesPerUnit; ++co) {
      CompanyRow row;
      DRTMX_RETURN_IF_ERROR(need(kCompany, company_key(co), &row));
      AddressRow ad;
      DRTMX_RETURN_IF_ERROR(need(kAddress, company_address_key(co), &ad));
    }
    DRTMX_RETURN_IF_ERROR(
        scan<DailyMarketRow>(kDailyMarket, uint64_t{s0} << 16, (uint64_t{s1} << 16) - 1,
                             [](uint64_t, const DailyMarketRow&) { return Status(); }));
    DRTMX_RETURN_IF_ERROR(
        scan<FinancialRow>(kFinancial, financial_key(u_ * kCompaniesPerUnit, 0),
                           financial_key((u_ + 1) * kCompaniesPerUnit, 0) - 1,
                           [](uint64_t, const FinancialRow&) { return Status(); }));
    DRTMX_RETURN_IF_ERROR(scan<NewsItemRow>(kNewsItem, news_key(u_ * kCompaniesPerUnit, 0),
                                            news_key((u_ + 1) * kCompaniesPerUnit, 0) - 1,
                                            [](uint64_t, const NewsItemRow&) { return Status(); }));
    return scan<TradeRequestRow>(
        kTradeRequest, uint64_t{s0} << 46, (uint64_t{s1} << 46) - 1,
        [&](uint64_t k, const TradeRequestRow& tr) -> Status {
          const uint64_t trade = trade_of_request_key(k);
          const uint32_t tu = unit_of(trade);
          if (tr.tr_t_id != trade || (k >> 46) != tr.tr_s || tu >= c_.units())
            return violated("C8 (pending limit orders)", "TRADE_REQUEST " + std::to_string(k),
                            "its key, trade and security disagree");
          sums_.requests_by_unit[tu] += 1;
          sums_.requests_hash_by_unit[tu] +=
              request_hash(trade, tr.tr_s, tr.tr_qty, tr.tr_bid_price, tr.tr_tt_id);
          return Status();
        });
  }

  // The remaining partitioned tables, for the digests.
  Status rest() {
    auto any = [](uint64_t, const auto&) { return Status(); };
    DRTMX_RETURN_IF_ERROR(
        scan<AccountPermissionRow>(kAccountPermission, unit_bits(u_), unit_bits(u_ + 1) - 1, any));
    DRTMX_RETURN_IF_ERROR(
        scan<WatchItemRow>(kWatchItem, unit_bits(u_), unit_bits(u_ + 1) - 1, any));
    if (u_ == 0) {
      for (uint32_t ex = 0; ex < kExchanges; ++ex) {
        ExchangeRow row;
        DRTMX_RETURN_IF_ERROR(need(kExchange, exchange_key(ex), &row));
        AddressRow ad;
        DRTMX_RETURN_IF_ERROR(need(kAddress, exchange_address_key(ex), &ad));
      }
    }
    const TableSpec& tx = *cat_.find(kTaxrate);
    for (uint32_t i = 0; i < kTaxrates; ++i) {
      if (cat_.partition_of(tx, i) != u_) continue;
      TaxrateRow row;
      DRTMX_RETURN_IF_ERROR(need(kTaxrate, i, &row));
    }
    return Status();
  }

  template <typename Row>
  Status get(txn::TableId t, uint64_t key, Row* row, bool* found) {
    const TableSpec& spec = *cat_.find(t);
    auto r = node_.get_local(spec, key, {reinterpret_cast<uint8_t*>(row), sizeof(Row)});
    if (!r.is_ok()) return r.status();
    *found = *r;
    if (*found) sums_.table_digest[t] += digest_of(t, key, row, sizeof(Row));
    return Status();
  }
  template <typename Row>
  Status need(txn::TableId t, uint64_t key, Row* row) {
    bool found = false;
    DRTMX_RETURN_IF_ERROR(get(t, key, row, &found));
    if (!found)
      return violated("C7 (every row exists)", cat_.find(t)->name + " key " + std::to_string(key),
                      "missing");
    return Status();
  }

  template <typename Row, typename Fn>
  Status scan(txn::TableId t, uint64_t lo, uint64_t hi, Fn fn) {
    const TableSpec& spec = *cat_.find(t);
    const store::tables::LocalPartition* lp = node_.partition(t, u_);
    if (lp == nullptr || lp->tree == nullptr)
      return internal_error("tpce check: no local copy of " + spec.name + " for unit " +
                            std::to_string(u_));
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    uint64_t start = lo;
    for (;;) {
      const bool end = lp->tree->scan(start, 4096, keys, values);
      for (uint64_t k : keys) {
        if (k > hi) return Status();
        Row row;
        auto r = node_.get_local(spec, k, {reinterpret_cast<uint8_t*>(&row), sizeof row});
        if (!r.is_ok()) return r.status();
        if (!*r) continue;
        sums_.table_digest[t] += digest_of(t, k, &row, sizeof row);
        DRTMX_RETURN_IF_ERROR(fn(k, row));
      }
      if (end || keys.empty() || keys.back() >= hi) return Status();
      start = keys.back() + 1;
    }
  }

  Status violated(const std::string& condition, const std::string& what,
                  const std::string& detail) {
    return internal_error("tpce: consistency condition " + condition + " violated at unit " +
                          std::to_string(u_) + " " + what +
                          (backup_ ? " (a backup copy, node " : " (the primary, node ") +
                          std::to_string(node_.node()) + "): " + detail);
  }

  const StoreNode& node_;
  const store::Catalog& cat_;
  const Config& c_;
  const uint32_t u_;
  bool backup_ = false;
  UnitSums sums_;
  std::map<uint64_t, Trade> trades_;
  std::unordered_map<uint64_t, int64_t> cash_;  // account -> sum(CT_AMT)
};

// The replicated tables' digest on this node.
Result<int64_t> replicated_digest(const StoreNode& node, const store::Catalog& cat) {
  int64_t d = 0;
  for (const TableSpec& t : cat.tables()) {
    if (t.scheme != store::PartitionScheme::kReplicated) continue;
    const store::tables::LocalPartition* lp = node.partition(t.id, 0);
    if (lp == nullptr) return internal_error("tpce check: no copy of " + t.name);
    std::vector<uint8_t> row(t.value_size);
    auto visit = [&](uint64_t k) -> Status {
      auto r = node.get_local(t, k, row);
      if (!r.is_ok()) return r.status();
      if (*r) d += digest_of(t.id, k, row.data(), row.size());
      return Status();
    };
    if (lp->tree != nullptr) {
      std::vector<uint64_t> keys;
      std::vector<uint8_t> values;
      uint64_t start = 0;
      for (;;) {
        const bool end = lp->tree->scan(start, 4096, keys, values);
        for (uint64_t k : keys) DRTMX_RETURN_IF_ERROR(visit(k));
        if (end || keys.empty()) break;
        start = keys.back() + 1;
      }
    } else {  // hash tables: their keys are below these bounds
      const uint64_t bound = t.id == kCharge           ? uint64_t{kTradeTypes} << 2
                             : t.id == kCommissionRate ? uint64_t{4} << 12
                                                       : t.capacity;
      for (uint64_t k = 0; k < bound; ++k) DRTMX_RETURN_IF_ERROR(visit(k));
    }
  }
  return d & 0xffffff;
}

size_t sums_size(const Config& c) {
  return size_t{c.units()} * (kPerUnit + 2 * kTableCount) + 3;
}

}  // namespace

Result<UnitSums> check_unit(const StoreNode& node, const store::Catalog& cat, const Config& c,
                            uint32_t u) {
  return Checker(node, cat, c, u).run();
}

Result<std::vector<int64_t>> audit_node(const StoreNode& node, const store::Catalog& cat,
                                        const Config& c) {
  const uint32_t U = c.units();
  std::vector<int64_t> out(sums_size(c), 0);
  const TableSpec& ct = *cat.find(kCustomer);
  for (store::PartitionId p : cat.hosted(node.node(), ct)) {
    auto s = check_unit(node, cat, c, p);
    if (!s.is_ok()) return s.status();
    const bool primary = node.is_primary(ct, p);  // the live view (failover)
    int64_t* mine = &out[size_t{p} * kPerUnit];
    int64_t* tables = &out[size_t{U} * kPerUnit + size_t{p} * 2 * kTableCount];
    for (size_t t = 0; t < kTableCount; ++t)
      tables[2 * t + (primary ? 0 : 1)] += s->table_digest[t];
    if (primary) {
      mine[0] += s->pending;
      mine[1] += s->pending_hash;
      for (uint32_t v = 0; v < U; ++v) {
        out[size_t{v} * kPerUnit + 2] += s->requests_by_unit[v];
        out[size_t{v} * kPerUnit + 3] += s->requests_hash_by_unit[v];
      }
      mine[4] += s->added;
      mine[5] += s->completed;
      mine[6] += s->canceled;
    } else {
      mine[7] += 1;
    }
  }
  auto rd = replicated_digest(node, cat);
  if (!rd.is_ok()) return rd.status();
  out[out.size() - 3] = *rd;
  out[out.size() - 2] = *rd * *rd;
  out[out.size() - 1] = 1;
  return out;
}

Status check_sums(const Config& c, const std::vector<int64_t>& node_sums,
                  const std::vector<int64_t>& client_sums) {
  const uint32_t U = c.units();
  if (node_sums.size() != sums_size(c) || client_sums.size() != kClientSums)
    return internal_error("tpce: audit vectors of unexpected size");
  if (client_sums[kTradeIdsFull] > 0) {
    return exhausted("tpce: " + std::to_string(client_sums[kTradeIdsFull]) +
                     " Trade-Orders found their client's trade ids used up: the trade keys allow " +
                     std::to_string(trade_quota(c)) + " trades per client (" +
                     std::to_string(kTradeSeqBits) + "-bit sequence numbers, the first " +
                     std::to_string(c.initial_trades()) + " the initial trades')");
  }
  int64_t added = 0, completed = 0, canceled = 0;
  for (uint32_t u = 0; u < U; ++u) {
    const int64_t* s = &node_sums[size_t{u} * kPerUnit];
    if (s[0] != s[2] || s[1] != s[3]) {
      return internal_error(
          "tpce: consistency condition C8 (pending limit orders have exactly their TRADE_REQUEST "
          "rows) violated for the trades of unit " +
          std::to_string(u) + ": " + std::to_string(s[0]) + " pending trades, " +
          std::to_string(s[2]) + " TRADE_REQUEST rows" +
          (s[0] == s[2] ? " (with different fields)" : ""));
    }
    added += s[4];
    completed += s[5];
    canceled += s[6];
    const int64_t backups = c.backups(u);  // the copies left after a failover
    const int64_t* t = &node_sums[size_t{U} * kPerUnit + size_t{u} * 2 * kTableCount];
    if (s[7] != backups) {
      return internal_error("tpce: replication (C10): unit " + std::to_string(u) + " has " +
                            std::to_string(s[7]) + " backup copies, expected " +
                            std::to_string(backups));
    }
    for (size_t id = 1; id < kTableCount; ++id) {
      if (t[2 * id + 1] != backups * t[2 * id]) {
        return internal_error("tpce: replication (C10): the backup copies of unit " +
                              std::to_string(u) + " differ from its primary in table id " +
                              std::to_string(id));
      }
    }
  }
  const int64_t* r = &node_sums[node_sums.size() - 3];
  if (r[0] * r[0] != r[2] * r[1]) {
    return internal_error(
        "tpce: replication (C10): the replicated read-only tables differ between nodes");
  }
  if (added != client_sums[kOrdersCommitted] || completed != client_sums[kResultsCommitted] ||
      canceled != client_sums[kCanceledByCleanup]) {
    return internal_error(
        "tpce: consistency condition C9 (the run's trades match the committed transactions) "
        "violated: " +
        std::to_string(added) + " trades added vs " +
        std::to_string(client_sums[kOrdersCommitted]) + " Trade-Orders, " +
        std::to_string(completed) + " completed vs " +
        std::to_string(client_sums[kResultsCommitted]) + " Trade-Results, " +
        std::to_string(canceled) + " canceled vs " +
        std::to_string(client_sums[kCanceledByCleanup]) + " by Trade-Cleanup");
  }
  return Status();
}

}  // namespace drtmx::bench::tpce
