// The workloads drtmx-bench knows, by --bench name: one line each here,
// the workload itself in its own library (benchmarks/<name>/).
#include "append/append.h"
#include "bench.h"
#include "smallbank/smallbank.h"
#include "tpcc/tpcc.h"
#include "tpce/tpce.h"

namespace drtmx::bench {

const std::vector<WorkloadInfo>& workloads() {
  static const std::vector<WorkloadInfo> all = {
      smallbank::info(),
      tpcc::info(),
      tpce::info(),
      append::info(),
  };
  return all;
}

Result<std::unique_ptr<Workload>> make_workload(const BenchOptions& o) {
  const WorkloadInfo* found = nullptr;
  std::string known;
  for (const WorkloadInfo& w : o.known ? *o.known : workloads()) {
    known += (known.empty() ? "" : ", ") + w.name;
    if (w.name == o.bench) found = &w;
  }
  if (found == nullptr) {
    return invalid_argument("--bench=" + o.bench + ": unknown workload; known: " + known);
  }
  for (const auto& [k, v] : o.workload) {
    bool mine = false;
    for (const auto& opt : found->options) mine |= opt.first == k;
    if (!mine) return invalid_argument("--" + k + " is not an option of --bench=" + o.bench);
  }
  WorkloadEnv env;
  env.nodes = o.fabric.num_nodes;
  env.threads = o.fabric.threads;
  env.coroutines = o.coroutines;
  env.replicas = o.replicas != 0 ? o.replicas : static_cast<uint16_t>(std::min<int>(3, env.nodes));
  env.copies = o.live_copies;
  return found->make(o.workload, env);
}

}  // namespace drtmx::bench
