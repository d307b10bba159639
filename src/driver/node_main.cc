// drtmx-node: one node of a drtmx cluster. drtmx-bench starts these as local
// processes; on a multi-host cluster start one per host by hand:
//   drtmx-node --node=0 --nodes=3 --coordinator=HOST0:7000 --host-coordinator ...
//   drtmx-node --node=1 --nodes=3 --coordinator=HOST0:7000 ...
// Every setting comes from the command line or --config=FILE (key = value
// lines, the same names), validated before the node joins. Node 0 prints
// the run's report.
#include <iostream>

#include "bench.h"

int main(int argc, char** argv) {
  using namespace drtmx::bench;
  int code = 0;
  auto o = parse_for_main(argc, argv, "drtmx-node", &code);
  if (!o) return code;
  if (o->node < 0) {
    std::cerr << "drtmx-node: --node=N and --coordinator=HOST:PORT are required (drtmx-bench "
                 "starts a whole local cluster)\n";
    return 2;
  }
  return node_main(*o, "drtmx-node");
}
