// TPC-E data generator (tpce_gen.h).
#include "tpce/tpce_gen.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

namespace drtmx::bench::tpce {

Rng::Rng(uint64_t seed) : s_(seed ? seed : 0x9E3779B97F4A7C15ull) {}

uint64_t Rng::next() {
  s_ ^= s_ >> 12;
  s_ ^= s_ << 25;
  s_ ^= s_ >> 27;
  return s_ * 0x2545F4914F6CDD1Dull;
}

uint64_t Rng::uniform(uint64_t lo, uint64_t hi) {
  return lo + next() % (hi - lo + 1);
}

uint64_t mix64(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint32_t company_industry(uint64_t seed, uint32_t co) {
  return static_cast<uint32_t>(mix64(seed ^ 0x11, co) % kIndustries);
}
uint32_t industry_sector(uint32_t in) {
  return in % kSectors;
}
uint32_t security_exchange(uint64_t seed, uint32_t s) {
  return static_cast<uint32_t>(mix64(seed ^ 0x22, s) % kExchanges);
}
int64_t security_base_price(uint64_t seed, uint32_t s) {
  return 1000 + static_cast<int64_t>(mix64(seed ^ 0x33, s) % 9001);
}
int64_t account_base_balance(uint64_t seed, uint64_t ca) {
  return 1000000 + static_cast<int64_t>(mix64(seed ^ 0x44, ca) % 99000000);
}
uint8_t customer_tier(uint64_t seed, uint64_t c) {
  const uint64_t t = mix64(seed ^ 0x66, c) % 100;
  return t < 20 ? 1 : t < 80 ? 2 : 3;
}
uint32_t customer_accounts(uint64_t seed, uint64_t c) {
  static const uint32_t kMin[] = {0, 1, 2, 5}, kMax[] = {0, 4, 8, 10};
  const uint8_t tier = customer_tier(seed, c);
  return kMin[tier] + static_cast<uint32_t>(mix64(seed ^ 0x77, c) % (kMax[tier] - kMin[tier] + 1));
}
std::vector<uint32_t> account_basket(uint64_t seed, uint64_t ca, uint32_t securities) {
  Rng r(mix64(seed ^ 0x55, ca));
  const uint32_t n = std::min<uint32_t>(securities, static_cast<uint32_t>(r.uniform(6, 14)));
  std::vector<uint32_t> b;
  while (b.size() < n) {
    const auto s = static_cast<uint32_t>(r.uniform(0, securities - 1));
    if (std::find(b.begin(), b.end(), s) == b.end()) b.push_back(s);
  }
  return b;
}
int64_t charge_of(uint8_t tt, uint8_t tier) {
  return (4 - int64_t{tier}) * 500 + int64_t{tt} * 100;
}
int32_t commission_rate_of(uint8_t tier, uint8_t tt, uint8_t ex, uint8_t band) {
  return 10 + (3 - tier) * 10 + (3 - band) * 5 + ex + (type_is_market(tt) ? 0 : 5);
}
int64_t settlement_amount(bool sell, int32_t qty, int64_t price, int64_t chrg, int64_t comm,
                          int64_t tax) {
  const int64_t value = int64_t{qty} * price;
  return sell ? value - chrg - comm - tax : -(value + chrg + comm);
}
int32_t taxrate_of(uint32_t tx) {  // 1/100000: 0 .. 10 %
  return static_cast<int32_t>(tx * 10000 / kTaxrates);
}

void set_text(char* dst, size_t size, const std::string& s) {
  std::memset(dst, 0, size);
  std::memcpy(dst, s.data(), std::min(size, s.size()));
}
std::string text(const char* src, size_t size) {
  size_t n = 0;
  while (n < size && src[n] != '\0') ++n;
  return std::string(src, n);
}

namespace {

template <typename Row>
Status put(const Sink& sink, txn::TableId t, uint64_t key, const Row& row) {
  return sink(t, key, &row, sizeof row);
}

void word(Rng& r, char* dst, size_t size, size_t lo, size_t hi) {
  static const char* kSyl[] = {"BAR",   "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY",
                               "ATION", "EING",  "KON",  "DU",  "MER",  "SAL", "TIN",  "VOR"};
  std::string s;
  const size_t n = r.uniform(lo, hi);
  while (s.size() < n) s += kSyl[r.uniform(0, 15)];
  s.resize(std::min(n, size));
  set_text(dst, size, s);
}

void address(Rng& r, AddressRow* a) {
  word(r, a->ad_line1, sizeof a->ad_line1, 10, 40);
  word(r, a->ad_line2, sizeof a->ad_line2, 0, 20);
  a->ad_zc = static_cast<uint32_t>(r.uniform(0, kZipCodes - 1));
  set_text(a->ad_ctry, sizeof a->ad_ctry, "USA");
}

// One open holding of (account, security) during the simulation.
struct Hold {
  uint32_t seq;
  uint64_t trade;
  int64_t dts, price;
  int32_t qty;
};
struct Holdings {
  int32_t qty = 0;
  uint32_t next = 0;
  std::deque<Hold> open;  // by seq
};
struct Account {
  uint64_t ca;
  uint32_t broker;
  uint8_t tier, tax_st;
  uint32_t tax[2];
  int64_t bal;
  std::vector<uint32_t> basket;
  std::string exec_name;
};

// Applies a completed trade to the holdings (Trade-Result frame 2 rules):
// reduces the opposite-signed holdings in FIFO or LIFO order, opens one for
// what remains; HOLDING_HISTORY rows through `hh`. Returns the cost basis of
// the shares a sell closed (for the tax).
int64_t apply(Holdings& h, uint64_t trade, int64_t dts, bool sell, bool lifo, int32_t qty,
              int64_t price, const std::function<void(uint64_t, int32_t, int32_t)>& hh) {
  int32_t needed = qty;
  int64_t basis = 0;
  const bool closing = sell ? h.qty > 0 : h.qty < 0;
  while (closing && needed > 0 && !h.open.empty()) {
    Hold& o = lifo ? h.open.back() : h.open.front();
    const int32_t have = o.qty < 0 ? -o.qty : o.qty;
    const int32_t take = std::min(have, needed);
    const int32_t after = o.qty < 0 ? o.qty + take : o.qty - take;
    hh(o.trade, o.qty, after);
    basis += int64_t{take} * o.price;
    needed -= take;
    if (after == 0) {
      if (lifo) {
        h.open.pop_back();
      } else {
        h.open.pop_front();
      }
    } else {
      o.qty = after;
    }
  }
  if (needed > 0) {
    const int32_t q = sell ? -needed : needed;
    hh(trade, 0, q);
    h.open.push_back({h.next++, trade, dts, price, q});
  }
  h.qty += sell ? -qty : qty;
  return basis;
}

}  // namespace

Status generate_fixed(const Config& c, const Sink& sink) {
  static const char* kStatus[] = {"Completed", "Active", "Submitted", "Pending", "Canceled"};
  for (uint8_t i = 0; i < kStatusTypes; ++i) {
    StatusTypeRow r{};
    set_text(r.st_name, sizeof r.st_name, kStatus[i]);
    DRTMX_RETURN_IF_ERROR(put(sink, kStatusType, i, r));
  }
  static const char* kTypes[] = {"Market-Buy", "Market-Sell", "Stop-Loss", "Limit-Sell",
                                 "Limit-Buy"};
  for (uint8_t i = 0; i < kTradeTypes; ++i) {
    TradeTypeRow r{};
    set_text(r.tt_name, sizeof r.tt_name, kTypes[i]);
    r.tt_is_sell = type_is_sell(i);
    r.tt_is_mrkt = type_is_market(i);
    DRTMX_RETURN_IF_ERROR(put(sink, kTradeType, i, r));
    for (uint8_t tier = 1; tier <= 3; ++tier) {
      DRTMX_RETURN_IF_ERROR(put(sink, kCharge, charge_key(i, tier), ChargeRow{charge_of(i, tier)}));
      for (uint8_t ex = 0; ex < kExchanges; ++ex) {
        for (uint8_t band = 0; band < 4; ++band) {
          DRTMX_RETURN_IF_ERROR(put(sink, kCommissionRate, commission_rate_key(tier, i, ex, band),
                                    CommissionRateRow{commission_rate_of(tier, i, ex, band)}));
        }
      }
    }
  }
  Rng r(mix64(c.seed, 0xF1));
  for (uint32_t i = 0; i < kSectors; ++i) {
    SectorRow s{};
    word(r, s.sc_name, sizeof s.sc_name, 6, 30);
    DRTMX_RETURN_IF_ERROR(put(sink, kSector, i, s));
  }
  for (uint32_t i = 0; i < kIndustries; ++i) {
    IndustryRow in{};
    word(r, in.in_name, sizeof in.in_name, 6, 50);
    in.in_sc_id = static_cast<uint8_t>(industry_sector(i));
    DRTMX_RETURN_IF_ERROR(put(sink, kIndustry, i, in));
  }
  for (uint32_t i = 0; i < kZipCodes; ++i) {
    ZipCodeRow z{};
    word(r, z.zc_town, sizeof z.zc_town, 6, 30);
    word(r, z.zc_div, sizeof z.zc_div, 2, 10);
    DRTMX_RETURN_IF_ERROR(put(sink, kZipCode, i, z));
  }
  for (uint32_t i = 0; i < kTaxrates; ++i) {
    TaxrateRow t{};
    word(r, t.tx_name, sizeof t.tx_name, 10, 50);
    t.tx_rate = taxrate_of(i);
    DRTMX_RETURN_IF_ERROR(put(sink, kTaxrate, i, t));
  }
  // Competitors (3 distinct other companies) and the industry index.
  const uint32_t C = c.companies();
  for (uint32_t co = 0; co < C; ++co) {
    Rng cr(mix64(c.seed ^ 0xC0, co));
    uint32_t picked[3] = {co, co, co};
    for (uint32_t k = 0; k < 3 && C > 3; ++k) {
      uint32_t other;
      do {
        other = static_cast<uint32_t>(cr.uniform(0, C - 1));
      } while (other == co || std::count(picked, picked + k, other) > 0);
      picked[k] = other;
      CompanyCompetitorRow row{.cp_comp_co_id = other,
                               .cp_in_id = static_cast<uint8_t>(company_industry(c.seed, other)),
                               .pad_0 = {}};
      DRTMX_RETURN_IF_ERROR(put(sink, kCompanyCompetitor, company_competitor_key(co, k), row));
    }
    DRTMX_RETURN_IF_ERROR(put(sink, kCompanyByIndustry,
                              company_by_industry_key(company_industry(c.seed, co), co),
                              IndexRow{company_key(co)}));
  }
  return Status();
}

Status generate_unit(const Config& c, uint32_t u, const Sink& sink) {
  const uint64_t seed = c.seed;
  // Exchanges (unit 0).
  if (u == 0) {
    static const char* kEx[] = {"NYSE", "NASDAQ", "AMEX", "PCX"};
    Rng r(mix64(seed, 0xE0));
    for (uint32_t ex = 0; ex < kExchanges; ++ex) {
      ExchangeRow e{};
      set_text(e.ex_name, sizeof e.ex_name, kEx[ex]);
      e.ex_num_symb = 0;
      for (uint32_t s = 0; s < c.securities(); ++s)
        e.ex_num_symb += security_exchange(seed, s) == ex;
      e.ex_open = 930;
      e.ex_close = 1600;
      word(r, e.ex_desc, sizeof e.ex_desc, 20, 150);
      e.ex_ad_id = exchange_address_key(ex);
      DRTMX_RETURN_IF_ERROR(put(sink, kExchange, exchange_key(ex), e));
      AddressRow a{};
      address(r, &a);
      DRTMX_RETURN_IF_ERROR(put(sink, kAddress, exchange_address_key(ex), a));
    }
  }
  // Companies, their financials and news.
  for (uint32_t k = 0; k < kCompaniesPerUnit; ++k) {
    const uint32_t co = u * kCompaniesPerUnit + k;
    Rng r(mix64(seed ^ 0xA0, co));
    CompanyRow row{};
    row.co_id = co;
    row.co_st_id = kActv;
    word(r, row.co_name, sizeof row.co_name, 8, 60);
    row.co_in_id = static_cast<uint8_t>(company_industry(seed, co));
    set_text(row.co_sp_rate, sizeof row.co_sp_rate, r.percent(50) ? "AAA" : "BBB");
    word(r, row.co_ceo, sizeof row.co_ceo, 8, 46);
    row.co_ad_id = company_address_key(co);
    word(r, row.co_desc, sizeof row.co_desc, 20, 150);
    row.co_open_date = kLoadTime - static_cast<int64_t>(r.uniform(1, 50)) * 31536000000;
    DRTMX_RETURN_IF_ERROR(put(sink, kCompany, company_key(co), row));
    AddressRow a{};
    address(r, &a);
    DRTMX_RETURN_IF_ERROR(put(sink, kAddress, company_address_key(co), a));
    for (uint32_t q = 0; q < 20; ++q) {
      FinancialRow f{};
      f.fi_year = static_cast<int16_t>(2021 + q / 4);
      f.fi_qtr = static_cast<uint8_t>(q % 4 + 1);
      f.fi_revenue = static_cast<int64_t>(r.uniform(100000, 100000000000));
      f.fi_net_earn = f.fi_revenue / static_cast<int64_t>(r.uniform(5, 50));
      f.fi_basic_eps = static_cast<int64_t>(r.uniform(1, 1000));
      f.fi_dilut_eps = f.fi_basic_eps - 1;
      f.fi_margin = static_cast<int64_t>(r.uniform(0, 10000));
      f.fi_inventory = static_cast<int64_t>(r.uniform(0, 10000000000));
      f.fi_assets = static_cast<int64_t>(r.uniform(100000, 100000000000));
      f.fi_liability = f.fi_assets / 2;
      f.fi_out_basic = static_cast<int64_t>(r.uniform(1000000, 9000000000));
      f.fi_out_dilut = f.fi_out_basic;
      DRTMX_RETURN_IF_ERROR(put(sink, kFinancial, financial_key(co, q), f));
    }
    for (uint32_t n = 0; n < 2; ++n) {
      NewsItemRow ni{};
      word(r, ni.ni_headline, sizeof ni.ni_headline, 20, 80);
      word(r, ni.ni_summary, sizeof ni.ni_summary, 50, 255);
      word(r, ni.ni_item, sizeof ni.ni_item, 200, 512);
      ni.ni_dts = kLoadTime - static_cast<int64_t>(r.uniform(1, 1000)) * 86400000;
      word(r, ni.ni_source, sizeof ni.ni_source, 5, 30);
      word(r, ni.ni_author, sizeof ni.ni_author, 5, 30);
      DRTMX_RETURN_IF_ERROR(put(sink, kNewsItem, news_key(co, n), ni));
    }
  }
  // Securities, last trades and market history.
  for (uint32_t k = 0; k < kSecuritiesPerUnit; ++k) {
    const uint32_t s = u * kSecuritiesPerUnit + k;
    Rng r(mix64(seed ^ 0xB0, s));
    const int64_t price = security_base_price(seed, s);
    SecurityRow row{};
    row.s_num = s;
    set_text(row.s_symb, sizeof row.s_symb, "S" + std::to_string(s));
    set_text(row.s_issue, sizeof row.s_issue, k < kCompaniesPerUnit ? "COMMON" : "PREF_A");
    row.s_st_id = kActv;
    word(r, row.s_name, sizeof row.s_name, 10, 70);
    row.s_ex_id = static_cast<uint8_t>(security_exchange(seed, s));
    row.s_co_id = security_company(s);
    row.s_num_out = static_cast<int64_t>(r.uniform(4000000, 9500000000));
    row.s_start_date = kLoadTime - static_cast<int64_t>(r.uniform(365, 3650)) * 86400000;
    row.s_exch_date = row.s_start_date + 86400000;
    row.s_pe = static_cast<int64_t>(r.uniform(100, 12000));
    row.s_52wk_high = price * 12 / 10;
    row.s_52wk_low = price * 8 / 10;
    row.s_dividend = static_cast<int64_t>(r.uniform(0, 2000));
    row.s_yield = static_cast<int64_t>(r.uniform(0, 12000));
    DRTMX_RETURN_IF_ERROR(put(sink, kSecurity, security_key(s), row));
    LastTradeRow lt{kLoadTime, price, price, 0};
    DRTMX_RETURN_IF_ERROR(put(sink, kLastTrade, security_key(s), lt));
    int64_t close = price;
    for (uint32_t d = 0; d < c.market_days; ++d) {
      DailyMarketRow dm{};
      dm.dm_date = kLoadTime - int64_t{c.market_days - d} * 86400000;
      close =
          std::clamp<int64_t>(close + static_cast<int64_t>(r.uniform(0, 40)) - 20, 100, 1000000);
      dm.dm_close = close;
      dm.dm_high = close + static_cast<int64_t>(r.uniform(0, 50));
      dm.dm_low = std::max<int64_t>(1, close - static_cast<int64_t>(r.uniform(0, 50)));
      dm.dm_vol = static_cast<int64_t>(r.uniform(1000, 10000000));
      DRTMX_RETURN_IF_ERROR(put(sink, kDailyMarket, daily_market_key(s, d), dm));
    }
  }
  // Customers, their accounts, permissions, tax rates and watch lists.
  std::vector<Account> accounts;
  accounts.reserve(kCustomersPerUnit * 5 + 16);
  std::vector<CustomerAccountRow> account_rows;
  for (uint32_t i = 0; i < kCustomersPerUnit; ++i) {
    const uint64_t cu = uint64_t{u} * kCustomersPerUnit + i;
    Rng r(mix64(seed ^ 0xD0, cu));
    CustomerRow row{};
    row.c_id = cu;
    set_text(row.c_tax_id, sizeof row.c_tax_id, "T" + std::to_string(r.next() % 1000000000));
    row.c_st_id = kActv;
    word(r, row.c_l_name, sizeof row.c_l_name, 5, 25);
    word(r, row.c_f_name, sizeof row.c_f_name, 4, 20);
    row.c_m_name = static_cast<char>('A' + r.uniform(0, 25));
    row.c_gndr = r.percent(50) ? 'M' : 'F';
    row.c_tier = customer_tier(seed, cu);
    row.c_dob = kLoadTime - static_cast<int64_t>(r.uniform(18 * 365, 90 * 365)) * 86400000;
    row.c_ad_id = customer_address_key(cu);
    for (auto& ph : row.c_phone)
      set_text(ph, sizeof ph, std::to_string(r.uniform(1000000, 9999999)));
    set_text(row.c_email_1, sizeof row.c_email_1, text(row.c_f_name, 20) + "@a.com");
    set_text(row.c_email_2, sizeof row.c_email_2, text(row.c_l_name, 25) + "@b.com");
    row.c_accounts = static_cast<uint8_t>(customer_accounts(seed, cu));
    DRTMX_RETURN_IF_ERROR(put(sink, kCustomer, customer_key(cu), row));
    AddressRow a{};
    address(r, &a);
    DRTMX_RETURN_IF_ERROR(put(sink, kAddress, customer_address_key(cu), a));
    uint32_t tax[2];
    tax[0] = static_cast<uint32_t>(r.uniform(0, kTaxrates / 2 - 1));          // national
    tax[1] = static_cast<uint32_t>(r.uniform(kTaxrates / 2, kTaxrates - 1));  // local
    for (uint32_t k = 0; k < 2; ++k) {
      DRTMX_RETURN_IF_ERROR(
          put(sink, kCustomerTaxrate, customer_taxrate_key(cu, k), CustomerTaxrateRow{tax[k]}));
    }
    const std::string owner = text(row.c_f_name, 20) + " " + text(row.c_l_name, 25);
    for (uint32_t j = 0; j < row.c_accounts; ++j) {
      const uint64_t ca = account_of(cu, j);
      Account acc{};
      acc.ca = ca;
      acc.broker = u * kBrokersPerUnit + static_cast<uint32_t>(r.uniform(0, kBrokersPerUnit - 1));
      acc.tier = row.c_tier;
      acc.tax_st = static_cast<uint8_t>(r.uniform(0, 2));
      acc.tax[0] = tax[0];
      acc.tax[1] = tax[1];
      acc.bal = account_base_balance(seed, ca);
      acc.basket = account_basket(seed, ca, c.securities());
      acc.exec_name = owner;
      CustomerAccountRow ar{};
      ar.ca_id = ca;
      ar.ca_b_id = acc.broker;
      ar.ca_c_id = cu;
      word(r, ar.ca_name, sizeof ar.ca_name, 10, 50);
      ar.ca_tax_st = acc.tax_st;
      accounts.push_back(std::move(acc));
      account_rows.push_back(ar);
      // The owner, then 0..3 others.
      const uint32_t extra = r.percent(60) ? 0 : static_cast<uint32_t>(r.uniform(1, 3));
      for (uint32_t k = 0; k <= extra; ++k) {
        AccountPermissionRow ap{};
        ap.ap_ca_id = ca;
        set_text(ap.ap_acl, sizeof ap.ap_acl, k == 0 ? "0000" : "0011");
        if (k == 0) {
          std::memcpy(ap.ap_tax_id, row.c_tax_id, sizeof ap.ap_tax_id);
          std::memcpy(ap.ap_l_name, row.c_l_name, sizeof ap.ap_l_name);
          std::memcpy(ap.ap_f_name, row.c_f_name, sizeof ap.ap_f_name);
        } else {
          set_text(ap.ap_tax_id, sizeof ap.ap_tax_id, "T" + std::to_string(r.next() % 1000000000));
          word(r, ap.ap_l_name, sizeof ap.ap_l_name, 5, 25);
          word(r, ap.ap_f_name, sizeof ap.ap_f_name, 4, 20);
        }
        DRTMX_RETURN_IF_ERROR(put(sink, kAccountPermission, account_permission_key(ca, k), ap));
      }
    }
    const uint32_t items = static_cast<uint32_t>(r.uniform(50, 150));
    std::vector<uint32_t> watched;
    while (watched.size() < std::min(items, c.securities())) {
      const auto s = static_cast<uint32_t>(r.uniform(0, c.securities() - 1));
      if (std::find(watched.begin(), watched.end(), s) == watched.end()) watched.push_back(s);
    }
    DRTMX_RETURN_IF_ERROR(put(
        sink, kWatchList, watch_list_key(cu),
        WatchListRow{.wl_c_id = cu, .items = static_cast<uint16_t>(watched.size()), .pad_0 = {}}));
    for (uint32_t s : watched) {
      DRTMX_RETURN_IF_ERROR(put(sink, kWatchItem, watch_item_key(cu, s), WatchItemRow{s}));
    }
  }
  // Initial trades, applied in time order.
  std::vector<BrokerRow> brokers(kBrokersPerUnit);
  {
    Rng r(mix64(seed ^ 0xB7, u));
    for (uint32_t k = 0; k < kBrokersPerUnit; ++k) {
      brokers[k].b_id = u * kBrokersPerUnit + k;
      brokers[k].b_st_id = kActv;
      word(r, brokers[k].b_name, sizeof brokers[k].b_name, 8, 49);
    }
  }
  std::map<uint64_t, Holdings> holdings;  // by HOLDING_SUMMARY key
  Rng r(mix64(seed ^ 0x7A, u));
  const uint32_t N = c.initial_trades();
  const uint32_t tail_from = N - c.incomplete_tail();
  for (uint32_t seq = 0; seq < N && !accounts.empty(); ++seq) {
    Account& a = accounts[r.uniform(0, accounts.size() - 1)];
    const bool tail = seq >= tail_from;
    const uint32_t s =
        tail ? u * kSecuritiesPerUnit + static_cast<uint32_t>(r.uniform(0, kSecuritiesPerUnit - 1))
             : a.basket[r.uniform(0, a.basket.size() - 1)];
    const uint64_t tt_draw = r.uniform(1, 100);
    const uint8_t tt = tt_draw <= 30   ? kTMB
                       : tt_draw <= 60 ? kTMS
                       : tt_draw <= 80 ? kTLB
                       : tt_draw <= 90 ? kTLS
                                       : kTSL;
    static const int32_t kQty[] = {100, 200, 400, 800};
    const int32_t qty = kQty[r.uniform(0, 3)];
    const int64_t base = security_base_price(seed, s);
    const int64_t price = base * static_cast<int64_t>(r.uniform(90, 110)) / 100;
    const bool cash = !r.percent(8);
    const bool lifo = r.percent(35);
    const bool market = type_is_market(tt);
    const bool canceled = !market && !tail && r.percent(1);
    const uint64_t trade = trade_key(u, t_num(seq, 0));
    const int64_t dts = kLoadTime + int64_t{seq} * kTradeSpacingMs;
    TradeRow t{};
    t.t_id = trade;
    t.t_dts = dts;
    t.t_tt_id = tt;
    t.t_is_cash = cash;
    t.t_lifo = lifo;
    t.t_s = s;
    t.t_qty = qty;
    t.t_bid_price = price;
    t.t_ca_id = a.ca;
    set_text(t.t_exec_name, sizeof t.t_exec_name, a.exec_name);
    t.t_chrg = charge_of(tt, a.tier);
    const uint8_t ex = static_cast<uint8_t>(security_exchange(seed, s));
    const int32_t rate = commission_rate_of(a.tier, tt, ex, quantity_band(qty));
    t.t_comm = commission(rate, qty, price);
    auto history = [&](uint8_t st, int64_t when) {
      return put(sink, kTradeHistory, trade_history_key(trade, st), TradeHistoryRow{when});
    };
    if (!market) DRTMX_RETURN_IF_ERROR(history(kPndg, dts));
    if (tail) {
      t.t_st_id = market ? kSbmt : kPndg;
      if (market) DRTMX_RETURN_IF_ERROR(history(kSbmt, dts));
      if (!market) {
        TradeRequestRow tr{.tr_t_id = trade,
                           .tr_bid_price = price,
                           .tr_dts = dts,
                           .tr_s = s,
                           .tr_qty = qty,
                           .tr_b_id = a.broker,
                           .tr_tt_id = tt,
                           .pad_0 = {}};
        DRTMX_RETURN_IF_ERROR(put(sink, kTradeRequest, trade_request_key(s, trade), tr));
        const uint32_t sector = industry_sector(company_industry(seed, security_company(s)));
        DRTMX_RETURN_IF_ERROR(put(sink, kTradeRequestBySector,
                                  tr_by_sector_key(u, sector, a.broker, trade_num(trade)),
                                  IndexRow{trade_request_key(s, trade)}));
      }
    } else if (canceled) {
      t.t_st_id = kCncl;
      DRTMX_RETURN_IF_ERROR(history(kCncl, dts + 1000));
    } else {
      t.t_st_id = kCmpt;
      DRTMX_RETURN_IF_ERROR(history(kSbmt, dts + (market ? 0 : 500)));
      DRTMX_RETURN_IF_ERROR(history(kCmpt, dts + 1000));
      const bool sell = type_is_sell(tt);
      Holdings& h = holdings[holding_summary_key(a.ca, s)];
      uint32_t k = 0;
      Status hs;
      const int64_t basis =
          apply(h, trade, dts, sell, lifo, qty, price, [&](uint64_t ht, int32_t b, int32_t af) {
            if (hs.is_ok())
              hs = put(sink, kHoldingHistory, holding_history_key(trade, k++),
                       HoldingHistoryRow{ht, b, af});
          });
      DRTMX_RETURN_IF_ERROR(hs);
      int64_t tax = 0;
      if (sell && a.tax_st != 0) {
        const int64_t gain = int64_t{qty} * price - basis;
        if (gain > 0) tax = gain * (taxrate_of(a.tax[0]) + taxrate_of(a.tax[1])) / 100000;
      }
      t.t_trade_price = price;
      t.t_tax = tax;
      const int64_t amt = settlement_amount(sell, qty, price, t.t_chrg, t.t_comm, tax);
      SettlementRow se{};
      set_text(se.se_cash_type, sizeof se.se_cash_type, cash ? "Cash Account" : "Margin");
      se.se_cash_due_date = dts + 2 * 86400000;
      se.se_amt = amt;
      DRTMX_RETURN_IF_ERROR(put(sink, kSettlement, trade, se));
      if (cash) {
        CashTransactionRow ct{};
        ct.ct_dts = dts + 1000;
        ct.ct_amt = amt;
        set_text(ct.ct_name, sizeof ct.ct_name,
                 std::string(sell ? "Sell " : "Buy ") + std::to_string(qty) + " shares");
        DRTMX_RETURN_IF_ERROR(put(sink, kCashTransaction, trade, ct));
        a.bal += amt;
      }
      BrokerRow& b = brokers[a.broker % kBrokersPerUnit];
      b.b_num_trades += 1;
      b.b_comm_total += t.t_comm;
    }
    DRTMX_RETURN_IF_ERROR(put(sink, kTrade, trade, t));
    DRTMX_RETURN_IF_ERROR(
        put(sink, kTradeByAccount, trade_by_account_key(a.ca, trade_num(trade)), IndexRow{trade}));
    DRTMX_RETURN_IF_ERROR(put(sink, kTradeBySecurity, trade_by_security_key(u, s, trade_num(trade)),
                              IndexRow{trade}));
  }
  for (const BrokerRow& b : brokers)
    DRTMX_RETURN_IF_ERROR(put(sink, kBroker, broker_key(b.b_id), b));
  for (size_t i = 0; i < accounts.size(); ++i) {
    account_rows[i].ca_bal = accounts[i].bal;
    DRTMX_RETURN_IF_ERROR(
        put(sink, kCustomerAccount, account_key(accounts[i].ca), account_rows[i]));
  }
  for (const auto& [key, h] : holdings) {
    if (h.qty == 0) continue;  // no summary row without a position
    const uint64_t ca = account_of(u * uint64_t{kCustomersPerUnit} + ((key >> 18) & 0x3fff) / 16,
                                   ((key >> 18) & 0x3fff) % 16);
    const uint32_t s = static_cast<uint32_t>(key & 0x3ffff);
    DRTMX_RETURN_IF_ERROR(put(sink, kHoldingSummary, key, HoldingSummaryRow{h.qty, h.next}));
    for (const Hold& o : h.open) {
      DRTMX_RETURN_IF_ERROR(put(
          sink, kHolding, holding_key(ca, s, o.seq),
          HoldingRow{
              .h_t_id = o.trade, .h_dts = o.dts, .h_price = o.price, .h_qty = o.qty, .pad_0 = {}}));
    }
  }
  return Status();
}

}  // namespace drtmx::bench::tpce
