// r2-bench: options, and the three ways to run — all nodes as thread groups
// of this process (default), every node its own process (--processes), or
// one node of a cluster started elsewhere (--node=N, multi-host).
#include <unistd.h>

#include <boost/program_options.hpp>

#include "command_line.h"
#include "exit_code.h"
#include "local_cluster.h"
#include "node_options.h"
#include "r2_bench.h"

namespace po = boost::program_options;

namespace drtmx::bench {

std::vector<std::string> R2BenchOptions::node_args(int n, const std::string& coord) const {
  std::vector<std::string> a = {
      "--fabric=" + fabric.backend,
      "--cluster=" + fabric.cluster,
      "--nodes=" + std::to_string(fabric.num_nodes),
      "--threads=" + std::to_string(fabric.threads),
      "--coroutines=" + std::to_string(coroutines),
      "--op=" + op_name,
      "--payload=" + std::to_string(payload),
      "--batch=" + std::to_string(batch),
      "--seconds=" + std::to_string(seconds),
      "--warmup=" + std::to_string(warmup),
      "--fabric-delay-ns=" + std::to_string(fabric.delay_ns),
      "--region-mb=" + std::to_string(region_mb),
      "--issuers=" + std::to_string(issuers),
  };
  append_node_args(a, fabric, join_timeout_ms, n, coord);
  if (passive_ack) a.push_back("--passive-ack");
  if (!json.empty() && n == 0) a.push_back("--json=" + json);
  return a;
}

Result<R2BenchOptions> parse_r2_bench(int argc, char** argv) {
  R2BenchOptions o;
  uint32_t nodes = 2, threads = 1, coroutines = 8;
  std::string fabric = "shm";
  po::options_description desc(
      "r2-bench: one-sided READ/WRITE/CAS/FAA and RPC echo between the nodes of a cluster\n"
      "Options");
  desc.add_options()("help,h", "show this help")("fabric", po::value(&fabric)->default_value("shm"),
                                                 "shm | verbs | ucx")(
      "nodes", po::value(&nodes)->default_value(2), "nodes in the cluster")(
      "threads", po::value(&threads)->default_value(1), "worker threads per node")(
      "coroutines", po::value(&coroutines)->default_value(8), "coroutines per worker thread")(
      "op", po::value(&o.op_name)->default_value("read"), "read | write | cas | faa | rpc")(
      "payload", po::value(&o.payload)->default_value(64),
      "bytes per READ/WRITE or RPC request (atomics always move 8)")(
      "batch", po::value(&o.batch)->default_value(1),
      "ops per doorbell (one-sided) or requests per flush (rpc), 1..64")(
      "seconds", po::value(&o.seconds)->default_value(3), "measured seconds")(
      "warmup", po::value(&o.warmup)->default_value(1), "seconds before measuring")(
      "fabric-delay-ns", po::value(&o.fabric.delay_ns)->default_value(0),
      "shm: completions and messages become visible this long after sending")(
      "passive-ack", po::bool_switch(&o.passive_ack),
      "rpc: one-way messages acknowledged on later traffic; one-sided: only the last op "
      "of each batch is signaled")("json", po::value(&o.json),
                                   "also write the report as JSON to this file")(
      "processes", po::bool_switch(&o.processes), "run every node as its own process")(
      "cluster", po::value(&o.fabric.cluster),
      "cluster name (names shm segments); default r2bench-<pid>")(
      "region-mb", po::value(&o.region_mb)->default_value(4), "registered data MiB per node")(
      "issuers", po::value(&o.issuers)->default_value(0),
      "only nodes 0..N-1 issue ops, the others just serve (idle targets); 0: every node")(
      "mtu", po::value(&o.fabric.mtu)->default_value(4096), "largest message payload")(
      "device", po::value(&o.fabric.device), "verbs: RDMA device name (default: first)")(
      "node", po::value(&o.node), "run only this node of a cluster started elsewhere")(
      "coordinator", po::value(&o.coordinator),
      "with --node: the coordinator's host:port; otherwise where to listen")(
      "host-coordinator", po::bool_switch(&o.host_coordinator),
      "with --node=0: this node also serves the coordinator at --coordinator")(
      "join-timeout-ms", po::value(&o.join_timeout_ms)->default_value(20000),
      "how long nodes wait for each other at start")(
      "suite", po::value(&o.suite),
      "thesis: run the Fig 2-4 / 2-5 comparisons back to back (--seconds each) and print them "
      "with their ratios");
  add_membership_options(desc, o.fabric);
  add_cluster_key_option(desc, o.cluster_key_file);
  po::variables_map vm;
  DRTMX_RETURN_IF_ERROR(
      parse_command_line(desc, argc, argv, vm, nullptr, "\n(run r2-bench --help for the options)"));
  auto bad = [](const std::string& m) { return invalid_argument(m); };
  if (o.op_name == "read")
    o.op = Op::kRead;
  else if (o.op_name == "write")
    o.op = Op::kWrite;
  else if (o.op_name == "cas")
    o.op = Op::kCas;
  else if (o.op_name == "faa")
    o.op = Op::kFaa;
  else if (o.op_name == "rpc")
    o.op = Op::kRpc;
  else
    return bad("--op=" + o.op_name + ": expected read, write, cas, faa or rpc");
  if (nodes == 0 || nodes > 256)
    return bad("--nodes=" + std::to_string(nodes) + ": expected 1..256");
  if (threads == 0 || threads > 64)
    return bad("--threads=" + std::to_string(threads) + ": expected 1..64");
  if (coroutines == 0 || coroutines > 256) {
    return bad("--coroutines=" + std::to_string(coroutines) + ": expected 1..256");
  }
  if (o.issuers > nodes) {
    return bad("--issuers=" + std::to_string(o.issuers) + ": expected 0..--nodes (" +
               std::to_string(nodes) + ")");
  }
  if (o.batch == 0 || o.batch > 64)
    return bad("--batch=" + std::to_string(o.batch) + ": expected 1..64");
  if (!(o.seconds > 0 && o.seconds <= 3600))
    return bad("--seconds: expected more than 0, at most 3600");
  if (!(o.warmup >= 0 && o.warmup <= 600)) return bad("--warmup: expected 0..600");
  if (o.region_mb == 0 || o.region_mb > 65536) return bad("--region-mb: expected 1..65536");
  if (o.op == Op::kCas || o.op == Op::kFaa) o.payload = 8;
  if (o.payload == 0 || o.payload > o.region_mb * (1u << 20)) {
    return bad("--payload=" + std::to_string(o.payload) + ": expected 1..region size");
  }
  if (o.op == Op::kRpc && o.payload > (1u << 20)) {
    return bad("--payload=" + std::to_string(o.payload) + ": RPC payloads are limited to 1 MiB");
  }
  DRTMX_RETURN_IF_ERROR(check_node_option(o.node, nodes, o.coordinator));
  if (o.host_coordinator && o.node != 0) return bad("--host-coordinator needs --node=0");
  if (!o.suite.empty() && o.suite != "thesis") {
    return bad("--suite=" + o.suite + ": the only suite is 'thesis'");
  }
  if (!o.suite.empty() && (o.node >= 0 || o.processes)) {
    return bad("--suite runs its nodes as threads; drop --node/--processes");
  }
  if (o.processes && o.node >= 0) return bad("--processes and --node exclude each other");
  // A node started on its own is a process of its own (the report says so).
  if (o.node >= 0) o.processes = true;
  o.fabric.backend = fabric;
  o.fabric.num_nodes = static_cast<uint16_t>(nodes);
  o.fabric.threads = static_cast<uint16_t>(threads);
  o.coroutines = static_cast<uint16_t>(coroutines);
  if (!vm.count("cluster")) o.fabric.cluster = "r2bench-" + std::to_string(getpid());
  // Rings big enough for every coroutine's batch of requests.
  o.fabric.ring_bytes = 256 * 1024;
  o.fabric.node = o.node >= 0 ? static_cast<uint16_t>(o.node) : 0;
  DRTMX_RETURN_IF_ERROR(o.fabric.validate());
  DRTMX_RETURN_IF_ERROR(resolve_cluster_key(o.cluster_key_file, o.node, o.fabric));
  return o;
}

Status run_local_cluster(const R2BenchOptions& o) {
  auto cluster =
      LocalCluster::start(o.fabric, o.coordinator, std::chrono::milliseconds(o.join_timeout_ms));
  if (!cluster) return cluster.status();
  const std::string& coord = cluster->coordinator();
  const auto limit = std::chrono::milliseconds(static_cast<int64_t>((o.seconds + o.warmup) * 1000) +
                                               o.join_timeout_ms + 60000);
  Status result;
  if (o.processes) {
    result = run_node_processes(o.fabric, limit, [&](int n) { return o.node_args(n, coord); });
  } else {
    result = run_node_threads(o.fabric.num_nodes,
                              [&](uint16_t n) { return run_r2_bench_node(as_node(o, n, coord)); });
  }
  return cluster->finish(result);
}

}  // namespace drtmx::bench

int main(int argc, char** argv) {
  using namespace drtmx::bench;
  constexpr const char* kProgram = "r2-bench";
  auto o = parse_r2_bench(argc, argv);
  if (!o) return options_exit_code(kProgram, o.status());
  if (o->node >= 0) {
    auto host = HostedCoordinator::start(o->host_coordinator, o->fabric, o->coordinator,
                                         std::chrono::milliseconds(o->join_timeout_ms));
    if (!host) return exit_code(kProgram, host.status());
    return exit_code(kProgram, host->finish(run_r2_bench_node(*o)));
  }
  return exit_code(kProgram, o->suite.empty() ? run_local_cluster(*o) : run_suite(*o));
}
