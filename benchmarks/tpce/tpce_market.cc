// The market exchange emulator (tpce_market.h).
#include "tpce/tpce_market.h"

namespace drtmx::bench::tpce {

int64_t Market::price(uint64_t seed, uint32_t s, int64_t now_ms) {
  constexpr int64_t kPeriod = 20000;
  const int64_t phase = static_cast<int64_t>(mix64(seed ^ 0x99, s) % kPeriod);
  const int64_t x = (now_ms + phase) % kPeriod;              // 0 .. period
  const int64_t tri = x < kPeriod / 2 ? x : kPeriod - x;     // 0 .. period / 2
  const int64_t permille = 900 + tri * 200 / (kPeriod / 2);  // 900 .. 1100
  return security_base_price(seed, s) * permille / 1000;
}

void Market::submit(const Submitted& t) {
  std::lock_guard<std::mutex> g(mu_);
  results_.push_back(t);
}

bool Market::take(Submitted* out) {
  std::lock_guard<std::mutex> g(mu_);
  if (results_.empty()) return false;
  *out = results_.front();
  results_.pop_front();
  return true;
}

void Market::completed(const Submitted& t) {
  std::lock_guard<std::mutex> g(mu_);
  if (tape_.size() < 10000) tape_.push_back(Tick{t.s, t.price, t.qty});
}

std::vector<Tick> Market::ticker(Rng& r, int64_t now_ms, size_t n, uint32_t node, uint32_t nodes) {
  auto local = [&](uint32_t s) { return s / kSecuritiesPerUnit % nodes == node; };
  std::vector<Tick> out;
  {
    std::lock_guard<std::mutex> g(mu_);
    while (out.size() < n && !tape_.empty()) {
      if (local(tape_.front().s)) out.push_back(tape_.front());
      tape_.pop_front();
    }
  }
  const uint32_t units = securities_ / kSecuritiesPerUnit;
  const uint32_t mine = units / nodes + (node < units % nodes ? 1 : 0);
  while (out.size() < n && mine > 0) {
    const auto u = node + static_cast<uint32_t>(r.uniform(0, mine - 1)) * nodes;
    out.push_back(
        Tick{u * kSecuritiesPerUnit + static_cast<uint32_t>(r.uniform(0, kSecuritiesPerUnit - 1)),
             0, 100});
  }
  // One tick per security (a feed reports each symbol once), at the
  // current price.
  std::vector<Tick> unique;
  for (Tick& t : out) {
    bool seen = false;
    for (Tick& u : unique) {
      if (u.s == t.s) {
        u.qty += t.qty;
        seen = true;
      }
    }
    if (!seen) unique.push_back(t);
  }
  for (Tick& t : unique) t.price = price(seed_, t.s, now_ms);
  return unique;
}

size_t Market::waiting() const {
  std::lock_guard<std::mutex> g(mu_);
  return results_.size();
}

}  // namespace drtmx::bench::tpce
