// The TPC-E data generator (our own, from the specification's rules in
// clause 4; no EGen code): the fixed tables, and per load unit of 1 000
// customers its customers, accounts, brokers, securities, companies, market
// history and initial trades. Every row is a pure function of (Config::seed,
// unit), so a primary and its backups load identical data without
// exchanging it; the rows go to a Sink (the loader's store, or a test's
// map).
//
// Distributions (the specification's where it gives one; ours marked):
// * C_TIER 1 / 2 / 3 for 20 / 60 / 20 % of customers; accounts per
//   customer uniform in 1..4 / 2..8 / 5..10 by tier (5 on average).
// * ACCOUNT_PERMISSION: the owner plus 0..3 others (ours: 0 for 60 %, 1..3
//   for 40 %: 1.8 per account); CUSTOMER_TAXRATE: 2 per customer; one
//   WATCH_LIST per customer with 50..150 items (100 on average).
// * 10 brokers, 685 securities, 500 companies per unit; 3 competitors, 20
//   FINANCIAL quarters and 2 NEWS_ITEMs per company; DAILY_MARKET
//   --market-days per security (spec 1 305).
// * Initial trades: 57 600 per unit and initial trade day, 0.5 s apart, by
//   an account drawn uniformly from the unit's, on a security of the
//   account's basket (ours: 6..14 securities of any unit per account, a
//   pure function of the account); types market buy / market sell / limit
//   buy / limit sell / stop-loss 30 / 30 / 20 / 10 / 10 %; quantity 100,
//   200, 400 or 800; 8 % on margin (no CASH_TRANSACTION); 35 % LIFO; 1 % of
//   the limit orders canceled. The last incomplete_tail() trades are left
//   pending (limit: a TRADE_REQUEST) or submitted (market), on securities
//   of the unit itself, for Trade-Cleanup.
// Completed trades are applied as Trade-Result applies them (holdings
// opened, reduced or covered FIFO / LIFO with HOLDING_HISTORY rows,
// HOLDING_SUMMARY, SETTLEMENT, CASH_TRANSACTION, CA_BAL, broker totals),
// so the loaded database meets every check (tpce_check.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tpce/tpce_config.h"
#include "tpce/tpce_schema.h"

namespace drtmx::bench::tpce {

// xorshift64* — deterministic draws for the generator and the clients.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  uint64_t uniform(uint64_t lo, uint64_t hi);  // inclusive
  bool percent(uint32_t pct) { return uniform(1, 100) <= pct; }
  bool permille(uint32_t pm) { return uniform(1, 1000) <= pm; }

 private:
  uint64_t s_;
};

// Where generated rows go: (table, key, row bytes).
using Sink = std::function<Status(txn::TableId, uint64_t, const void*, size_t)>;

constexpr int64_t kLoadTime = 1700000000000;  // ms: the first initial trade
constexpr int64_t kTradeSpacingMs = 500;      // between initial trades of a unit

// Pure functions of the seed that the loader, the clients and the checks
// share.
uint64_t mix64(uint64_t a, uint64_t b);
uint32_t company_industry(uint64_t seed, uint32_t co);     // 0 .. 101
uint32_t industry_sector(uint32_t in);                     // 0 .. 11
uint32_t security_exchange(uint64_t seed, uint32_t s);     // 0 .. 3
int64_t security_base_price(uint64_t seed, uint32_t s);    // cents, 10.00 .. 100.00
int64_t account_base_balance(uint64_t seed, uint64_t ca);  // CA_BAL before any trade
uint8_t customer_tier(uint64_t seed, uint64_t c);          // 1, 2, 3: 20 / 60 / 20 %
uint32_t customer_accounts(uint64_t seed, uint64_t c);     // by tier: 1..4, 2..8, 5..10
int32_t taxrate_of(uint32_t tx);                           // TX_RATE at load, 1/100000
std::vector<uint32_t> account_basket(uint64_t seed, uint64_t ca, uint32_t securities);
// The commission of a trade at `rate` (COMMISSION_RATE, percent x 100).
constexpr int64_t commission(int32_t rate, int32_t qty, int64_t price) {
  return int64_t{qty} * price * rate / 10000;
}
// CHARGE and COMMISSION_RATE values (the replicated tables' contents).
int64_t charge_of(uint8_t tt, uint8_t tier);
int32_t commission_rate_of(uint8_t tier, uint8_t tt, uint8_t ex, uint8_t band);
// Settlement amount of a completed trade (buys pay, sells receive).
int64_t settlement_amount(bool sell, int32_t qty, int64_t price, int64_t chrg, int64_t comm,
                          int64_t tax);
void set_text(char* dst, size_t size, const std::string& s);
std::string text(const char* src, size_t size);

// The fixed and replicated tables (STATUS_TYPE ... COMPANY_BY_INDUSTRY,
// TAXRATE) — the same on every node.
Status generate_fixed(const Config& c, const Sink& sink);
// Unit u's rows of every partitioned table (its partition of each; unit 0
// also EXCHANGE and its addresses).
Status generate_unit(const Config& c, uint32_t u, const Sink& sink);

}  // namespace drtmx::bench::tpce
