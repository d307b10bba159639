// store-bench: YCSB A-F over the storage layer (store/tables) on a local
// cluster, comparing the one-sided path (location cache / learned cache)
// with RPC to the owner. See README.md ("store-bench").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric_config.h"
#include "ycsb.h"

namespace drtmx::bench {

struct StoreBenchOptions {
  r2::FabricConfig fabric;  // backend, nodes, threads
  uint16_t coroutines = 8;
  std::string table = "hash";  // hash | ordered
  std::string workload = "c";  // a..f
  YcsbMix mix;
  uint64_t keys = 1'000'000;
  uint32_t value_size = 8;
  KeyDist dist = KeyDist::kUniform;
  std::string dist_name = "uniform";
  double theta = 0.99;
  std::vector<std::string> paths = {"onesided", "rpc"};  // measured in this order
  double seconds = 3;
  double warmup = 1;
  int64_t cache_mb = -1;          // -1: large enough for every key; 0: no location cache
  uint32_t keys_per_model = 100;  // ordered: XCacheOptions::train_keys_per_model
  std::string json;
  uint32_t join_timeout_ms = 20000;
};

// What one path measured (summed over nodes).
struct PathResult {
  std::string path;
  double mops = 0;
  double p50_us = 0;
  double p99_us = 0;
  uint64_t ops = 0;
  uint64_t gets = 0;
  double reads_per_get = 0;
  double round_trips_per_get = 0;  // ordered tables: READ doorbell batches per GET
  uint64_t fallbacks = 0;          // ordered: GETs/SCANs answered by RPC on the one-sided path
  uint64_t errors = 0;             // insert of an existing key etc. (counted, not fatal)
};

// Parses argv; --help gives kNotFound with the usage text.
Result<StoreBenchOptions> parse_store_bench(int argc, char** argv);
// Runs the whole local cluster (nodes as thread groups of this process) and
// fills one result per path; prints the table and writes the JSON file.
Result<std::vector<PathResult>> run_store_bench(const StoreBenchOptions& o);

}  // namespace drtmx::bench
