// The ends of the driver's programs: a node's main (drtmx-node, and a
// program of your own started with --node) and program_main, drtmx-bench's
// command line in a program that adds workloads of its own.
#include <iostream>
#include <set>

#include "bench.h"
#include "exit_code.h"
#include "local_cluster.h"
#include "node_options.h"
#include "process_group.h"

namespace drtmx::bench {

int node_main(const BenchOptions& o, const char* program) {
  BenchOptions mine = o;
  mine.node_program = program;
  if (Status k = resolve_cluster_key(o.cluster_key_file, o.node, mine.fabric); !k.is_ok()) {
    std::cerr << program << " " << o.node << ": " << k.to_string() << "\n";
    return 2;
  }
  HostedCoordinator host;
  if (o.host_coordinator) {
    // It listens where the nodes connect (--coordinator), or at
    // --coordinator-bind with that port.
    std::string listen = o.coordinator;
    if (!o.coordinator_bind.empty()) {
      listen = o.coordinator_bind + o.coordinator.substr(o.coordinator.rfind(':'));
    }
    auto s = start_coordinator(mine, listen);
    if (!s.is_ok()) {
      std::cerr << program << ": coordinator at " << listen << ": " << s.status().to_string()
                << "\n";
      return 1;
    }
    host = HostedCoordinator(std::move(s.value()));
  }
  const Status st = host.finish(run_bench_node(mine));
  if (!st.is_ok()) {
    std::cerr << program << " " << o.node << ": " << st.to_string() << "\n";
    return 1;
  }
  return 0;
}

int program_main(int argc, char** argv, const char* program, std::vector<WorkloadInfo> extra) {
  std::vector<WorkloadInfo> known = workloads();
  std::set<std::string> names;
  for (const WorkloadInfo& w : known) names.insert(w.name);
  for (WorkloadInfo& w : extra) {
    if (w.name.empty() || !w.make || !names.insert(w.name).second) {
      std::cerr << program << ": workload '" << w.name
                << "' is refused: every workload needs a name of its own (taken: the built-in "
                   "ones and those listed before it) and a make function\n";
      return 2;
    }
    known.push_back(std::move(w));
  }
  int code = 0;
  auto o = parse_for_main(argc, argv, program, &code, known);
  if (!o) return code;
  if (o->node >= 0) return node_main(*o, program);
  // The launcher: the nodes are copies of this program.
  o->node_exe = self_exe();
  if (Status k = read_launcher_key(*o); !k.is_ok()) return options_exit_code(program, k, 2);
  if (!o->sweep.empty()) {
    auto points = sweep_points(argc, argv, *o);
    if (!points.is_ok()) return options_exit_code(program, points.status(), 2);
    return exit_code(program, run_sweep(*o, std::move(*points)));
  }
  return exit_code(program, run_local_cluster(*o));
}

}  // namespace drtmx::bench
