// TPC-E table specs (tpce_schema.h).
#include "tpce/tpce_schema.h"

#include <algorithm>

namespace drtmx::bench::tpce {

std::vector<store::TableSpec> table_specs(const Config& c) {
  const uint32_t U = c.units();
  // Capacities are the loaded rows per partition (at most; the tables grow
  // during the run): the initial trades of a unit, each with up to three
  // TRADE_HISTORY and HOLDING_HISTORY rows, a HOLDING, SETTLEMENT and
  // CASH_TRANSACTION row at most, and the pending ones of its incomplete
  // tail in TRADE_REQUEST.
  const uint64_t trades = c.initial_trades();
  const uint64_t requests = std::max<uint64_t>(1, c.incomplete_tail());
  const uint64_t accounts = uint64_t{kCustomersPerUnit} * kMaxAccountsPerCustomer;
  std::vector<store::TableSpec> ts;
  using store::PartitionScheme;
  using store::TableKind;
  auto base = [&](txn::TableId id, const char* name, TableKind kind, uint32_t value_size,
                  uint64_t capacity) -> store::TableSpec& {
    store::TableSpec t;
    t.id = id;
    t.name = name;
    t.kind = kind;
    t.value_size = value_size;
    t.capacity = capacity;
    ts.push_back(std::move(t));
    return ts.back();
  };
  // By customer: the unit in the key's top byte.
  auto by_unit = [&](txn::TableId id, const char* name, TableKind kind, uint32_t value_size,
                     uint64_t capacity) {
    store::TableSpec& t = base(id, name, kind, value_size, capacity);
    t.scheme = PartitionScheme::kFunction;
    t.partitions = U;
    t.partition_fn = [](uint64_t k) { return unit_of(k); };
    t.partition_prefix_bits = 8;  // the unit, bits 56..63 (scans stay in one)
  };
  // By security or company number: ranges of `per_unit` numbers << shift.
  auto by_range = [&](txn::TableId id, const char* name, TableKind kind, uint32_t value_size,
                      uint64_t capacity, uint64_t per_unit, int shift) {
    store::TableSpec& t = base(id, name, kind, value_size, capacity);
    t.scheme = U > 1 ? PartitionScheme::kRange : PartitionScheme::kFunction;
    t.partitions = U;
    if (U > 1) {
      for (uint32_t u = 1; u < U; ++u) t.range_bounds.push_back((u * per_unit) << shift);
    } else {
      t.partition_fn = [](uint64_t) { return 0u; };
    }
  };
  auto replicated = [&](txn::TableId id, const char* name, TableKind kind, uint32_t value_size,
                        uint64_t capacity) {
    base(id, name, kind, value_size, capacity).scheme = PartitionScheme::kReplicated;
  };
  const TableKind H = TableKind::kHash, O = TableKind::kOrdered;
  by_unit(kCustomer, "customer", H, sizeof(CustomerRow), kCustomersPerUnit);
  by_unit(kCustomerAccount, "customer_account", H, sizeof(CustomerAccountRow), accounts);
  by_unit(kAccountPermission, "account_permission", O, sizeof(AccountPermissionRow), 4 * accounts);
  by_unit(kCustomerTaxrate, "customer_taxrate", H, sizeof(CustomerTaxrateRow),
          2 * kCustomersPerUnit);
  by_unit(kWatchList, "watch_list", H, sizeof(WatchListRow), kCustomersPerUnit);
  by_unit(kWatchItem, "watch_item", O, sizeof(WatchItemRow), 150 * kCustomersPerUnit);
  by_unit(kBroker, "broker", H, sizeof(BrokerRow), kBrokersPerUnit);
  by_unit(kTrade, "trade", O, sizeof(TradeRow), trades);
  by_unit(kTradeHistory, "trade_history", O, sizeof(TradeHistoryRow), 3 * trades);
  by_unit(kSettlement, "settlement", H, sizeof(SettlementRow), trades);
  by_unit(kCashTransaction, "cash_transaction", H, sizeof(CashTransactionRow), trades);
  by_unit(kHolding, "holding", O, sizeof(HoldingRow), trades);
  by_unit(kHoldingSummary, "holding_summary", O, sizeof(HoldingSummaryRow), 14 * accounts);
  by_unit(kHoldingHistory, "holding_history", O, sizeof(HoldingHistoryRow), 3 * trades);
  by_unit(kAddress, "address", H, sizeof(AddressRow),
          kCustomersPerUnit + kCompaniesPerUnit + kExchanges);
  by_unit(kExchange, "exchange", H, sizeof(ExchangeRow), kExchanges);
  by_unit(kTradeByAccount, "trade_by_account", O, sizeof(IndexRow), trades);
  by_unit(kTradeBySecurity, "trade_by_security", O, sizeof(IndexRow), trades);
  by_unit(kTradeRequestBySector, "trade_request_by_sector", O, sizeof(IndexRow), requests);
  by_range(kSecurity, "security", H, sizeof(SecurityRow), kSecuritiesPerUnit, kSecuritiesPerUnit,
           0);
  by_range(kLastTrade, "last_trade", H, sizeof(LastTradeRow), kSecuritiesPerUnit,
           kSecuritiesPerUnit, 0);
  by_range(kDailyMarket, "daily_market", O, sizeof(DailyMarketRow),
           uint64_t{kSecuritiesPerUnit} * c.market_days, kSecuritiesPerUnit, 16);
  by_range(kTradeRequest, "trade_request", O, sizeof(TradeRequestRow), requests, kSecuritiesPerUnit,
           46);
  by_range(kCompany, "company", H, sizeof(CompanyRow), kCompaniesPerUnit, kCompaniesPerUnit, 0);
  by_range(kFinancial, "financial", O, sizeof(FinancialRow), 20 * kCompaniesPerUnit,
           kCompaniesPerUnit, 8);
  by_range(kNewsItem, "news_item", O, sizeof(NewsItemRow), 2 * kCompaniesPerUnit, kCompaniesPerUnit,
           4);
  replicated(kStatusType, "status_type", H, sizeof(StatusTypeRow), kStatusTypes);
  replicated(kTradeType, "trade_type", H, sizeof(TradeTypeRow), kTradeTypes);
  replicated(kSector, "sector", H, sizeof(SectorRow), kSectors);
  replicated(kIndustry, "industry", H, sizeof(IndustryRow), kIndustries);
  replicated(kCharge, "charge", H, sizeof(ChargeRow), 3 * kTradeTypes);
  replicated(kCommissionRate, "commission_rate", H, sizeof(CommissionRateRow), 240);
  replicated(kZipCode, "zip_code", H, sizeof(ZipCodeRow), kZipCodes);
  replicated(kCompanyCompetitor, "company_competitor", O, sizeof(CompanyCompetitorRow),
             uint64_t{3} * c.companies());
  replicated(kCompanyByIndustry, "company_by_industry", O, sizeof(IndexRow), c.companies());
  store::TableSpec& tx = base(kTaxrate, "taxrate", H, sizeof(TaxrateRow), kTaxrates);
  tx.scheme = PartitionScheme::kHashMod;
  tx.partitions = U;
  return ts;
}

}  // namespace drtmx::bench::tpce
