// rdpma-bench: options, and the ways to run — all nodes as thread groups of
// this process (default), every node its own process (--processes), or one
// node of a cluster started elsewhere (--node=N). One cluster run per
// --fabric-delay-ns value (the delay is a property of the fabric).
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "command_line.h"
#include "exit_code.h"
#include "json_writer.h"
#include "local_cluster.h"
#include "node_options.h"
#include "rdpma/fat_ptr.h"
#include "rdpma_bench.h"

namespace po = boost::program_options;

namespace drtmx::bench {

std::string PmemExperiment::name() const {
  return std::to_string(payload) + "B " + (aligned ? "aligned" : "raw") + " " +
         rdpma::method_name(method);
}

std::vector<PmemExperiment> RdpmaBenchOptions::experiments() const {
  std::vector<PmemExperiment> v;
  for (uint32_t p : payloads) {
    for (bool a : layouts) {
      for (rdpma::PersistMethod m : methods) v.push_back({p, a, m});
    }
  }
  return v;
}

std::string RdpmaBenchOptions::pool_path(uint16_t n) const {
  return pmem_dir + "/rdpma-bench." + fabric.cluster + ".n" + std::to_string(n) + ".pool";
}

namespace {

template <typename T, typename F>
std::string join(const std::vector<T>& v, F f) {
  std::string s;
  for (const T& x : v) s += (s.empty() ? "" : ",") + f(x);
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream is(s);
  while (std::getline(is, item, ',')) out.push_back(item);
  return out;
}

bool parse_u64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  *v = x;
  return true;
}

// Bytes a pool needs for the layout rdpma_bench_node.cc allocates.
uint64_t pool_bytes_needed(const RdpmaBenchOptions& o) {
  uint64_t n = rdpma::kPoolHeaderBytes;
  for (uint32_t p : o.payloads) {
    n += uint64_t{o.slots} * rdpma::alloc_span(p) + rdpma::kXPLine;         // aligned slots
    n += uint64_t{o.slots} * (rdpma::alloc_span(p) + 64) + rdpma::kXPLine;  // raw area
  }
  n += uint64_t{o.fabric.num_nodes} * 3 * rdpma::kLine;  // check slots
  return n;
}

}  // namespace

std::vector<std::string> RdpmaBenchOptions::node_args(int n, const std::string& coord,
                                                      const std::string& json_part) const {
  std::vector<std::string> a = {
      "--fabric=" + fabric.backend,
      "--cluster=" + fabric.cluster,
      "--nodes=" + std::to_string(fabric.num_nodes),
      "--threads=" + std::to_string(fabric.threads),
      "--coroutines=" + std::to_string(coroutines),
      "--payloads=" + join(payloads, [](uint32_t p) { return std::to_string(p); }),
      "--methods=" +
          join(methods, [](rdpma::PersistMethod m) { return std::string(rdpma::method_name(m)); }),
      "--layouts=" + join(layouts, [](bool a) { return std::string(a ? "aligned" : "raw"); }),
      "--fabric-delay-ns=" + std::to_string(fabric.delay_ns),
      "--seconds=" + std::to_string(seconds),
      "--warmup=" + std::to_string(warmup),
      "--pmem-dir=" + pmem_dir,
      "--pool-mb=" + std::to_string(pool_mb),
      "--slots=" + std::to_string(slots),
  };
  append_node_args(a, fabric, join_timeout_ms, n, coord);
  if (keep_pools) a.push_back("--keep-pools");
  if (n == 0 && !json_part.empty()) a.push_back("--json-part=" + json_part);
  return a;
}

Result<RdpmaBenchOptions> parse_rdpma_bench(int argc, char** argv) {
  RdpmaBenchOptions o;
  uint32_t nodes = 2, threads = 1, coroutines = 8;
  std::string fabric, payloads, methods, layouts, delays;
  po::options_description desc(
      "rdpma-bench: persistent remote writes (RDPMA PWrite) between the nodes of a cluster —\n"
      "H9 vs strawman, aligned/padded vs raw, one-sided vs two-sided, by payload\nOptions");
  auto add = desc.add_options();
  add("help,h", "show this help");
  add("fabric", po::value(&fabric)->default_value("shm"), "shm | verbs");
  add("nodes", po::value(&nodes)->default_value(2), "nodes in the cluster (1..64)");
  add("threads", po::value(&threads)->default_value(1), "worker threads per node (1..16)");
  add("coroutines", po::value(&coroutines)->default_value(8), "coroutines per worker (1..64)");
  add("payloads", po::value(&payloads)->default_value("16,64,256,1024,4096"),
      "payload bytes to measure, a list (1..65536 each)");
  add("methods", po::value(&methods)->default_value("h9,strawman,two-sided"),
      "PWrite methods, a list of h9, strawman, two-sided");
  add("layouts", po::value(&layouts)->default_value("aligned,raw"),
      "aligned (a FatPtr: aligned and padded, H5/H6) and/or raw (misaligned, unpadded)");
  add("fabric-delay-ns", po::value(&delays)->default_value("0"),
      "shm: completions and messages become visible this long after sending; a list runs one "
      "cluster per value");
  add("seconds", po::value(&o.seconds)->default_value(1), "measured seconds per experiment");
  add("warmup", po::value(&o.warmup)->default_value(0.2), "seconds before each measurement");
  add("pmem-dir", po::value(&o.pmem_dir)->default_value("/dev/shm"),
      "directory of the pool files (a DAX mount: pmem; tmpfs: memfs; a disk: msync)");
  add("pool-mb", po::value(&o.pool_mb)->default_value(16), "MiB per node's pool");
  add("slots", po::value(&o.slots)->default_value(256),
      "write targets per payload and layout in each pool (1..4096)");
  add("keep-pools", po::bool_switch(&o.keep_pools), "leave the pool files after the run");
  add("json", po::value(&o.json), "also write the results as JSON to this file");
  add("processes", po::bool_switch(&o.processes), "run every node as its own process");
  add("cluster", po::value(&o.fabric.cluster),
      "cluster name (names shm segments and pool files); default rdpmabench-<pid>");
  add("mtu", po::value(&o.fabric.mtu)->default_value(4096), "largest message payload");
  add("device", po::value(&o.fabric.device), "verbs: RDMA device name (default: first)");
  add("node", po::value(&o.node), "run only this node of a cluster started elsewhere");
  add("coordinator", po::value(&o.coordinator),
      "with --node: the coordinator's host:port; otherwise where to listen");
  add("host-coordinator", po::bool_switch(&o.host_coordinator),
      "with --node=0: this node also serves the coordinator at --coordinator");
  add("join-timeout-ms", po::value(&o.join_timeout_ms)->default_value(20000),
      "how long nodes wait for each other at start");
  add("json-part", po::value(&o.json_part),
      "(internal, launcher -> node 0) where to write the run");
  add_membership_options(desc, o.fabric);
  add_cluster_key_option(desc, o.cluster_key_file);
  po::variables_map vm;
  DRTMX_RETURN_IF_ERROR(parse_command_line(desc, argc, argv, vm));
  auto bad = [](const std::string& m) { return invalid_argument(m + " (see --help)"); };
  if (fabric != "shm" && fabric != "verbs") return bad("--fabric=" + fabric + ": use shm or verbs");
  if (nodes == 0 || nodes > 64) return bad("--nodes=" + std::to_string(nodes) + ": expected 1..64");
  if (threads == 0 || threads > 16) {
    return bad("--threads=" + std::to_string(threads) + ": expected 1..16");
  }
  if (coroutines == 0 || coroutines > 64) {
    return bad("--coroutines=" + std::to_string(coroutines) + ": expected 1..64");
  }
  o.payloads.clear();
  for (const std::string& s : split(payloads)) {
    uint64_t v = 0;
    if (!parse_u64(s, &v) || v == 0 || v > 65536) {
      return bad("--payloads=" + payloads + ": '" + s + "' is not a byte count 1..65536");
    }
    o.payloads.push_back(static_cast<uint32_t>(v));
  }
  if (o.payloads.empty()) return bad("--payloads is empty");
  o.methods.clear();
  for (const std::string& s : split(methods)) {
    if (s == "h9") {
      o.methods.push_back(rdpma::PersistMethod::kH9);
    } else if (s == "strawman") {
      o.methods.push_back(rdpma::PersistMethod::kStrawman);
    } else if (s == "two-sided") {
      o.methods.push_back(rdpma::PersistMethod::kTwoSided);
    } else {
      return bad("--methods=" + methods + ": '" + s + "' is not h9, strawman or two-sided");
    }
  }
  if (o.methods.empty()) return bad("--methods is empty");
  o.layouts.clear();
  for (const std::string& s : split(layouts)) {
    if (s != "aligned" && s != "raw") {
      return bad("--layouts=" + layouts + ": '" + s + "' is not aligned or raw");
    }
    o.layouts.push_back(s == "aligned");
  }
  if (o.layouts.empty()) return bad("--layouts is empty");
  o.delays_ns.clear();
  for (const std::string& s : split(delays)) {
    uint64_t v = 0;
    if (!parse_u64(s, &v) || v > 1'000'000'000) {
      return bad("--fabric-delay-ns=" + delays + ": '" + s + "' is not 0..1000000000");
    }
    o.delays_ns.push_back(v);
  }
  if (o.delays_ns.empty()) return bad("--fabric-delay-ns is empty");
  if (fabric == "verbs" && (o.delays_ns.size() != 1 || o.delays_ns[0] != 0)) {
    return bad("--fabric-delay-ns applies to --fabric=shm only");
  }
  if (!(o.seconds > 0 && o.seconds <= 3600))
    return bad("--seconds: expected more than 0, at most 3600");
  if (!(o.warmup >= 0 && o.warmup <= 600)) return bad("--warmup: expected 0..600");
  if (o.slots == 0 || o.slots > 4096) {
    return bad("--slots=" + std::to_string(o.slots) + ": expected 1..4096");
  }
  if (o.pool_mb == 0 || o.pool_mb > 65536) return bad("--pool-mb: expected 1..65536");
  struct stat st {};
  if (o.pmem_dir.empty() || ::stat(o.pmem_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return bad("--pmem-dir=" + o.pmem_dir + ": not an existing directory");
  }
  if (::access(o.pmem_dir.c_str(), W_OK) != 0) {
    return bad("--pmem-dir=" + o.pmem_dir + ": not writable");
  }
  if (Status s = check_node_option(o.node, nodes, o.coordinator); !s.is_ok()) {
    return bad(s.message());
  }
  if (o.node >= 0 && o.delays_ns.size() != 1) {
    return bad("--node runs one cluster: give --fabric-delay-ns one value");
  }
  if (o.host_coordinator && o.node != 0) return bad("--host-coordinator needs --node=0");
  if (o.processes && o.node >= 0) return bad("--processes and --node exclude each other");
  if (o.node >= 0) o.processes = true;
  o.fabric.backend = fabric;
  o.fabric.num_nodes = static_cast<uint16_t>(nodes);
  o.fabric.threads = static_cast<uint16_t>(threads);
  o.fabric.delay_ns = o.delays_ns[0];
  o.coroutines = static_cast<uint16_t>(coroutines);
  if (!vm.count("cluster")) o.fabric.cluster = "rdpmabench-" + std::to_string(getpid());
  o.fabric.ring_bytes = 256 * 1024;
  o.fabric.node = o.node >= 0 ? static_cast<uint16_t>(o.node) : 0;
  const uint64_t need = pool_bytes_needed(o);
  if (need > uint64_t{o.pool_mb} << 20) {
    return bad("--pool-mb=" + std::to_string(o.pool_mb) + " is too small for --slots=" +
               std::to_string(o.slots) + " of every payload: it needs " +
               std::to_string((need + (1 << 20) - 1) >> 20) + " MiB");
  }
  DRTMX_RETURN_IF_ERROR(o.fabric.validate());
  DRTMX_RETURN_IF_ERROR(resolve_cluster_key(o.cluster_key_file, o.node, o.fabric));
  return o;
}

namespace {

void write_config(const RdpmaBenchOptions& o, JsonWriter& j) {
  j.key("fabric").value(o.fabric.backend).key("nodes").value(unsigned{o.fabric.num_nodes});
  j.key("threads")
      .value(unsigned{o.fabric.threads})
      .key("coroutines")
      .value(unsigned{o.coroutines});
  j.key("seconds").value(o.seconds, 3).key("warmup").value(o.warmup, 3);
  j.key("pmem_dir").value(o.pmem_dir).key("slots").value(o.slots);
  j.key("processes").value(o.processes);
  j.key("delays_ns").begin_array();
  for (uint64_t d : o.delays_ns) j.value(d);
  j.end_array();
}

// The document: config + the runs' objects (written by node 0 of each run).
Status write_document(const RdpmaBenchOptions& o, const std::vector<std::string>& parts) {
  JsonWriter j;
  j.begin_object();
  j.key("tool").value("rdpma-bench");
  j.key("config").begin_object();
  write_config(o, j);
  j.end_object();
  j.key("runs").begin_array();
  for (const std::string& p : parts) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in || ss.str().empty()) return io_error("reading the run results " + p, errno);
    j.raw(ss.str());
  }
  j.end_array().end_object();
  std::string err;
  if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  return Status::ok();
}

// One cluster (one delay): a coordinator here, the nodes as threads or
// child processes.
Status run_cluster(const RdpmaBenchOptions& o, const std::string& json_part) {
  auto cluster =
      LocalCluster::start(o.fabric, o.coordinator, std::chrono::milliseconds(o.join_timeout_ms));
  if (!cluster) return cluster.status();
  const std::string& coord = cluster->coordinator();
  const size_t n_exp = o.experiments().size();
  const auto limit = std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(n_exp) * (o.seconds + o.warmup + 1) * 1000) +
      o.join_timeout_ms + 60000);
  Status result;
  if (o.processes) {
    result = run_node_processes(o.fabric, limit,
                                [&](int n) { return o.node_args(n, coord, json_part); });
  } else {
    result = run_node_threads(o.fabric.num_nodes, [&](uint16_t n) {
      return run_rdpma_node(as_node(o, n, coord), n == 0 ? json_part : std::string());
    });
  }
  result = cluster->finish(result);
  if (!o.keep_pools) {
    // A node that failed early may have left its pool behind.
    for (uint16_t n = 0; n < o.fabric.num_nodes; ++n) ::unlink(o.pool_path(n).c_str());
  }
  return result;
}

}  // namespace

Status run_rdpma_local(const RdpmaBenchOptions& o) {
  std::vector<std::string> parts;
  Status st;
  for (size_t i = 0; i < o.delays_ns.size() && st.is_ok(); ++i) {
    RdpmaBenchOptions r = o;
    r.fabric.delay_ns = o.delays_ns[i];
    r.delays_ns = {o.delays_ns[i]};
    if (o.delays_ns.size() > 1) r.fabric.cluster = o.fabric.cluster + "-d" + std::to_string(i);
    const std::string part =
        o.json.empty() ? std::string() : o.json + ".run" + std::to_string(i) + ".part";
    if (!part.empty()) parts.push_back(part);
    st = run_cluster(r, part).with_context("the run with --fabric-delay-ns=" +
                                           std::to_string(o.delays_ns[i]));
  }
  if (st.is_ok() && !o.json.empty()) st = write_document(o, parts);
  for (const std::string& p : parts) ::unlink(p.c_str());
  return st;
}

}  // namespace drtmx::bench

int main(int argc, char** argv) {
  using namespace drtmx::bench;
  constexpr const char* kProgram = "rdpma-bench";
  auto o = parse_rdpma_bench(argc, argv);
  if (!o) return options_exit_code(kProgram, o.status());
  if (o->node < 0) return exit_code(kProgram, run_rdpma_local(*o));
  // One node of a cluster: started by a launcher (--json-part) or by hand.
  auto host = HostedCoordinator::start(o->host_coordinator, o->fabric, o->coordinator,
                                       std::chrono::milliseconds(o->join_timeout_ms));
  if (!host) return exit_code(kProgram, host.status());
  std::string part = o->json_part;
  const bool by_hand = part.empty() && !o->json.empty() && o->node == 0;
  if (by_hand) part = o->json + ".part";
  drtmx::Status st = host->finish(run_rdpma_node(*o, part));
  if (st.is_ok() && by_hand) st = write_document(*o, {part});
  if (by_hand) ::unlink(part.c_str());
  return exit_code(kProgram, st);
}
