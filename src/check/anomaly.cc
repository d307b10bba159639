#include "check/anomaly.h"

namespace drtmx::check {

const char* edge_name(uint8_t bit) {
  switch (bit) {
    case kWW:
      return "ww";
    case kWR:
      return "wr";
    case kRW:
      return "rw";
    case kProcess:
      return "process";
    case kRealtime:
      return "realtime";
  }
  return "?";
}

bool AnomalySet::wants(const std::string& type) const {
  auto it = kept_.find(type);
  return it == kept_.end() || it->second.size() < kKeptPerType;
}

void AnomalySet::add(Anomaly a) {
  counts_[a.type]++;
  auto& v = kept_[a.type];
  if (v.size() < kKeptPerType) v.push_back(std::move(a));
}

}  // namespace drtmx::check
