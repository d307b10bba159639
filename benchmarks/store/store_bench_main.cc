// store-bench: options and main. See README.md ("store-bench").
#include <unistd.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <sstream>

#include "command_line.h"
#include "r2/control/cluster_key.h"
#include "r2/shm/segment.h"
#include "store_bench.h"

namespace po = boost::program_options;

namespace drtmx::bench {

Result<StoreBenchOptions> parse_store_bench(int argc, char** argv) {
  StoreBenchOptions o;
  uint32_t nodes = 2, threads = 1, coroutines = 8;
  std::string fabric = "shm", path = "both", dist;
  po::options_description desc(
      "store-bench: YCSB A-F over the drtmx storage layer, one-sided vs RPC\nOptions");
  desc.add_options()("help,h", "show this help")("fabric", po::value(&fabric)->default_value("shm"),
                                                 "shm (verbs: not yet for store-bench)")(
      "nodes", po::value(&nodes)->default_value(2), "nodes (one partition each)")(
      "threads", po::value(&threads)->default_value(1), "worker threads per node")(
      "coroutines", po::value(&coroutines)->default_value(8), "client coroutines per thread")(
      "table", po::value(&o.table)->default_value("hash"), "hash | ordered")(
      "workload", po::value(&o.workload)->default_value("c"),
      "YCSB workload a | b | c | d | e | f")("keys", po::value(&o.keys)->default_value(1'000'000),
                                             "keys loaded")(
      "value-size", po::value(&o.value_size)->default_value(8), "value bytes (8 .. 4096)")(
      "dist", po::value(&dist), "uniform | zipfian (default: the workload's own)")(
      "theta", po::value(&o.theta)->default_value(0.99), "zipfian constant (0 < theta < 1)")(
      "path", po::value(&path)->default_value("both"),
      "onesided | rpc | both (one-sided, then RPC, in one run)")(
      "seconds", po::value(&o.seconds)->default_value(3), "measured seconds per path")(
      "warmup", po::value(&o.warmup)->default_value(1), "seconds before measuring, per path")(
      "cache-mb", po::value(&o.cache_mb)->default_value(-1),
      "hash location cache per node in MiB; 0 = no cache, -1 = room for every key")(
      "keys-per-model", po::value(&o.keys_per_model)->default_value(100),
      "ordered tables: keys per learned sub-model when the cache is trained (fewer: a larger "
      "cache, fewer predicted leaves and bytes per GET)")(
      "json", po::value(&o.json), "also write the results to this JSON file")(
      "cluster", po::value(&o.fabric.cluster),
      "shm segment name prefix (default storebench-<pid>)");
  po::variables_map vm;
  DRTMX_RETURN_IF_ERROR(parse_command_line(desc, argc, argv, vm));
  auto bad = [](const std::string& m) { return invalid_argument(m + " (see --help)"); };
  if (fabric != "shm") {
    return bad("--fabric=" + fabric +
               ": store-bench runs its nodes in one process and needs --fabric=shm");
  }
  if (nodes < 1 || nodes > 64) return bad("--nodes must be 1..64");
  if (threads < 1 || threads > 64) return bad("--threads must be 1..64");
  if (coroutines < 1 || coroutines > 256) return bad("--coroutines must be 1..256");
  if (o.table != "hash" && o.table != "ordered") {
    return bad("--table=" + o.table + ": use hash or ordered");
  }
  auto mix = ycsb_mix(o.workload);
  if (!mix.is_ok()) return bad("--workload=" + o.workload + ": use one of a, b, c, d, e, f");
  o.mix = *mix;
  o.dist = o.mix.dist;
  o.dist_name = o.dist == KeyDist::kUniform   ? "uniform"
                : o.dist == KeyDist::kZipfian ? "zipfian"
                                              : "latest";
  if (!dist.empty()) {
    if (dist == "uniform") {
      o.dist = KeyDist::kUniform;
    } else if (dist == "zipfian") {
      o.dist = KeyDist::kZipfian;
    } else {
      return bad("--dist=" + dist + ": use uniform or zipfian");
    }
    o.dist_name = dist;
  }
  if (o.mix.scan > 0 && o.table != "ordered") {
    return bad("--workload=e scans: it needs --table=ordered");
  }
  if (o.keys < 1 || o.keys > (uint64_t{1} << 32)) return bad("--keys must be 1 .. 2^32");
  if (o.value_size < 8 || o.value_size > 4096) return bad("--value-size must be 8..4096");
  if (!(o.theta > 0 && o.theta < 1)) return bad("--theta must be in (0, 1)");
  if (path == "both") {
    o.paths = {"onesided", "rpc"};
  } else if (path == "onesided" || path == "rpc") {
    o.paths = {path};
  } else {
    return bad("--path=" + path + ": use onesided, rpc or both");
  }
  if (!(o.seconds > 0 && o.seconds <= 3600)) return bad("--seconds must be in (0, 3600]");
  if (!(o.warmup >= 0 && o.warmup <= 3600)) return bad("--warmup must be in [0, 3600]");
  if (o.cache_mb < -1) return bad("--cache-mb must be -1, 0 or a size in MiB");
  if (o.keys_per_model < 1 || o.keys_per_model > 100000) {
    return bad("--keys-per-model must be 1..100000");
  }
  o.fabric.backend = fabric;
  o.fabric.num_nodes = static_cast<uint16_t>(nodes);
  o.fabric.threads = static_cast<uint16_t>(threads);
  o.coroutines = static_cast<uint16_t>(coroutines);
  if (!vm.count("cluster")) o.fabric.cluster = "storebench-" + std::to_string(getpid());
  DRTMX_RETURN_IF_ERROR(o.fabric.validate());
  // Its nodes are threads of this process: a key of this run.
  auto key = r2::make_cluster_key();
  if (!key) return key.status();
  o.fabric.cluster_key = std::move(key.value());
  return o;
}

}  // namespace drtmx::bench

int main(int argc, char** argv) {
  using namespace drtmx::bench;
  auto o = parse_store_bench(argc, argv);
  if (!o.is_ok()) {
    if (o.status().code() == drtmx::Code::kNotFound) {
      std::cout << o.status().message() << "\n";
      return 0;
    }
    std::cerr << "store-bench: " << o.status().to_string() << "\n";
    return 2;
  }
  if (o->fabric.backend == "shm") {
    const std::string swept = drtmx::r2::shm::remove_orphan_segments("storebench").summary();
    if (!swept.empty()) std::cout << "store-bench: " << swept << "\n";
  }
  auto r = run_store_bench(*o);
  if (!r.is_ok()) {
    std::cerr << "store-bench: " << r.status().to_string() << "\n";
    return 1;
  }
  return 0;
}
