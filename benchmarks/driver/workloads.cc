// The workloads drtmx-bench knows, by --bench name.
#include "bench.h"

namespace drtmx::bench {

Result<std::unique_ptr<Workload>> make_workload(const BenchOptions& o) {
  return invalid_argument("--bench=" + o.bench + ": unknown workload; known: smallbank");
}

}  // namespace drtmx::bench
