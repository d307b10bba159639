// rdpma-bench: persistent remote writes (RDPMA PWrite) by payload — H9 vs
// the strawman, aligned/padded vs raw, one-sided vs two-sided — between
// the nodes of a cluster whose pools are persistent fabric regions.
// See README.md ("rdpma-bench") for the options and what a run shows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric_config.h"
#include "rdpma/client.h"

namespace drtmx::bench {

// One measured combination; every node runs the same list in the same order.
struct PmemExperiment {
  uint32_t payload = 64;
  bool aligned = true;  // FatPtr (aligned, padded) vs a raw, misaligned offset
  rdpma::PersistMethod method = rdpma::PersistMethod::kH9;
  std::string name() const;  // e.g. "64B aligned h9"
};

struct RdpmaBenchOptions {
  r2::FabricConfig fabric;  // backend, nodes, threads, delay (one value per cluster run)
  uint16_t coroutines = 8;
  std::vector<uint32_t> payloads = {16, 64, 256, 1024, 4096};
  std::vector<rdpma::PersistMethod> methods = {
      rdpma::PersistMethod::kH9, rdpma::PersistMethod::kStrawman, rdpma::PersistMethod::kTwoSided};
  std::vector<bool> layouts = {true, false};  // aligned, raw
  std::vector<uint64_t> delays_ns = {0};      // one cluster run per value
  double seconds = 1;                         // per experiment
  double warmup = 0.2;                        // per experiment
  std::string pmem_dir = "/dev/shm";
  uint32_t pool_mb = 16;
  uint32_t slots = 256;  // targets per payload and layout in each pool
  bool keep_pools = false;
  std::string json;
  std::string json_part;  // a node started by a launcher: where node 0 writes its run's object
  bool processes = false;
  int node = -1;                  // >= 0: one node of a cluster started elsewhere
  std::string coordinator;        // node mode: the coordinator; launcher: where to listen
  bool host_coordinator = false;  // node mode: this node also hosts the coordinator
  std::string cluster_key_file;   // --cluster-key-file ("": launcher makes a key)
  uint32_t join_timeout_ms = 20000;

  std::vector<PmemExperiment> experiments() const;
  // The pool file of node `n` of this cluster.
  std::string pool_path(uint16_t n) const;
  // The arguments that make a node process of the same run (one delay).
  std::vector<std::string> node_args(int node, const std::string& coordinator,
                                     const std::string& json_part) const;
};

// Parses argv; on --help returns kNotFound with the usage text as message.
Result<RdpmaBenchOptions> parse_rdpma_bench(int argc, char** argv);

// Runs every delay's cluster here (nodes as threads or processes), prints
// each run's table, writes the JSON file.
Status run_rdpma_local(const RdpmaBenchOptions& o);

// Runs node o.node of a cluster with delay o.fabric.delay_ns to the end:
// joins, measures every experiment, verifies the data both ways, removes
// its pool (unless keep_pools); node 0 prints the table and, when
// `json_part` is set, writes this run's JSON object there.
Status run_rdpma_node(const RdpmaBenchOptions& o, const std::string& json_part);

}  // namespace drtmx::bench
