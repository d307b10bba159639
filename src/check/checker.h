// drtmx-check's whole check of a parsed history: version orders and the
// anomalies they show, the dependency graph, its cycles, and the verdict
// under the chosen consistency models; the result as Jepsen-style JSON.
#pragma once

#include <string>
#include <vector>

#include "check/analysis.h"
#include "check/cycles.h"
#include "check/models.h"

namespace drtmx::check {

struct CheckOptions {
  std::vector<Model> models;  // empty: serializable
  uint64_t cycle_budget = CycleOptions{}.budget;
};

enum class Verdict { kValid, kInvalid, kUnknown };

struct CheckReport {
  Verdict verdict = Verdict::kUnknown;
  Analysis analysis;
  std::vector<std::string> models;      // the models checked
  std::vector<std::string> not_models;  // models the anomalies found rule out
  std::vector<std::string> forbidden_found;
  uint64_t graph_edges = 0;
  CycleStats cycles;
};

Result<CheckReport> check_history(const History& h, const CheckOptions& opt);
// The result in the shape of Jepsen's checkers ("valid?", "anomaly-types",
// "anomalies", "not", ...), one JSON object.
std::string report_json(const CheckReport& r);
// One paragraph for people: the verdict, counts, the first anomaly of each
// forbidden type explained.
std::string report_summary(const CheckReport& r);
// 0 valid, 1 invalid, 2 unknown.
int exit_status(const CheckReport& r);

}  // namespace drtmx::check
