// Options of drtmx-bench and drtmx-node (command line or --config file),
// validated before any node starts.
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench.h"
#include "check/models.h"
#include "command_line.h"
#include "exit_code.h"
#include "node_options.h"
#include "r2/control/cluster_key.h"
#include "txn/crash_point.h"
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
      "--xstore-refresh-keys=" + std::to_string(xstore_refresh_keys),
      "--versions-pct=" + std::to_string(versions_pct),
      "--min-versions=" + std::to_string(min_versions),
      "--fabric-delay-ns=" + std::to_string(fabric.delay_ns),
      "--node=" + std::to_string(n),
      "--coordinator=" + coord,
      "--join-timeout-ms=" + std::to_string(join_timeout_ms),
      "--timeline-ms=" + std::to_string(timeline_ms),
      // The key comes on standard input (BenchOptions::node_input), never
      // on a command line.
      kKeyFromStdinArg,
  };
  for (const auto& [k, v] : overrides) a.push_back("--phase=" + k + "=" + v);
  for (const auto& [k, v] : workload) a.push_back("--" + k + "=" + v);
  if (!json.empty() && n == 0) a.push_back("--json=" + json);
  if (!history.empty()) a.push_back("--history=" + history);
  if (test_fault != txn::TestFault::kNone)
    a.push_back(std::string("--test-fault=") + txn::test_fault_name(test_fault));
  if (!local_shortcuts) a.push_back("--local-shortcuts=off");
  if (!sibling_wait) a.push_back("--sibling-wait=off");
  if (durable) {
    a.push_back("--durability=pmem");
    a.push_back("--pmem-dir=" + pmem_dir);
    a.push_back("--journal-kb=" + std::to_string(journal_kb));
    if (format) a.push_back("--format");
    if (recover) a.push_back("--recover");
    if (!locks_apart) a.push_back("--lock-words=slots");
    // (A failover test's crash point goes with the faults below.)
    const bool failover_point = std::any_of(
        faults.begin(), faults.end(), [](const Fault& f) { return f.kind == Fault::kCrashPoint; });
    if (!crash_name.empty() && !failover_point) {
      a.push_back("--crash-point=" + crash_name + ":" + std::to_string(crash_node) + ":" +
                  std::to_string(crash_hit));
    }
  }
  std::ostringstream kills;
  for (const Fault& f : faults) {
    std::ostringstream k;
    if (f.kind == Fault::kKill) kills << (kills.tellp() > 0 ? "," : "") << f.node << '@' << f.at;
    if (f.kind == Fault::kStop) k << "--stop-node=" << f.node << '@' << f.at << '+' << f.stop_ms;
    if (f.kind == Fault::kPartition) {
      k << "--partition-node=" << f.node << '@' << f.at << '+' << f.stop_ms;
    }
    if (f.kind == Fault::kCrashPoint) {
      k << "--crash-point=" << crash_name << ':' << crash_node << ':' << crash_hit;
    }
    if (k.tellp() > 0) a.push_back(k.str());
  }
  if (kills.tellp() > 0) a.push_back("--kill-node=" + kills.str());
  append_membership_args(a, fabric);
  if (!fabric.device.empty()) a.push_back("--device=" + fabric.device);
  // --hosts: this node's own options replace the same options above.
  if (n >= 0 && static_cast<size_t>(n) < hosts.size()) {
    for (const std::string& opt : hosts[n].options) {
      const std::string key = opt.substr(0, opt.find('='));
      std::erase_if(a, [&](const std::string& x) { return x.substr(0, x.find('=')) == key; });
      a.push_back(opt);
    }
  }
  return a;
}

Result<BenchOptions> parse_bench(int argc, char** argv, const std::vector<WorkloadInfo>& known) {
  BenchOptions o;
  o.known = std::make_shared<const std::vector<WorkloadInfo>>(known);
  uint32_t nodes = 3, threads = 1, coroutines = 8, replicas = 0;
  std::string fabric = "shm", config, mvcc, durability = "off", crash_point, lock_words = "dram",
              local_shortcuts = "on", sibling_wait = "on", test_fault = "none";
  std::string kill_node, stop_node, partition_node;
  std::vector<std::string> phases;
  std::string names;
  for (const WorkloadInfo& w : known) names += (names.empty() ? "" : " | ") + w.name;
  po::options_description desc(
      "a transactional workload on a cluster (docs/benchmarks.md)\nOptions");
  desc.add_options()("help,h", "show this help")("config", po::value(&config),
                                                 "read options from this file (key = value lines)")(
      "bench", po::value(&o.bench)->default_value("smallbank"), names.c_str())(
      "fabric", po::value(&fabric)->default_value("shm"), "shm | verbs | ucx")(
      "nodes", po::value(&nodes)->default_value(3), "nodes in the cluster")(
      "threads", po::value(&threads)->default_value(1), "worker threads per node")(
      "coroutines", po::value(&coroutines)->default_value(8), "transaction coroutines per thread")(
      "seconds", po::value(&o.seconds)->default_value(10), "measured seconds")(
      "warmup", po::value(&o.warmup)->default_value(2), "seconds before measuring")(
      "policy", po::value(&o.policy)->default_value("drtmh"),
      ("protocol preset: " + txn::policy_presets() +
       "; drtmx-bench also takes a comma list or 'all' and runs each in turn, then prints "
       "them in one table")
          .c_str())(
      "phase", po::value(&phases)->composing(),
      "per-phase override KEY=VALUE (execute, lock, validate, log, commit, passive-ack, "
      "ro-read, ro-validate, mvcc), repeatable")(
      "mvcc", po::value(&mvcc),
      "multi-versioning: off | dst (snapshot read-only transactions by decentralized scalar "
      "timestamps; Validate and Commit stay one-sided on shm when the preset's are, else "
      "become RPCs) | gts (the centralized baseline: a "
      "timestamp oracle on node 0); default: the preset's (drtmx: dst, drtmx-gts: gts, the "
      "others: off)")(
      "versions-pct", po::value(&o.versions_pct)->default_value(2),
      "MVCC: each partition copy's version store holds this % of its table's capacity in old "
      "versions (at least --min-versions)")(
      "min-versions", po::value(&o.min_versions)->default_value(4096),
      "MVCC: the least versions a partition copy's version store holds, and each of its lanes "
      "(one per coordinator thread, one-sided commits on shm); raise it when the report shows "
      "versions refused for a table written much more than its size suggests (TPC-C's STOCK)")(
      "replicas", po::value(&replicas)->default_value(0),
      "copies of each partition, 1..3 (0: 3, or the node count if smaller)")(
      "inprocess", po::bool_switch(&o.inprocess), "run the nodes as threads of this process")(
      "local", "run the nodes as local processes (the default)")(
      "json", po::value(&o.json), "also write the report to this JSON file")(
      "history", po::value(&o.history),
      "write every transaction attempt to this file as a Jepsen history (JSON Lines; "
      "drtmx-check judges the append workload's); a --recover run continues it")(
      "test-fault", po::value(&test_fault)->default_value("none"),
      "TESTS ONLY: break the engine on purpose — skip-read-validation (Validate checks no read) "
      "or skip-log (no backup receives a commit) — to see drtmx-check reject the history")(
      "check-history", po::value(&o.check_history)->implicit_value("serializable"),
      "after the run, check the --history with drtmx-check under this model (default "
      "serializable; also strict-serializable, snapshot-isolation, ...); an invalid history "
      "fails the run")("seed", po::value(&o.seed)->default_value(1), "random seed of the run")(
      "log-ring-kb", po::value(&o.log_ring_kb)->default_value(1024),
      "replication log ring per (coordinator thread, backup), KiB")(
      "xstore-refresh-keys", po::value(&o.xstore_refresh_keys)->default_value(16),
      "a fallback RPC retrains its XStore sub-model once fallbacks x this >= the keys it "
      "holds (0: every fallback retrains)")(
      "fabric-delay-ns", po::value(&o.fabric.delay_ns)->default_value(0),
      "shm: completions and messages become visible this long after sending")(
      "cluster", po::value(&o.fabric.cluster), "shm segment prefix (default drtmxbench-<pid>)")(
      "device", po::value(&o.fabric.device), "verbs: RDMA device")(
      "node", po::value(&o.node), "drtmx-node: this node's id (0 .. nodes-1)")(
      "coordinator", po::value(&o.coordinator), "drtmx-node: host:port of the coordinator")(
      "host-coordinator", po::bool_switch(&o.host_coordinator),
      "drtmx-node with --node=0: also serve the coordinator at --coordinator")(
      "join-timeout-ms", po::value(&o.join_timeout_ms)->default_value(30000),
      "how long nodes wait for each other at start")(
      "local-shortcuts", po::value(&local_shortcuts)->default_value("on"),
      "on | off: a node reaches its own memory without the fabric's queues and completions "
      "(one-sided ops run at once, RPCs to its own thread run inline); off only to measure "
      "what that saves")(
      "sibling-wait", po::value(&sibling_wait)->default_value("on"),
      "on | off: a transaction about to read a record that another coroutine of its worker "
      "holds locked waits for that one to finish instead of aborting at validation; off only "
      "to measure what that saves")(
      "timeline-ms", po::value(&o.timeline_ms)->default_value(100),
      "the JSON report's timeline: committed/s of every interval this long (a divisor of "
      "1000, at least 10)")(
      "hosts", po::value(&o.hosts_file),
      "drtmx-bench: a multi-host cluster: FILE lists one host per line (node 0 first), each "
      "optionally followed by --key=value options for that node; drtmx-node is started on "
      "each through --remote-shell, and stopped on every exit")(
      "remote-shell", po::value(&o.remote_shell)->default_value("ssh -o BatchMode=yes"),
      "--hosts: the command that runs a command on a host: <remote-shell> HOST COMMAND")(
      "remote-exe", po::value(&o.remote_exe),
      "--hosts: drtmx-node's path on the hosts (default: the drtmx-node beside this "
      "drtmx-bench)")(
      "coordinator-host", po::value(&o.coordinator_host),
      "--hosts: the address at which the hosts reach this machine's coordinator (default: "
      "the address it binds)")(
      "coordinator-bind", po::value(&o.coordinator_bind),
      "the one local address the coordinator listens on (drtmx-bench; drtmx-node with "
      "--host-coordinator); '*' for every interface. Default: 127.0.0.1 for one-host runs; "
      "with --hosts, --coordinator-host if given, else this machine's address toward the "
      "hosts")(
      "sweep", po::value(&o.sweep),
      "drtmx-bench: KEY=V1,V2,... runs the experiment once per value of option --KEY (any "
      "option but the ones naming files or nodes, e.g. coroutines=1,2,4,8 or nodes=2,3,4), "
      "prints a table, and --json gets every point")(
      "rounds", po::value(&o.rounds)->default_value(1),
      "drtmx-bench: run the experiment (every preset of --policy, every --sweep point) this "
      "many times, odd rounds in order and even ones reversed, and compare the medians and "
      "the ratios within each round: for comparisons on a machine whose speed drifts");
  po::options_description dur("Durability (docs/benchmarks.md: Durability)");
  dur.add_options()(
      "durability", po::value(&durability)->default_value("off"),
      "off | pmem: tables, logs and an acknowledgement journal in pool files in --pmem-dir; a "
      "transaction is acknowledged once persistent at every copy")(
      "pmem-dir", po::value(&o.pmem_dir),
      "--durability=pmem: the directory of the pool files (persistent memory, /dev/shm or a "
      "disk); created if missing")(
      "format", po::bool_switch(&o.format),
      "replace the pool files of an earlier run (a first start refuses them otherwise)")(
      "recover", po::bool_switch(&o.recover),
      "restart from --pmem-dir instead of loading: recover, check the recovered database "
      "against the journals, then run as usual")(
      "lock-words", po::value(&lock_words)->default_value("dram"),
      "dram | slots: where the records' lock words and MVCC tuple timestamps live on durable "
      "nodes — in DRAM beside the pools (hint H8), or in the pooled record slots (only to "
      "measure what H8 saves)")(
      "journal-kb", po::value(&o.journal_kb)->default_value(1024),
      "acknowledgement journal: KiB of records kept per coroutine (older ones are folded "
      "into carried sums); a restart uses the journal's own size")(
      "crash-at", po::value(&o.crash_at)->default_value(0),
      "drtmx-bench: SIGKILL every node process this many seconds into the measured run (no "
      "clean shutdown); restart with --recover. Needs --durability=pmem")(
      "kill-node", po::value(&kill_node),
      "N@S[,N@S...]: SIGKILL node N's process S seconds into the measured run; the others "
      "detect it, promote backups, resolve its transactions and go on (implies "
      "--survive-failures); the report gives the failover times and the check runs on the "
      "survivors")(
      "stop-node", po::value(&stop_node),
      "N@S+MS: SIGSTOP node N's process S seconds into the measured run and SIGCONT it MS "
      "milliseconds later; beyond --lease-ms it is removed (the others fail over) and, resumed, "
      "it stops with the reason (implies --survive-failures)")(
      "partition-node", po::value(&partition_node),
      "--hosts: N@S+MS: cut node N's host off the network S seconds into the measured run "
      "(`<link-shell> down HOST`) and join it again MS milliseconds later (`<link-shell> up "
      "HOST`); beyond --lease-ms it is removed, the others fail over, and the node stays "
      "fenced or stops (implies --survive-failures)")(
      "link-shell", po::value(&o.link_shell),
      "--partition-node: the command that cuts a host off the network and joins it again: "
      "<link-shell> down|up HOST (scripts/netns-cluster.sh prints one for namespace hosts)")(
      "crash-point", po::value(&crash_point),
      "tests: NAME:NODE:HIT — node NODE kills itself (SIGKILL) at the HIT-th occurrence of "
      "crash point NAME (validated, log-partial, logged, acknowledged, written-back, "
      "committed, applied; or load: after its load, before it is recorded), then the "
      "launcher kills the others. Needs --durability=pmem; with --survive-failures the others "
      "fail over instead (durable or not)");
  desc.add(dur);
  po::options_description membership("Membership (src/r2/control/README.md)");
  add_membership_options(membership, o.fabric);
  add_cluster_key_option(membership, o.cluster_key_file);
  desc.add(membership);
  // Every workload's options; a key shared by several workloads is
  // declared once (each workload validates its own values).
  std::map<std::string, std::string> wl_storage;
  for (const WorkloadInfo& w : known) {
    po::options_description wl("Options of --bench=" + w.name + " (" + w.summary + ")");
    bool any = false;
    for (const auto& [k, help] : w.options) {
      if (wl_storage.count(k)) continue;
      wl.add_options()(k.c_str(), po::value(&wl_storage[k]), help.c_str());
      any = true;
    }
    if (any) desc.add(wl);
  }
  po::variables_map vm;
  DRTMX_RETURN_IF_ERROR(parse_command_line(desc, argc, argv, vm, "config"));
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
  if (local_shortcuts != "on" && local_shortcuts != "off")
    return bad("--local-shortcuts=" + local_shortcuts + ": expected on or off");
  o.local_shortcuts = local_shortcuts == "on";
  if (sibling_wait != "on" && sibling_wait != "off")
    return bad("--sibling-wait=" + sibling_wait + ": expected on or off");
  o.sibling_wait = sibling_wait == "on";
  if (o.timeline_ms < 10 || o.timeline_ms > 1000 || 1000 % o.timeline_ms != 0)
    return bad("--timeline-ms=" + std::to_string(o.timeline_ms) +
               " must divide 1000 and be at least 10 (10, 20, 25, 40, 50, 100, ..., 1000)");
  if (vm.count("hosts")) {
    auto hs = read_hosts(o.hosts_file);
    if (!hs.is_ok()) return hs.status();
    o.hosts = std::move(*hs);
    if (o.node >= 0) return bad("--hosts is drtmx-bench's; drtmx-node runs one node");
    if (o.inprocess) return bad("--hosts starts node processes on hosts: not with --inprocess");
    if (!vm["nodes"].defaulted() && nodes != o.hosts.size()) {
      return bad("--hosts=" + o.hosts_file + " lists " + std::to_string(o.hosts.size()) +
                 " hosts but --nodes=" + std::to_string(nodes) +
                 " (one line per node; or leave --nodes out)");
    }
    if (o.hosts.size() > 64) return bad("--hosts=" + o.hosts_file + ": more than 64 hosts");
    nodes = static_cast<uint32_t>(o.hosts.size());
    o.fabric.num_nodes = static_cast<uint16_t>(nodes);
    if (replicas > nodes) {
      return bad("--replicas=" + std::to_string(replicas) + " needs at most " +
                 std::to_string(nodes) + " hosts");
    }
    if (!crash_point.empty())
      return bad(
          "--crash-point: a node's own crash is judged by its process's signal: not with "
          "--hosts (use --crash-at or --kill-node there)");
    if (o.remote_shell.empty()) return bad("--remote-shell is empty");
  } else {
    for (const char* k : {"remote-exe", "coordinator-host", "partition-node", "link-shell"}) {
      // A node gets --partition-node from its launcher (it only learns the
      // run is a failover run).
      const bool nodes_own = std::string(k) == "partition-node" && o.node >= 0;
      if (vm.count(k) && !nodes_own) return bad(std::string("--") + k + " needs --hosts=FILE");
    }
  }
  // A sweep of --durability: its pmem points take --pmem-dir and the other
  // durable options, its off points leave them out (bench_sweep.cc).
  bool sweeps_durability = false;
  if (!o.sweep.empty()) {
    auto sw = parse_sweep(o.sweep);
    if (!sw.is_ok()) return sw.status();
    if (vm.count("node")) return bad("--sweep is drtmx-bench's; a node runs one point");
    if (sw->key == "policy" && o.policy.find(',') != std::string::npos)
      return bad("--sweep=policy=...: give the presets there, not in --policy as well");
    sweeps_durability = sw->key == "durability";
  }
  if (o.rounds < 1 || o.rounds > 100) return bad("--rounds must be 1..100");
  if (o.rounds > 1 && vm.count("node")) return bad("--rounds is drtmx-bench's; a node runs once");
  for (const std::string& p : phases) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) return bad("--phase=" + p + ": expected KEY=VALUE");
    o.overrides[p.substr(0, eq)] = p.substr(eq + 1);
  }
  if (vm.count("mvcc")) o.overrides["mvcc"] = mvcc;
  if (!(o.versions_pct > 0 && o.versions_pct <= 1000))
    return bad("--versions-pct must be in (0, 1000]");
  if (o.min_versions < 64 || o.min_versions > (uint64_t{1} << 26))
    return bad("--min-versions must be in [64, 67108864]");
  for (auto& [k, v] : wl_storage) {
    if (vm.count(k)) o.workload[k] = v;
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
  if (o.host_coordinator && o.node != 0) return bad("--host-coordinator needs --node=0");
  if (vm.count("coordinator-bind") && o.node >= 0 && !o.host_coordinator)
    return bad(
        "--coordinator-bind is for the process that serves the coordinator (drtmx-bench, "
        "or drtmx-node with --host-coordinator)");
  if (vm.count("coordinator-bind") &&
      (o.coordinator_bind.empty() || o.coordinator_bind.find(':') != std::string::npos))
    return bad("--coordinator-bind='" + o.coordinator_bind +
               "': expected one address (e.g. 10.0.0.1) or '*', without a port");
  if (o.join_timeout_ms < 100 || o.join_timeout_ms > 3600000)
    return bad("--join-timeout-ms must be 100..3600000");
  // --policy: one preset, a comma list, or "all" (the launcher runs each).
  if (o.policy == "all") o.policy = "drtmh,drtm-r,farm,fasst,drtmx";
  if (!o.policy.empty() && o.policy.back() == ',')
    return bad("--policy=" + o.policy + ": empty preset name in the list");
  {
    std::istringstream is(o.policy);
    std::string one;
    while (std::getline(is, one, ',')) {
      if (one.empty()) return bad("--policy=" + o.policy + ": empty preset name in the list");
      o.policies.push_back(one);
    }
    if (o.policies.empty()) return bad("--policy is empty");
    if (o.policies.size() > 1 && o.node >= 0)
      return bad("--policy=" + o.policy + ": a node runs one preset");
    o.policy = o.policies.front();
  }
  // Durability.
  if (durability == "pmem") {
    o.durable = true;
  } else if (durability != "off") {
    return bad("--durability=" + durability + ": expected off or pmem");
  }
  const bool crash_at_given = !vm["crash-at"].defaulted();
  if (!o.durable) {
    for (const char* k :
         {"pmem-dir", "format", "recover", "crash-at", "crash-point", "lock-words"}) {
      const bool given = vm.count(k) && !vm[k].defaulted();
      if (!given) continue;
      const std::string key = k;
      // A sweep of durability: these go to its pmem points (bench_sweep.cc).
      if (sweeps_durability && (key == "pmem-dir" || key == "format" || key == "lock-words")) {
        continue;
      }
      // A crash point without durability: a failover test (the others go on).
      if (key == "crash-point" && o.fabric.survive_failures) continue;
      return bad("--" + key + " needs --durability=pmem" +
                 (key == "crash-point" ? " (or --survive-failures: failover)" : ""));
    }
  } else {
    if (lock_words != "dram" && lock_words != "slots")
      return bad("--lock-words=" + lock_words + ": expected dram or slots");
    o.locks_apart = lock_words == "dram";
    // --hosts: every host line may give its own --pmem-dir instead.
    const bool every_host_has_one =
        !o.hosts.empty() && std::all_of(o.hosts.begin(), o.hosts.end(), [](const HostLine& h) {
          return std::any_of(h.options.begin(), h.options.end(),
                             [](const std::string& x) { return x.rfind("--pmem-dir=", 0) == 0; });
        });
    if (o.pmem_dir.empty() && !every_host_has_one)
      return bad(
          "--durability=pmem needs --pmem-dir=DIR (where the pool files live; with --hosts, "
          "or on every host's line)");
    if (o.format && o.recover)
      return bad(
          "--format and --recover exclude each other: --format starts a new database "
          "(loading it), --recover restarts the one in --pmem-dir");
    if (o.policies.size() > 1)
      return bad("--durability=pmem runs one preset: --policy=" + o.policy + " lists several");
  }
  if (o.journal_kb < 16 || o.journal_kb > (1u << 20))
    return bad("--journal-kb must be 16..1048576");
  if (!txn::test_fault_from(test_fault, &o.test_fault))
    return bad("--test-fault=" + test_fault +
               ": expected none, skip-read-validation or skip-log (tests only)");
  if (!o.check_history.empty()) {
    if (o.history.empty())
      return bad("--check-history checks the run's history: give --history=FILE too");
    // drtmx-check's own list of models, so the two never disagree.
    if (auto models = check::parse_models(o.check_history); !models.is_ok())
      return bad("--check-history=" + o.check_history + ": " + models.status().message());
    if (o.node >= 0)
      return bad("--check-history is drtmx-bench's (it checks the merged history after the run)");
    for (const WorkloadInfo& w : known) {
      if (w.name == o.bench && !w.checkable_history)
        return bad("--check-history: --bench=" + o.bench +
                   " writes histories of outcomes and times only (its transactions are not "
                   "list-append micro-ops), which drtmx-check cannot judge; check --bench=append, "
                   "or drop --check-history and keep --history");
    }
  }
  if (crash_at_given) {
    if (!(o.crash_at > 0 && o.crash_at < o.seconds))
      return bad("--crash-at=" + std::to_string(o.crash_at) +
                 " must lie inside the measured run: (0, --seconds)");
    if (o.inprocess)
      return bad("--crash-at kills node processes: not with --inprocess (threads of one process)");
    if (o.node >= 0)
      return bad(
          "--crash-at is drtmx-bench's (it kills the node processes it started); kill "
          "drtmx-node processes yourself");
  }
  if (!crash_point.empty()) {
    const std::string what = "--crash-point=" + crash_point;
    const size_t a = crash_point.find(':'), b = crash_point.rfind(':');
    if (a == std::string::npos || a == b) return bad(what + ": expected NAME:NODE:HIT");
    o.crash_name = crash_point.substr(0, a);
    txn::CrashPoint cp;
    if (o.crash_name != "load" && !txn::crash_point_from(o.crash_name, &cp)) {
      std::string names;
      for (size_t i = 0; i < static_cast<size_t>(txn::CrashPoint::kCount); ++i)
        names += std::string(txn::crash_point_name(static_cast<txn::CrashPoint>(i))) + ", ";
      return bad(what + ": unknown crash point '" + o.crash_name + "'; known: " + names + "load");
    }
    const std::string node_s = crash_point.substr(a + 1, b - a - 1),
                      hit_s = crash_point.substr(b + 1);
    char* end = nullptr;
    const unsigned long cn = std::strtoul(node_s.c_str(), &end, 10);
    if (node_s.empty() || *end != 0 || cn >= nodes)
      return bad(what + ": NODE must be a node id below --nodes=" + std::to_string(nodes));
    const unsigned long long hit = std::strtoull(hit_s.c_str(), &end, 10);
    if (hit_s.empty() || *end != 0 || hit < 1 || hit > (1ull << 40))
      return bad(what + ": HIT must be a positive occurrence count");
    if (o.crash_name == "load" && hit != 1)
      return bad(what + ": the load happens once (HIT must be 1)");
    if (o.crash_name == "load" && o.recover) return bad(what + ": a --recover run does not load");
    o.crash_node = static_cast<int>(cn);
    o.crash_hit = hit;
    if (o.inprocess)
      return bad(
          "--crash-point kills a node process: not with --inprocess (threads of one "
          "process)");
    if (crash_at_given) return bad("give --crash-at or --crash-point, not both");
  }
  // Failover faults.
  auto node_of = [&](const std::string& what, const std::string& n_s, int* out) -> Status {
    char* end = nullptr;
    const unsigned long kn = std::strtoul(n_s.c_str(), &end, 10);
    if (n_s.empty() || *end != 0 || kn >= nodes)
      return bad(what + ": N must be a node id below --nodes=" + std::to_string(nodes));
    *out = static_cast<int>(kn);
    return Status::ok();
  };
  auto seconds_of = [&](const std::string& what, const std::string& s_s, double* out) -> Status {
    char* end = nullptr;
    const double ks = std::strtod(s_s.c_str(), &end);
    if (s_s.empty() || *end != 0 || !(ks > 0 && ks < o.seconds))
      return bad(what + ": S must lie inside the measured run: (0, --seconds)");
    *out = ks;
    return Status::ok();
  };
  std::stringstream kills(kill_node);
  for (std::string one; std::getline(kills, one, ',');) {
    const std::string what = "--kill-node=" + one;
    const size_t at = one.find('@');
    if (at == std::string::npos) return bad(what + ": expected N@S (node N, S seconds)");
    BenchOptions::Fault f;
    f.kind = BenchOptions::Fault::kKill;
    DRTMX_RETURN_IF_ERROR(node_of(what, one.substr(0, at), &f.node));
    DRTMX_RETURN_IF_ERROR(seconds_of(what, one.substr(at + 1), &f.at));
    o.faults.push_back(f);
  }
  if (!stop_node.empty()) {
    const std::string what = "--stop-node=" + stop_node;
    const size_t at = stop_node.find('@'), plus = stop_node.find('+');
    if (at == std::string::npos || plus == std::string::npos || plus < at)
      return bad(what + ": expected N@S+MS (node N, S seconds, MS milliseconds stopped)");
    BenchOptions::Fault f;
    f.kind = BenchOptions::Fault::kStop;
    DRTMX_RETURN_IF_ERROR(node_of(what, stop_node.substr(0, at), &f.node));
    DRTMX_RETURN_IF_ERROR(seconds_of(what, stop_node.substr(at + 1, plus - at - 1), &f.at));
    char* end = nullptr;
    const std::string ms_s = stop_node.substr(plus + 1);
    f.stop_ms = std::strtod(ms_s.c_str(), &end);
    if (ms_s.empty() || *end != 0 || !(f.stop_ms > 0 && f.stop_ms <= 600000))
      return bad(what + ": MS must be 1..600000 milliseconds");
    o.faults.push_back(f);
  }
  if (!partition_node.empty()) {
    const std::string what = "--partition-node=" + partition_node;
    const size_t at = partition_node.find('@'), plus = partition_node.find('+');
    if (at == std::string::npos || plus == std::string::npos || plus < at)
      return bad(what + ": expected N@S+MS (node N, S seconds, MS milliseconds cut off)");
    BenchOptions::Fault f;
    f.kind = BenchOptions::Fault::kPartition;
    DRTMX_RETURN_IF_ERROR(node_of(what, partition_node.substr(0, at), &f.node));
    DRTMX_RETURN_IF_ERROR(seconds_of(what, partition_node.substr(at + 1, plus - at - 1), &f.at));
    char* end = nullptr;
    const std::string ms_s = partition_node.substr(plus + 1);
    f.stop_ms = std::strtod(ms_s.c_str(), &end);
    if (ms_s.empty() || *end != 0 || !(f.stop_ms > 0 && f.stop_ms <= 600000))
      return bad(what + ": MS must be 1..600000 milliseconds");
    // The launcher cuts the link; a node only learns the fault is there.
    if (o.node < 0 && o.link_shell.empty())
      return bad(what +
                 " needs --link-shell=CMD (CMD down|up HOST cuts a host off the network "
                 "and joins it again; scripts/netns-cluster.sh prints one)");
    o.faults.push_back(f);
  }
  // A crash point with durability crashes every node (a restart test),
  // unless --survive-failures asks for a failover test: the node dies there
  // and the others go on.
  if (!o.crash_name.empty() && (!o.durable || o.fabric.survive_failures)) {
    if (o.durable && o.crash_name == "load")
      return bad(
          "--crash-point=load with --survive-failures: a failover test stops a node in the "
          "measured run, not in its load");
    if (!o.durable && (o.crash_name == "load" || o.crash_name == "applied"))
      return bad("--crash-point=" + o.crash_name +
                 " without durability: failover tests stop a node on the commit path "
                 "(validated, log-partial, logged, acknowledged, written-back, committed)");
    BenchOptions::Fault f;
    f.kind = BenchOptions::Fault::kCrashPoint;
    f.node = o.crash_node;
    o.faults.push_back(f);
  }
  if (o.failover_run()) {
    const std::string what = "failover (--kill-node, --stop-node, --crash-point, --partition-node)";
    if (o.inprocess)
      return bad(what + " stops node processes: not with --inprocess (threads of one process)");
    if (o.durable && o.recover)
      return bad(what +
                 " with --recover: recover the cluster first, then fail a node in a later run "
                 "(a restart after a durable failover is not implemented)");
    if (o.crash_at > 0) return bad(what + ": not with --crash-at");
    if (o.policies.size() > 1) return bad(what + " runs one preset: --policy lists several");
    o.fabric.survive_failures = true;
  }
  if (o.rounds > 1) {
    if (o.crash_requested() || o.recover || o.failover_run()) {
      return bad("--rounds=" + std::to_string(o.rounds) +
                 " repeats runs: not with --crash-at, --crash-point, --recover, --kill-node or "
                 "--stop-node (each is one experiment)");
    }
    if (o.durable && !o.format) {
      return bad("--rounds=" + std::to_string(o.rounds) +
                 " with --durability=pmem: every run after the first replaces the pool files "
                 "of the run before in --pmem-dir; add --format");
    }
  }
  DRTMX_RETURN_IF_ERROR(o.fabric.validate());
  // The key is read when the run starts (node_main, run_once: a node's may
  // come on standard input, once); a node without one is refused there. A
  // launcher's key file is checked now, before anything starts.
  if (o.node < 0 && !o.cluster_key_file.empty() && o.cluster_key_file != "-") {
    auto key = r2::read_cluster_key_file(o.cluster_key_file);
    if (!key.is_ok()) return key.status();
  }
  // Fail early on a bad policy or workload option, before any node starts.
  for (const std::string& p : o.policies) {
    auto pol = txn::make_policy(p, o.overrides, o.fabric.backend == "shm");
    if (!pol.is_ok()) return pol.status();
  }
  auto w = make_workload(o);
  if (!w.is_ok()) return w.status();
  // --hosts: each node's command line (with its own options) must parse.
  for (size_t n = 0; n < o.hosts.size(); ++n) {
    std::vector<std::string> args = o.node_args(static_cast<int>(n), "127.0.0.1:1");
    std::vector<char*> v{argv[0]};
    for (std::string& x : args) v.push_back(x.data());
    auto node = parse_bench(static_cast<int>(v.size()), v.data(), known);
    if (!node.is_ok()) {
      return node.status().with_context("--hosts=" + o.hosts_file + " line " +
                                        std::to_string(o.hosts[n].line) + " (node " +
                                        std::to_string(n) + " on " + o.hosts[n].host + ")");
    }
  }
  return o;
}

Status read_launcher_key(BenchOptions& o) {
  if (o.node >= 0 || o.cluster_key_file != "-") return Status::ok();
  return resolve_cluster_key(o.cluster_key_file, -1, o.fabric);
}

std::unique_ptr<BenchOptions> parse_for_main(int argc, char** argv, const char* program,
                                             int* exit_code,
                                             const std::vector<WorkloadInfo>& known) {
  auto o = parse_bench(argc, argv, known);
  if (o.is_ok()) return std::make_unique<BenchOptions>(std::move(o.value()));
  *exit_code = options_exit_code(program, o.status(), 2);
  return nullptr;
}

std::string BenchOptions::kill_dir() const {
  const std::string base = std::filesystem::is_directory("/dev/shm")
                               ? std::string("/dev/shm")
                               : std::filesystem::temp_directory_path().string();
  return base + "/drtmx-" + fabric.cluster + ".failover";
}

}  // namespace drtmx::bench
