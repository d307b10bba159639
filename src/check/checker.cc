#include "check/checker.h"

#include "check/graph.h"

namespace drtmx::check {

Result<CheckReport> check_history(const History& h, const CheckOptions& opt) {
  std::vector<Model> models = opt.models;
  if (models.empty()) models = parse_models("serializable").value();
  CheckReport r;
  GraphOptions go;
  for (const Model& m : models) {
    r.models.push_back(m.name);
    go.process |= m.process;
    go.realtime |= m.realtime;
  }
  Result<Analysis> a = analyze_versions(h);
  if (!a) return a.status();
  r.analysis = std::move(*a);
  {
    Graph g = build_graph(r.analysis, go);
    r.graph_edges = g.edges();
    CycleOptions co;
    co.process = go.process;
    co.realtime = go.realtime;
    co.budget = opt.cycle_budget;
    r.cycles = find_cycles(r.analysis, g, co);
  }
  const auto& found = r.analysis.anomalies.counts();
  for (const Model& m : all_models()) {
    for (const auto& [type, n] : found) {
      if (m.forbids.count(type)) {
        r.not_models.push_back(m.name);
        break;
      }
    }
  }
  for (const auto& [type, n] : found) {
    for (const Model& m : models) {
      if (m.forbids.count(type)) {
        r.forbidden_found.push_back(type);
        break;
      }
    }
  }
  if (!r.forbidden_found.empty()) {
    r.verdict = Verdict::kInvalid;
  } else if (r.analysis.ok_txns == 0) {
    r.verdict = Verdict::kUnknown;  // nothing committed: nothing to judge
  } else {
    r.verdict = Verdict::kValid;
  }
  return r;
}

int exit_status(const CheckReport& r) {
  switch (r.verdict) {
    case Verdict::kValid:
      return 0;
    case Verdict::kInvalid:
      return 1;
    case Verdict::kUnknown:
      return 2;
  }
  return 2;
}

}  // namespace drtmx::check
