#include "base/histogram.h"

#include <sstream>

namespace drtmx {

uint64_t LatencyHistogram::quantile(double q) const {
  if (total_ == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      uint64_t up = bucket_upper(i);
      return up < max_ ? up : max_;
    }
  }
  return max_;
}

std::string LatencyHistogram::encode() const {
  std::ostringstream os;
  os << "max:" << max_;
  for (int i = 0; i < kBuckets; ++i) {
    if (counts_[i] != 0) os << "," << i << ":" << counts_[i];
  }
  return os.str();
}

bool LatencyHistogram::decode(const std::string& s) {
  clear();
  std::istringstream is(s);
  std::string item;
  bool first = true;
  while (std::getline(is, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) return clear(), false;
    try {
      const std::string k = item.substr(0, colon);
      const uint64_t v = std::stoull(item.substr(colon + 1));
      if (first) {
        if (k != "max") return clear(), false;
        max_ = v;
        first = false;
        continue;
      }
      const long b = std::stol(k);
      if (b < 0 || b >= kBuckets) return clear(), false;
      counts_[b] += v;
      total_ += v;
    } catch (...) {
      return clear(), false;
    }
  }
  return !first;
}

}  // namespace drtmx
