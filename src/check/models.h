// Consistency models and the anomalies each forbids (after Adya and Elle).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace drtmx::check {

struct Model {
  std::string name;
  std::set<std::string> forbids;
  bool process = false;   // needs the per-process order edges
  bool realtime = false;  // needs the real-time order edges
};

// read-committed, snapshot-isolation, serializable,
// strong-session-serializable, strict-serializable; weakest first.
const std::vector<Model>& all_models();
// A comma-separated list of model names; an error naming the unknown one
// (drtmx-check's --consistency-models, drtmx-bench's --check-history).
Result<std::vector<Model>> parse_models(std::string_view list);

}  // namespace drtmx::check
