// TPC-E options (tpce_config.h).
#include "tpce/tpce_config.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "driver/workload_options.h"
#include "tpce/tpce_schema.h"

namespace drtmx::bench::tpce {
namespace {

// "4.9" -> 49 (tenths); nothing unless a number with at most one decimal.
bool tenths(const std::string& s, uint32_t* out) {
  const size_t dot = s.find('.');
  const std::string whole = s.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  if (whole.empty() || frac.size() > 1 || (dot != std::string::npos && frac.empty())) return false;
  uint32_t w = 0, f = 0;
  auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), w);
  if (ec != std::errc() || p != whole.data() + whole.size() || w > 100) return false;
  if (!frac.empty()) {
    if (frac[0] < '0' || frac[0] > '9') return false;
    f = static_cast<uint32_t>(frac[0] - '0');
  }
  *out = w * 10 + f;
  return true;
}

Result<std::array<uint32_t, kMixTypes>> parse_mix(const std::string& s) {
  std::array<uint32_t, kMixTypes> m{};
  std::istringstream is(s);
  std::string part;
  size_t n = 0;
  uint32_t sum = 0;
  bool ok = true;
  while (std::getline(is, part, ',')) {
    if (n == kMixTypes || !tenths(part, &m[n])) {
      ok = false;
      break;
    }
    sum += m[n++];
  }
  if (!ok || n != kMixTypes || sum != 1000) {
    return invalid_argument(
        "--mix=" + s +
        ": expected ten percentages (one decimal at most) adding up to 100: BrokerVolume, "
        "CustomerPosition, MarketFeed, MarketWatch, SecurityDetail, TradeLookup, TradeOrder, "
        "TradeResult, TradeStatus, TradeUpdate; the specification's is "
        "4.9,13,1,18,14,8,10.1,10,19,2");
  }
  return m;
}

}  // namespace

// The most initial trades (--initial-trade-days=300) leave most of the
// trade sequence numbers to the clients.
static_assert(uint64_t{300} * kTradesPerUnitDay < kTradeSeqs / 2);

uint32_t Config::initial_trades() const {
  return static_cast<uint32_t>(std::llround(initial_trade_days * kTradesPerUnitDay));
}

uint32_t Config::incomplete_tail() const {
  return std::min<uint32_t>(100, initial_trades() / 10);
}

double Config::read_only_pct() const {
  uint32_t ro = 0;
  for (int t = 0; t < kMixTypes; ++t) ro += read_only_type(t) ? mix[t] : 0;
  return ro / 10.0;
}

Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env) {
  Config c;
  c.nodes = env.nodes;
  c.threads = env.threads;
  c.coroutines = env.coroutines;
  c.replicas = env.replicas;
  c.copies = env.copies;
  if (o.count("trade-room")) {
    return invalid_argument(
        "--trade-room is no longer needed: TPC-E's tables grow as the run inserts rows; drop the "
        "option");
  }
  auto customers = option_number(o, "customers", 1000, 1000, kMaxUnits * kCustomersPerUnit);
  auto market = option_number(o, "market-days", 260, 5, 1305);
  auto dm = option_number(o, "dm-interval-ms", 1000, 10, 3600000);
  auto tc = option_number(o, "tc-interval-ms", 2000, 10, 3600000);
  for (auto* r : {&customers, &market, &dm, &tc}) {
    if (!r->is_ok()) return r->status();
  }
  if (*customers % kCustomersPerUnit != 0) {
    return invalid_argument("--customers=" + std::to_string(*customers) +
                            ": expected a multiple of 1000 (load units of 1000 customers)");
  }
  c.customers_per_node = *customers;
  c.market_days = *market;
  c.dm_interval_ms = *dm;
  c.tc_interval_ms = *tc;
  if (c.units() > kMaxUnits) {
    return invalid_argument("--customers=" + std::to_string(*customers) + " on " +
                            std::to_string(c.nodes) + " nodes makes " + std::to_string(c.units()) +
                            " load units; at most " + std::to_string(kMaxUnits));
  }
  if (auto it = o.find("initial-trade-days"); it != o.end()) {
    char* end = nullptr;
    const double d = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || end != it->second.c_str() + it->second.size() || !(d >= 0.001) ||
        d > 300) {
      return invalid_argument("--initial-trade-days=" + it->second +
                              ": expected a number of days in 0.001..300 (the specification's "
                              "is 300; 57600 trades per load unit and day)");
    }
    c.initial_trade_days = d;
  }
  if (auto it = o.find("mix"); it != o.end()) {
    auto m = parse_mix(it->second);
    if (!m.is_ok()) return m.status();
    c.mix = *m;
  }
  const uint64_t clients = uint64_t{env.nodes} * env.threads * env.coroutines;
  if (clients >= 4095) {
    return invalid_argument("tpce: " + std::to_string(clients) +
                            " transaction coroutines; trade ids allow at most 4094");
  }
  return c;
}

}  // namespace drtmx::bench::tpce
