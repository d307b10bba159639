// drtmx-bench: runs a transactional workload on a local cluster — starts
// the coordinator here and the nodes as drtmx-node processes (or threads),
// prints a progress line per second and the final report. See README.md.
#include <iostream>

#include "bench.h"
#include "exit_code.h"

int main(int argc, char** argv) {
  using namespace drtmx::bench;
  int code = 0;
  auto o = parse_for_main(argc, argv, "drtmx-bench", &code);
  if (!o) return code;
  if (o->node >= 0) {
    std::cerr << "drtmx-bench: --node runs one node of a cluster: use drtmx-node for that\n";
    return 2;
  }
  if (drtmx::Status k = read_launcher_key(*o); !k.is_ok())
    return options_exit_code("drtmx-bench", k, 2);
  if (!o->sweep.empty()) {
    auto points = sweep_points(argc, argv, *o);
    if (!points.is_ok()) return options_exit_code("drtmx-bench", points.status(), 2);
    return exit_code("drtmx-bench", run_sweep(*o, std::move(*points)));
  }
  return exit_code("drtmx-bench", run_local_cluster(*o));
}
