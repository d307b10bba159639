// Parsing of workload options (--KEY=VALUE strings, workload.h) shared by
// the workloads: an error names the option and what it accepts.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "driver/workload.h"

namespace drtmx::bench {

// The integer value of --key, `dflt` when absent; kInvalidArgument unless
// it is an integer in [lo, hi].
inline Result<uint32_t> option_number(const WorkloadOptions& o, const std::string& key,
                                      uint32_t dflt, uint32_t lo, uint32_t hi) {
  auto it = o.find(key);
  if (it == o.end()) return dflt;
  uint32_t v = 0;
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) {
    return invalid_argument("--" + key + "=" + s + ": expected an integer in " +
                            std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

// Exactly `n` comma-separated percentages adding up to 100 (a --mix), or
// nothing when `s` is not that (the caller names the transactions in its
// error).
inline std::optional<std::vector<uint32_t>> percentages(const std::string& s, size_t n) {
  std::vector<uint32_t> m;
  std::istringstream is(s);
  std::string part;
  uint32_t sum = 0;
  while (std::getline(is, part, ',')) {
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || p != part.data() + part.size() || v > 100 || m.size() == n) {
      return std::nullopt;
    }
    m.push_back(v);
    sum += v;
  }
  if (m.size() != n || sum != 100) return std::nullopt;
  return m;
}

}  // namespace drtmx::bench
