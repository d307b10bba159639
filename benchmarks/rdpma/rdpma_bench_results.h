// What one node of an rdpma-bench run measured, how it travels to node 0
// (text through the control plane), and node 0's report: the table, the
// ratios, and the run's JSON object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/histogram.h"
#include "base/status.h"
#include "rdpma_bench.h"

namespace drtmx::bench {

struct ExperimentResult {
  uint64_t ops = 0;          // persistent writes completed inside the window
  uint64_t measured_ns = 0;  // the window
  LatencyHistogram hist;     // per write
};

struct NodeResult {
  std::string error;  // empty: fine
  std::string check;  // what the data check found
  std::vector<ExperimentResult> exps;

  std::string encode() const;
  static bool decode(const std::string& s, size_t experiments, NodeResult* out);
};

// Node 0: prints the run's table and ratios, and writes its JSON object
// to `json_part` when set. `persistence` names the pools' mode.
Status report_run(const RdpmaBenchOptions& o, const std::string& persistence,
                  const std::vector<NodeResult>& nodes, const std::string& json_part);

}  // namespace drtmx::bench
