// TPC-E tables (clause 2.2): row structs with the specification's columns
// the transactions use, the table specs, and the 64-bit key encodings.
//
// Representation: identifiers are integers (a symbol, a name or a status id
// of the specification is the row's number; the text columns are kept for
// the rows' sizes and returned by the transactions); money is int64 cents;
// rates are int32 in 1/10000 (percent x 100); times are int64 milliseconds.
//
// Partitioning (partition = load unit of 1 000 customers; its primary is
// node unit % nodes):
// * By customer (kFunction: the unit is the key's top byte, bits 56..63):
//   CUSTOMER, CUSTOMER_ACCOUNT, ACCOUNT_PERMISSION, CUSTOMER_TAXRATE,
//   WATCH_LIST, WATCH_ITEM, BROKER (a unit's accounts have its brokers),
//   TRADE, TRADE_HISTORY, SETTLEMENT, CASH_TRANSACTION, HOLDING,
//   HOLDING_SUMMARY, HOLDING_HISTORY, ADDRESS, EXCHANGE (unit 0), and the
//   indexes TRADE_BY_ACCOUNT, TRADE_BY_SECURITY (a unit's trades of one
//   security) and TRADE_REQUEST_BY_SECTOR (a unit's pending limit orders
//   by sector and broker, for Broker-Volume).
// * Range-partitioned by security or company number (kRange, bounds at
//   every 685 securities / 500 companies, so a unit's market data is on
//   the same node as its customers): SECURITY, LAST_TRADE, DAILY_MARKET,
//   TRADE_REQUEST (pending limit orders by security, for Market-Feed),
//   COMPANY, FINANCIAL, NEWS_ITEM (NEWS_XREF is its key: company, item).
// * Replicated read-only on every node (kReplicated; never written after
//   the load): STATUS_TYPE, TRADE_TYPE, SECTOR, INDUSTRY, CHARGE,
//   COMMISSION_RATE, ZIP_CODE, COMPANY_COMPETITOR and the index
//   COMPANY_BY_INDUSTRY (Market-Watch's industry path).
// * TAXRATE (320 rows; Data-Maintenance writes TX_NAME): hashed over the
//   partitions (kHashMod).
//
// Secondary indexes are ordered tables of their own whose value is the base
// row's key (not catalog indexes: some are partitioned unlike their base
// table); the transactions that write a base row write its index rows in
// the same transaction, and the checks compare them row for row.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "store/catalog.h"
#include "tpce/tpce_config.h"
#include "txn/txn.h"

namespace drtmx::bench::tpce {

// Table ids.
enum : txn::TableId {
  kCustomer = 1,
  kCustomerAccount,
  kAccountPermission,
  kCustomerTaxrate,
  kWatchList,
  kWatchItem,
  kBroker,
  kTrade,
  kTradeHistory,
  kSettlement,
  kCashTransaction,
  kHolding,
  kHoldingSummary,
  kHoldingHistory,
  kAddress,
  kExchange,
  kTradeByAccount,
  kTradeBySecurity,
  kTradeRequestBySector,
  kSecurity,
  kLastTrade,
  kDailyMarket,
  kTradeRequest,
  kCompany,
  kFinancial,
  kNewsItem,
  kStatusType,
  kTradeType,
  kSector,
  kIndustry,
  kCharge,
  kCommissionRate,
  kTaxrate,
  kZipCode,
  kCompanyCompetitor,
  kCompanyByIndustry,
  kTableCount  // one past the last id
};

// STATUS_TYPE (ST_ID as a number; the TRADE_HISTORY key carries it):
// completed, active, submitted, pending, canceled.
enum StatusId : uint8_t { kCmpt = 0, kActv = 1, kSbmt = 2, kPndg = 3, kCncl = 4 };
constexpr int kStatusTypes = 5;
// TRADE_TYPE: market buy, market sell, stop-loss, limit sell, limit buy.
enum TradeTypeId : uint8_t { kTMB = 0, kTMS = 1, kTSL = 2, kTLS = 3, kTLB = 4 };
constexpr int kTradeTypes = 5;
constexpr bool type_is_sell(uint8_t tt) {
  return tt == kTMS || tt == kTSL || tt == kTLS;
}
constexpr bool type_is_market(uint8_t tt) {
  return tt == kTMB || tt == kTMS;
}
constexpr uint32_t kExchanges = 4, kSectors = 12, kIndustries = 102, kZipCodes = 14741,
                   kTaxrates = 320, kMaxAccountsPerCustomer = 10;

// Rows have no implicit padding (explicit pad_ members, zero in every
// value- or aggregate-initialized row; static_asserts below), so every
// copy of a row is the same bytes (the checks compare copies by digest).
struct CustomerRow {
  uint64_t c_id;  // customer number
  char c_tax_id[20];
  uint8_t c_st_id;
  char c_l_name[25];
  char c_f_name[20];
  char c_m_name;
  char c_gndr;
  uint8_t c_tier;  // 1, 2, 3
  uint8_t pad_0[3];
  int64_t c_dob;
  uint64_t c_ad_id;  // ADDRESS key
  char c_phone[3][16];
  char c_email_1[50];
  char c_email_2[50];
  uint8_t c_accounts;  // CUSTOMER_ACCOUNT rows (accounts c*16 .. c*16 + n - 1)
  uint8_t pad_1[3];
};
struct CustomerAccountRow {
  uint64_t ca_id;
  uint32_t ca_b_id;  // broker number
  uint8_t pad_0[4];
  uint64_t ca_c_id;
  char ca_name[50];
  uint8_t ca_tax_st;  // 0, 1, 2
  uint8_t pad_1[5];
  int64_t ca_bal;  // cents
};
struct AccountPermissionRow {
  uint64_t ap_ca_id;
  char ap_acl[4];
  char ap_tax_id[20];
  char ap_l_name[25];
  char ap_f_name[20];
  uint8_t pad_0[3];
};
struct CustomerTaxrateRow {
  uint32_t cx_tx_id;  // TAXRATE number
};
struct WatchListRow {
  uint64_t wl_c_id;
  uint16_t items;
  uint8_t pad_0[6];
};
struct WatchItemRow {
  uint32_t wi_s;  // security number
};
struct BrokerRow {
  uint32_t b_id;
  uint8_t b_st_id;
  char b_name[49];
  uint8_t pad_0[2];
  int64_t b_num_trades;
  int64_t b_comm_total;  // cents
};
struct TradeRow {
  uint64_t t_id;  // trade key
  int64_t t_dts;
  uint8_t t_st_id;
  uint8_t t_tt_id;
  uint8_t t_is_cash;
  uint8_t t_lifo;
  uint32_t t_s;  // security number
  int32_t t_qty;
  uint8_t pad_0[4];
  int64_t t_bid_price;
  uint64_t t_ca_id;
  char t_exec_name[49];
  uint8_t pad_1[7];
  int64_t t_trade_price;  // 0 until completed
  int64_t t_chrg;
  int64_t t_comm;
  int64_t t_tax;
};
struct TradeHistoryRow {
  int64_t th_dts;
};
struct SettlementRow {
  char se_cash_type[40];
  int64_t se_cash_due_date;
  int64_t se_amt;
};
struct CashTransactionRow {
  int64_t ct_dts;
  int64_t ct_amt;
  char ct_name[100];
  uint8_t pad_0[4];
};
struct HoldingRow {
  uint64_t h_t_id;  // the trade that opened it
  int64_t h_dts;
  int64_t h_price;
  int32_t h_qty;  // negative: short
  uint8_t pad_0[4];
};
struct HoldingSummaryRow {
  int32_t hs_qty;
  uint32_t hs_next;  // the next holding sequence number of (account, security)
};
struct HoldingHistoryRow {
  uint64_t hh_h_t_id;
  int32_t hh_before_qty;
  int32_t hh_after_qty;
};
struct AddressRow {
  char ad_line1[80];
  char ad_line2[80];
  uint32_t ad_zc;  // ZIP_CODE number
  char ad_ctry[80];
};
struct ExchangeRow {
  char ex_name[100];
  uint32_t ex_num_symb;
  uint16_t ex_open, ex_close;
  char ex_desc[150];
  uint8_t pad_0[6];
  uint64_t ex_ad_id;
};
struct IndexRow {
  uint64_t key;  // the base row's key
};
struct TradeRequestRow {
  uint64_t tr_t_id;  // trade key
  int64_t tr_bid_price;
  int64_t tr_dts;  // when it was placed (Trade-Cleanup ages)
  uint32_t tr_s;
  int32_t tr_qty;
  uint32_t tr_b_id;
  uint8_t tr_tt_id;
  uint8_t pad_0[3];
};
struct SecurityRow {
  uint32_t s_num;
  char s_symb[15];
  char s_issue[6];
  uint8_t s_st_id;
  char s_name[70];
  uint8_t s_ex_id;
  uint8_t pad_0[3];
  uint32_t s_co_id;  // company number
  int64_t s_num_out;
  int64_t s_start_date, s_exch_date;
  int64_t s_pe;  // x100
  int64_t s_52wk_high, s_52wk_low;
  int64_t s_dividend, s_yield;
};
struct LastTradeRow {
  int64_t lt_dts;
  int64_t lt_price;
  int64_t lt_open_price;
  int64_t lt_vol;
};
struct DailyMarketRow {
  int64_t dm_date;
  int64_t dm_close, dm_high, dm_low;
  int64_t dm_vol;
};
struct CompanyRow {
  uint32_t co_id;
  uint8_t co_st_id;
  char co_name[60];
  uint8_t co_in_id;  // industry number
  char co_sp_rate[4];
  char co_ceo[46];
  uint8_t pad_0[4];
  uint64_t co_ad_id;
  char co_desc[150];
  uint8_t pad_1[2];
  int64_t co_open_date;
};
struct FinancialRow {
  int16_t fi_year;
  uint8_t fi_qtr;
  uint8_t pad_0[5];
  int64_t fi_revenue, fi_net_earn, fi_basic_eps, fi_dilut_eps, fi_margin, fi_inventory, fi_assets,
      fi_liability, fi_out_basic, fi_out_dilut;
};
struct NewsItemRow {
  char ni_headline[80];
  char ni_summary[255];
  char ni_item[512];  // the specification's is up to 100 000 bytes (a BLOB)
  uint8_t pad_0[1];
  int64_t ni_dts;
  char ni_source[30];
  char ni_author[30];
  uint8_t pad_1[4];
};
struct StatusTypeRow {
  char st_name[10];
};
struct TradeTypeRow {
  char tt_name[12];
  uint8_t tt_is_sell, tt_is_mrkt;
};
struct SectorRow {
  char sc_name[30];
};
struct IndustryRow {
  char in_name[50];
  uint8_t in_sc_id;
};
struct ChargeRow {
  int64_t ch_chrg;  // cents
};
struct CommissionRateRow {
  int32_t cr_rate;  // percent x 100
};
struct TaxrateRow {
  char tx_name[50];
  uint8_t pad_0[2];
  int32_t tx_rate;  // 1/100000
};
struct ZipCodeRow {
  char zc_town[80];
  char zc_div[80];
};
struct CompanyCompetitorRow {
  uint32_t cp_comp_co_id;
  uint8_t cp_in_id;
  uint8_t pad_0[3];
};

// No padding bits anywhere (every byte of a row is a member).
static_assert(std::has_unique_object_representations_v<CustomerRow>);
static_assert(std::has_unique_object_representations_v<CustomerAccountRow>);
static_assert(std::has_unique_object_representations_v<AccountPermissionRow>);
static_assert(std::has_unique_object_representations_v<CustomerTaxrateRow>);
static_assert(std::has_unique_object_representations_v<WatchListRow>);
static_assert(std::has_unique_object_representations_v<WatchItemRow>);
static_assert(std::has_unique_object_representations_v<BrokerRow>);
static_assert(std::has_unique_object_representations_v<TradeRow>);
static_assert(std::has_unique_object_representations_v<TradeHistoryRow>);
static_assert(std::has_unique_object_representations_v<SettlementRow>);
static_assert(std::has_unique_object_representations_v<CashTransactionRow>);
static_assert(std::has_unique_object_representations_v<HoldingRow>);
static_assert(std::has_unique_object_representations_v<HoldingSummaryRow>);
static_assert(std::has_unique_object_representations_v<HoldingHistoryRow>);
static_assert(std::has_unique_object_representations_v<AddressRow>);
static_assert(std::has_unique_object_representations_v<ExchangeRow>);
static_assert(std::has_unique_object_representations_v<IndexRow>);
static_assert(std::has_unique_object_representations_v<TradeRequestRow>);
static_assert(std::has_unique_object_representations_v<SecurityRow>);
static_assert(std::has_unique_object_representations_v<LastTradeRow>);
static_assert(std::has_unique_object_representations_v<DailyMarketRow>);
static_assert(std::has_unique_object_representations_v<CompanyRow>);
static_assert(std::has_unique_object_representations_v<FinancialRow>);
static_assert(std::has_unique_object_representations_v<NewsItemRow>);
static_assert(std::has_unique_object_representations_v<StatusTypeRow>);
static_assert(std::has_unique_object_representations_v<TradeTypeRow>);
static_assert(std::has_unique_object_representations_v<SectorRow>);
static_assert(std::has_unique_object_representations_v<IndustryRow>);
static_assert(std::has_unique_object_representations_v<ChargeRow>);
static_assert(std::has_unique_object_representations_v<CommissionRateRow>);
static_assert(std::has_unique_object_representations_v<TaxrateRow>);
static_assert(std::has_unique_object_representations_v<ZipCodeRow>);
static_assert(std::has_unique_object_representations_v<CompanyCompetitorRow>);

// Key encodings. Customer-partitioned keys carry the unit in bits 56..63.
// A trade number (t_num, 38 bits) is seq << 12 | slot: slot 0 is the
// loader (seq 0 .. initial_trades - 1, in time order), slot i + 1 the
// client of coroutine index i (seq from initial_trades on), so trade
// numbers grow with time within a unit. The trade tables grow as trades
// arrive; these bits are their only bound: each client may add trades
// with seq initial_trades .. 2^26 - 1 (its own slot, in any unit), the
// loader's slot holds the initial trades (trade_quota, tpce_client.h).
constexpr uint64_t unit_bits(uint32_t u) {
  return uint64_t{u} << 56;
}
constexpr uint32_t unit_of(uint64_t key) {
  return static_cast<uint32_t>(key >> 56);
}
constexpr uint32_t kTradeSlotBits = 12;  // slot 0 = the loader, 1 .. 4094 = clients
constexpr uint32_t kTradeSeqBits = 26;
constexpr uint32_t kTradeSeqs = 1u << kTradeSeqBits;  // sequence numbers per slot
constexpr uint64_t kTNumMask = (uint64_t{1} << (kTradeSeqBits + kTradeSlotBits)) - 1;
constexpr uint64_t t_num(uint32_t seq, uint32_t slot) {
  return uint64_t{seq} << kTradeSlotBits | slot;
}
constexpr uint32_t customer_unit(uint64_t c) {
  return static_cast<uint32_t>(c / kCustomersPerUnit);
}
constexpr uint64_t customer_key(uint64_t c) {
  return unit_bits(customer_unit(c)) | c;
}
// Account numbers: customer * 16 + 0 .. accounts - 1.
constexpr uint64_t account_of(uint64_t c, uint32_t j) {
  return c * 16 + j;
}
constexpr uint64_t account_customer(uint64_t ca) {
  return ca / 16;
}
constexpr uint32_t account_unit(uint64_t ca) {
  return customer_unit(ca / 16);
}
constexpr uint64_t account_local(uint64_t ca) {  // 14 bits
  return (ca / 16 % kCustomersPerUnit) * 16 + ca % 16;
}
constexpr uint64_t account_key(uint64_t ca) {
  return unit_bits(account_unit(ca)) | ca;
}
constexpr uint64_t account_permission_key(uint64_t ca, uint32_t k) {
  return unit_bits(account_unit(ca)) | ca << 2 | k;
}
constexpr uint64_t customer_taxrate_key(uint64_t c, uint32_t k) {
  return unit_bits(customer_unit(c)) | c << 1 | k;
}
constexpr uint64_t watch_list_key(uint64_t c) {
  return customer_key(c);
}
constexpr uint64_t watch_item_key(uint64_t c, uint32_t s) {
  return unit_bits(customer_unit(c)) | (c % kCustomersPerUnit) << 18 | s;
}
constexpr uint64_t broker_key(uint32_t b) {
  return unit_bits(b / kBrokersPerUnit) | b;
}
constexpr uint64_t trade_key(uint32_t u, uint64_t tn) {
  return unit_bits(u) | tn;
}
constexpr uint64_t trade_num(uint64_t trade) {
  return trade & kTNumMask;
}
// An account's trades newest first (the trade number inverted).
constexpr uint64_t trade_by_account_key(uint64_t ca, uint64_t tn) {
  return unit_bits(account_unit(ca)) | account_local(ca) << 38 | (kTNumMask - tn);
}
constexpr uint64_t trade_by_security_key(uint32_t u, uint32_t s, uint64_t tn) {
  return unit_bits(u) | uint64_t{s} << 38 | tn;
}
constexpr uint64_t trade_history_key(uint64_t trade, uint8_t st) {
  return unit_bits(unit_of(trade)) | trade_num(trade) << 3 | st;
}
constexpr uint64_t holding_key(uint64_t ca, uint32_t s, uint32_t seq) {
  return unit_bits(account_unit(ca)) | account_local(ca) << 42 | uint64_t{s} << 24 | seq;
}
constexpr uint64_t holding_summary_key(uint64_t ca, uint32_t s) {
  return unit_bits(account_unit(ca)) | account_local(ca) << 18 | s;
}
constexpr uint64_t holding_history_key(uint64_t trade, uint32_t k) {
  return unit_bits(unit_of(trade)) | trade_num(trade) << 8 | k;
}
constexpr uint64_t customer_address_key(uint64_t c) {
  return unit_bits(customer_unit(c)) | c << 1;
}
constexpr uint64_t company_address_key(uint32_t co) {
  return unit_bits(co / kCompaniesPerUnit) | uint64_t{co} << 1 | 1;
}
constexpr uint64_t exchange_key(uint32_t ex) {
  return ex;  // unit 0
}
constexpr uint64_t exchange_address_key(uint32_t ex) {
  return uint64_t{1} << 40 | ex;  // unit 0
}
constexpr uint64_t tr_by_sector_key(uint32_t u, uint32_t sector, uint32_t b, uint64_t tn) {
  return unit_bits(u) | uint64_t{sector} << 42 | uint64_t{b % kBrokersPerUnit} << 38 | tn;
}
// Range-partitioned market tables: the security or company number leads.
constexpr uint64_t security_key(uint32_t s) {
  return s;
}
constexpr uint64_t daily_market_key(uint32_t s, uint32_t day) {
  return uint64_t{s} << 16 | day;
}
constexpr uint64_t trade_request_key(uint32_t s, uint64_t trade) {
  return uint64_t{s} << 46 | uint64_t{unit_of(trade)} << 38 | trade_num(trade);
}
constexpr uint64_t trade_of_request_key(uint64_t k) {
  return unit_bits((k >> 38) & 0xff) | (k & kTNumMask);
}
constexpr uint64_t company_key(uint32_t co) {
  return co;
}
constexpr uint64_t financial_key(uint32_t co, uint32_t q) {
  return uint64_t{co} << 8 | q;
}
constexpr uint64_t news_key(uint32_t co, uint32_t k) {
  return uint64_t{co} << 4 | k;
}
constexpr uint64_t company_competitor_key(uint32_t co, uint32_t k) {
  return uint64_t{co} << 2 | k;
}
constexpr uint64_t company_by_industry_key(uint32_t in, uint32_t co) {
  return uint64_t{in} << 32 | co;
}
constexpr uint64_t charge_key(uint8_t tt, uint8_t tier) {
  return uint64_t{tt} << 2 | tier;
}
// COMMISSION_RATE: (tier, trade type, exchange, quantity band) — 3 x 5 x 4
// x 4 = 240 rows; bands start at 0, 200, 400, 800 shares.
constexpr uint64_t commission_rate_key(uint8_t tier, uint8_t tt, uint8_t ex, uint8_t band) {
  return uint64_t{tier} << 12 | uint64_t{tt} << 8 | uint64_t{ex} << 4 | band;
}
constexpr uint8_t quantity_band(int32_t qty) {
  return qty < 200 ? 0 : qty < 400 ? 1 : qty < 800 ? 2 : 3;
}

// Securities of a unit: 685 numbered u * 685 + k; company of security k of
// unit u is u * 500 + k % 500 (companies 0 .. 184 of a unit issue two).
constexpr uint32_t security_company(uint32_t s) {
  return s / kSecuritiesPerUnit * kCompaniesPerUnit + s % kSecuritiesPerUnit % kCompaniesPerUnit;
}
constexpr uint32_t company_securities(uint32_t co) {
  return co % kCompaniesPerUnit < kSecuritiesPerUnit - kCompaniesPerUnit ? 2 : 1;
}
constexpr uint32_t company_security(uint32_t co, uint32_t issue) {
  return co / kCompaniesPerUnit * kSecuritiesPerUnit + co % kCompaniesPerUnit +
         issue * kCompaniesPerUnit;
}

// Every table spec for `c`.
std::vector<store::TableSpec> table_specs(const Config& c);

}  // namespace drtmx::bench::tpce
