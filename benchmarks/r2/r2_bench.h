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

// What one run measured (filled by node 0).
struct R2Summary {
  double mops = 0;
  double p50_us = 0;
  double p99_us = 0;
  uint64_t ops = 0;
  std::string check;
};

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
  // Nodes below this id run the coroutines; the others only serve (an
  // idle target: its worker backs off as any idle worker does).
  uint16_t issuers = 0;           // 0: every node
  int node = -1;                  // >= 0: run as this node of an already started cluster
  std::string coordinator;        // node mode: the coordinator; launcher: where to listen
  bool host_coordinator = false;  // node mode: this node also hosts the coordinator
  std::string cluster_key_file;   // --cluster-key-file ("": launcher makes a key)
  uint32_t join_timeout_ms = 20000;
  std::string suite;             // "thesis": run the comparison suite instead of one run
  bool quiet = false;            // no per-run table (the suite prints its own)
  R2Summary* summary = nullptr;  // in-process runs: node 0 stores the result here

  // The arguments that make a node process of the same experiment.
  std::vector<std::string> node_args(int node, const std::string& coordinator) const;
};

class JsonWriter;
// The run's configuration as members of the current JSON object.
void write_config(const R2BenchOptions& o, JsonWriter& j);

// Parses argv; on --help returns kNotFound with the usage text as message.
Result<R2BenchOptions> parse_r2_bench(int argc, char** argv);

// Runs a whole local cluster: a coordinator here, the nodes as threads of
// this process or (o.processes) as child processes.
Status run_local_cluster(const R2BenchOptions& o);

// Runs the comparison suite `o.suite` (see README "r2-bench").
Status run_suite(const R2BenchOptions& o);

// Runs node `o.node` to completion: joins, measures, verifies; node 0 prints
// the report (and writes the JSON file).
Status run_r2_bench_node(const R2BenchOptions& o);

}  // namespace drtmx::bench
