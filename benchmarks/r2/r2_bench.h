// r2-bench: one-sided ops and RPC between the nodes of a cluster.
// See README.md ("r2-bench") for the options and what each run shows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric_config.h"

namespace drtmx::bench {

enum class Op { kRead, kWrite, kCas, kFaa, kRpc };

struct R2BenchOptions {
  r2::FabricConfig fabric;  // backend, nodes, threads, delay, mtu, device
  uint16_t coroutines = 8;
  Op op = Op::kRead;
  std::string op_name = "read";
  uint32_t payload = 64;
  uint32_t batch = 1;
  double seconds = 3;
  double warmup = 1;
  bool passive_ack = false;
  std::string json;
  bool processes = false;
  uint32_t region_mb = 4;
  int node = -1;                  // >= 0: run as this node of an already started cluster
  std::string coordinator;        // node mode: the coordinator; launcher: where to listen
  bool host_coordinator = false;  // node mode: this node also hosts the coordinator
  uint32_t join_timeout_ms = 20000;

  // The arguments that make a node process of the same experiment.
  std::vector<std::string> node_args(int node, const std::string& coordinator) const;
};

// Parses argv; on --help returns kNotFound with the usage text as message.
Result<R2BenchOptions> parse_r2_bench(int argc, char** argv);

// Runs node `o.node` to completion: joins, measures, verifies; node 0 prints
// the report (and writes the JSON file).
Status run_r2_bench_node(const R2BenchOptions& o);

}  // namespace drtmx::bench
