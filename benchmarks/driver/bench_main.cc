// drtmx-bench: options (command line or --config file), the local-cluster
// launcher (coordinator here, nodes as processes or threads, a progress
// line per second) and main.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench.h"
#include "process_group.h"
#include "r2/control/control.h"
#include "r2/shm/shm_fabric.h"
#include "txn/policy.h"

namespace po = boost::program_options;

namespace drtmx::bench {

std::vector<std::string> BenchOptions::node_args(int n, const std::string& coord) const {
  std::vector<std::string> a = {
      "--bench=" + bench,
      "--fabric=" + fabric.backend,
      "--cluster=" + fabric.cluster,
      "--nodes=" + std::to_string(fabric.num_nodes),
      "--threads=" + std::to_string(fabric.threads),
      "--coroutines=" + std::to_string(coroutines),
      "--seconds=" + std::to_string(seconds),
      "--warmup=" + std::to_string(warmup),
      "--policy=" + policy,
      "--replicas=" + std::to_string(replicas),
      "--seed=" + std::to_string(seed),
      "--log-ring-kb=" + std::to_string(log_ring_kb),
      "--fabric-delay-ns=" + std::to_string(fabric.delay_ns),
      "--node=" + std::to_string(n),
      "--coordinator=" + coord,
  };
  for (const auto& [k, v] : overrides) a.push_back("--phase=" + k + "=" + v);
  for (const auto& [k, v] : workload) a.push_back("--" + k + "=" + v);
  if (!json.empty() && n == 0) a.push_back("--json=" + json);
  if (!fabric.device.empty()) a.push_back("--device=" + fabric.device);
  return a;
}

// Workload options every workload may use; make_workload() reads the ones
// of its workload and rejects values it cannot use.
static const char* kWorkloadKeys[] = {"accounts", "hot-pct", "hot-access-pct", "mix"};

Result<BenchOptions> parse_bench(int argc, char** argv) {
  BenchOptions o;
  uint32_t nodes = 3, threads = 1, coroutines = 8, replicas = 0;
  std::string fabric = "shm", config;
  std::vector<std::string> phases;
  po::options_description desc("drtmx-bench: a transactional workload on a local cluster\nOptions");
  desc.add_options()("help,h", "show this help")("config", po::value(&config),
                                                 "read options from this file (key = value lines)")(
      "bench", po::value(&o.bench)->default_value("smallbank"), "smallbank")(
      "fabric", po::value(&fabric)->default_value("shm"), "shm | verbs")(
      "nodes", po::value(&nodes)->default_value(3), "nodes in the cluster")(
      "threads", po::value(&threads)->default_value(1), "worker threads per node")(
      "coroutines", po::value(&coroutines)->default_value(8), "transaction coroutines per thread")(
      "seconds", po::value(&o.seconds)->default_value(10), "measured seconds")(
      "warmup", po::value(&o.warmup)->default_value(2), "seconds before measuring")(
      "policy", po::value(&o.policy)->default_value("drtmh"),
      ("protocol preset: " + txn::policy_presets()).c_str())(
      "phase", po::value(&phases)->composing(),
      "per-phase override KEY=VALUE (execute, lock, validate, log, commit, passive-ack, "
      "ro-read, ro-validate), repeatable")(
      "replicas", po::value(&replicas)->default_value(0),
      "copies of each partition, 1..3 (0: 3, or the node count if smaller)")(
      "inprocess", po::bool_switch(&o.inprocess), "run the nodes as threads of this process")(
      "local", "run the nodes as local processes (the default)")(
      "json", po::value(&o.json), "also write the report to this JSON file")(
      "seed", po::value(&o.seed)->default_value(1), "random seed of the run")(
      "log-ring-kb", po::value(&o.log_ring_kb)->default_value(1024),
      "replication log ring per (coordinator thread, backup), KiB")(
      "fabric-delay-ns", po::value(&o.fabric.delay_ns)->default_value(0),
      "shm: completions and messages become visible this long after sending")(
      "cluster", po::value(&o.fabric.cluster), "shm segment prefix (default drtmxbench-<pid>)")(
      "device", po::value(&o.fabric.device), "verbs: RDMA device")(
      "node", po::value(&o.node), "run only this node (started by a launcher)")(
      "coordinator", po::value(&o.coordinator), "node mode: host:port of the coordinator");
  po::options_description wl("Workload options (SmallBank)");
  std::map<std::string, std::string*> wl_vals;
  static std::map<std::string, std::string> storage;
  for (const char* k : kWorkloadKeys) {
    wl.add_options()(k, po::value(&storage[k]), "");
    wl_vals[k] = &storage[k];
  }
  desc.add(wl);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    if (vm.count("config")) {
      std::ifstream in(vm["config"].as<std::string>());
      if (!in) {
        return invalid_argument("--config=" + vm["config"].as<std::string>() +
                                ": cannot open the file");
      }
      po::store(po::parse_config_file(in, desc), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return invalid_argument(std::string(e.what()) + " (see --help)");
  }
  if (vm.count("help")) {
    std::ostringstream os;
    os << desc;
    return not_found(os.str());
  }
  auto bad = [](const std::string& m) { return invalid_argument(m + " (see --help)"); };
  if (nodes < 1 || nodes > 64) return bad("--nodes must be 1..64");
  if (threads < 1 || threads > 64) return bad("--threads must be 1..64");
  if (coroutines < 1 || coroutines > 256) return bad("--coroutines must be 1..256");
  if (replicas > 3 || (replicas != 0 && replicas > nodes)) {
    return bad("--replicas=" + std::to_string(replicas) +
               " needs 1..3 and at most --nodes=" + std::to_string(nodes));
  }
  if (!(o.seconds > 0 && o.seconds <= 3600)) return bad("--seconds must be in (0, 3600]");
  if (!(o.warmup >= 0 && o.warmup <= 3600)) return bad("--warmup must be in [0, 3600]");
  if (o.log_ring_kb < 16 || o.log_ring_kb > (1u << 20))
    return bad("--log-ring-kb must be 16..1048576");
  for (const std::string& p : phases) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) return bad("--phase=" + p + ": expected KEY=VALUE");
    o.overrides[p.substr(0, eq)] = p.substr(eq + 1);
  }
  for (auto& [k, v] : wl_vals) {
    if (vm.count(k)) o.workload[k] = *v;
  }
  o.fabric.backend = fabric;
  o.fabric.num_nodes = static_cast<uint16_t>(nodes);
  o.fabric.threads = static_cast<uint16_t>(threads);
  o.coroutines = static_cast<uint16_t>(coroutines);
  o.replicas = static_cast<uint16_t>(replicas);
  if (!vm.count("cluster")) o.fabric.cluster = "drtmxbench-" + std::to_string(getpid());
  o.fabric.node = o.node >= 0 ? static_cast<uint16_t>(o.node) : 0;
  if (o.node >= static_cast<int>(nodes))
    return bad("--node=" + std::to_string(o.node) + " is not below --nodes");
  if (o.node >= 0 && o.coordinator.empty()) return bad("--node needs --coordinator=HOST:PORT");
  DRTMX_RETURN_IF_ERROR(o.fabric.validate());
  // Fail early on a bad policy or workload option, before any node starts.
  auto pol = txn::make_policy(o.policy, o.overrides, o.fabric.backend == "shm");
  if (!pol.is_ok()) return pol.status();
  auto w = make_workload(o);
  if (!w.is_ok()) return w.status();
  return o;
}

Status run_local_cluster(const BenchOptions& o) {
  const bool shm = o.fabric.backend == "shm";
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  std::mutex mu;
  std::map<int, std::pair<int, uint64_t>> progress;  // second -> (nodes reported, commits)
  r2::ControlServerConfig sc;
  sc.listen = "127.0.0.1:0";
  sc.cluster = o.fabric.cluster;
  sc.num_nodes = o.fabric.num_nodes;
  sc.join_timeout = std::chrono::milliseconds(30000);
  const uint16_t nodes = o.fabric.num_nodes;
  sc.on_publish = [&](uint16_t, const std::string& topic, const std::string& blob) {
    if (topic != "progress") return;
    std::istringstream is(blob);
    int sec = 0;
    uint64_t n = 0;
    if (!(is >> sec >> n)) return;
    std::lock_guard<std::mutex> g(mu);
    auto& p = progress[sec];
    p.first += 1;
    p.second += n;
    if (p.first == nodes)
      std::cout << "  [" << sec << " s] " << p.second << " committed/s" << std::endl;
  };
  auto server = r2::ControlServer::start(sc);
  if (!server.is_ok()) return server.status();
  const std::string coord = "127.0.0.1:" + std::to_string((*server)->port());
  const auto limit =
      std::chrono::milliseconds(static_cast<int64_t>((o.seconds + o.warmup) * 1000) + 180000);
  Status result;
  if (!o.inprocess) {
    ProcessGroup group;
    const std::string exe = self_exe();
    for (int n = 0; n < nodes && result.is_ok(); ++n) {
      result = group.spawn("node " + std::to_string(n), exe, o.node_args(n, coord));
    }
    if (result.is_ok()) result = group.wait_all(limit);
  } else {
    std::vector<std::thread> ts;
    std::vector<Status> st(nodes);
    for (uint16_t n = 0; n < nodes; ++n) {
      ts.emplace_back([&, n] {
        BenchOptions mine = o;
        mine.node = n;
        mine.fabric.node = n;
        mine.coordinator = coord;
        st[n] = run_bench_node(mine);
      });
    }
    for (auto& t : ts) t.join();
    for (uint16_t n = 0; n < nodes; ++n) {
      if (!st[n].is_ok() && result.is_ok())
        result = st[n].with_context("node " + std::to_string(n));
    }
  }
  if (result.is_ok()) result = (*server)->wait_done(std::chrono::milliseconds(5000));
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  return result;
}

}  // namespace drtmx::bench

int main(int argc, char** argv) {
  using namespace drtmx::bench;
  auto o = parse_bench(argc, argv);
  if (!o.is_ok()) {
    if (o.status().code() == drtmx::Code::kNotFound) {
      std::cout << o.status().message() << "\n";
      return 0;
    }
    std::cerr << "drtmx-bench: " << o.status().to_string() << "\n";
    return 2;
  }
  const drtmx::Status st = o->node >= 0 ? run_bench_node(*o) : run_local_cluster(*o);
  if (!st.is_ok()) {
    std::cerr << "drtmx-bench: " << st.to_string() << "\n";
    return 1;
  }
  return 0;
}
