// drtmx-bench: runs a transactional workload on a local cluster (or one
// node of a cluster started elsewhere) and reports throughput, abort rates
// and latency. See README.md ("drtmx-bench").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/control/control.h"
#include "r2/fabric_config.h"
#include "workload.h"

namespace drtmx::bench {

struct BenchOptions {
  std::string bench = "smallbank";
  r2::FabricConfig fabric;
  uint16_t coroutines = 8;
  double seconds = 10;
  double warmup = 2;
  std::string policy = "drtmh";                  // the preset a node runs
  std::vector<std::string> policies;             // the launcher runs each in turn
  std::map<std::string, std::string> overrides;  // per-phase policy overrides
  uint16_t replicas = 0;                         // 0: min(3, nodes)
  bool inprocess = false;                        // nodes as threads of this process
  std::string json;
  int node = -1;                  // >= 0: run only this node (the launcher passes it)
  std::string coordinator;        // node mode: where the coordinator listens
  bool host_coordinator = false;  // node 0 also serves the coordinator
  uint32_t join_timeout_ms = 30000;
  uint64_t seed = 1;
  uint32_t log_ring_kb = 1024;
  uint32_t xstore_refresh_keys = 16;            // XCacheOptions::refresh_keys_per_miss
  double versions_pct = 2;                      // dst::MvccConfig::versions_pct
  std::map<std::string, std::string> workload;  // workload options (--accounts=...)
  // Durability (README "Durability"): pools and the acknowledgement journal.
  bool durable = false;  // --durability=pmem
  std::string pmem_dir;  // --pmem-dir
  bool format = false;   // --format
  bool recover = false;  // --recover
  // --lock-words=dram|slots: record lock words and tuple timestamps in
  // DRAM (H8, the default) or in the pooled slots (measuring H8 only).
  bool locks_apart = true;
  uint32_t journal_kb = 1024;
  // Launcher: SIGKILL every node this many seconds into the measured run (0: never).
  double crash_at = 0;
  // Tests: node `crash_node` kills itself at the `crash_hit`-th occurrence of
  // crash point `crash_name` (txn/crash_point.h, or "load": after its load,
  // before the load is recorded persistent). Empty name: none.
  std::string crash_name;
  int crash_node = -1;
  uint64_t crash_hit = 0;
  bool crash_requested() const { return crash_at > 0 || !crash_name.empty(); }
  std::vector<std::string> node_args(int node, const std::string& coordinator) const;
};

// argv -> options; --help gives kNotFound with the usage text.
Result<BenchOptions> parse_bench(int argc, char** argv);
// parse_bench for a main(): prints the usage (--help) to stdout or the
// error, prefixed with `program`, to stderr. Null with *exit_code set
// (0 after --help, 2 after an error) when the program should stop.
std::unique_ptr<BenchOptions> parse_for_main(int argc, char** argv, const char* program,
                                             int* exit_code);
// Builds the workload named by o.bench from o.workload (errors name the option).
Result<std::unique_ptr<Workload>> make_workload(const BenchOptions& o);
// Launcher: a coordinator here, the nodes as drtmx-node processes (default)
// or threads; with several policies, one run each, then a summary table.
Status run_local_cluster(const BenchOptions& o);
// One node, joined through o.coordinator; node 0 prints the report.
Status run_bench_node(const BenchOptions& o);
// The coordinator of a run, printing the nodes' per-second progress;
// `also` (optional) sees every publication too.
Result<std::unique_ptr<r2::ControlServer>> start_coordinator(
    const BenchOptions& o, const std::string& listen,
    std::function<void(uint16_t node, const std::string& topic, const std::string& blob)> also =
        {});

}  // namespace drtmx::bench
