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
#include "hosts.h"
#include "r2/control/control.h"
#include "r2/fabric_config.h"
#include "txn/txn_node.h"
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
  // Set by node_main to the program's name: this process is one node; it
  // ends itself when its coordinator is gone (r2::exit_when_orphaned). ""
  // for nodes that are threads of a launcher. Not an option.
  std::string node_program;
  std::string json;
  // --history=FILE (history.h): every node writes its clients' parts into
  // FILE.parts/, the launcher merges them into FILE after the run (a
  // --recover run continues FILE).
  std::string history;
  // --check-history[=MODEL]: the launcher then runs drtmx-check on FILE
  // with this consistency model ("": no check); its verdict joins the
  // report, and an invalid history fails the run.
  std::string check_history;
  // --test-fault=NAME (tests only, txn::TestFault): every engine skips a
  // duty of the protocol, so that the outside checks can be seen to fail.
  txn::TestFault test_fault = txn::TestFault::kNone;
  int node = -1;                  // >= 0: run only this node (the launcher passes it)
  std::string coordinator;        // node mode: where the coordinator listens
  bool host_coordinator = false;  // node 0 also serves the coordinator
  uint32_t join_timeout_ms = 30000;
  uint32_t timeline_ms = 100;  // the report's timeline resolution (divides 1000)
  std::string sweep;           // drtmx-bench: KEY=V1,V2,... (empty: one point)
  // drtmx-bench: run the experiment (the presets, the sweep points) this
  // many times, alternating the order (bench_series.h, "Rounds").
  uint32_t rounds = 1;
  // drtmx-bench --hosts=FILE (hosts.h): node i on hosts[i], started through
  // remote_shell as remote_exe; the nodes reach the coordinator at
  // coordinator_host (default: this machine's host name).
  std::string hosts_file;
  std::vector<HostLine> hosts;
  std::string remote_shell = "ssh -o BatchMode=yes";
  std::string remote_exe;  // default: the drtmx-node beside drtmx-bench
  std::string coordinator_host;
  // The address the coordinator binds (drtmx-bench; drtmx-node with
  // --host-coordinator): "" for the default — 127.0.0.1 for one-host runs;
  // with --hosts, --coordinator-host, or else this machine's address toward
  // the hosts (coordinator_bind_address); "*": every interface.
  std::string coordinator_bind;
  // --cluster-key-file: the cluster key's file ("-": standard input). A
  // node needs it; drtmx-bench without it makes a random key per run
  // (fabric.cluster_key stays empty until then).
  std::string cluster_key_file;
  // The workloads --bench may name (parse_bench's `known`), and the program
  // the launcher starts as each node ("": the drtmx-node beside it).
  std::shared_ptr<const std::vector<WorkloadInfo>> known;
  std::string node_exe;
  uint64_t seed = 1;
  uint32_t log_ring_kb = 1024;
  uint32_t xstore_refresh_keys = 16;            // XCacheOptions::refresh_keys_per_miss
  double versions_pct = 2;                      // dst::MvccConfig::versions_pct
  uint64_t min_versions = 4096;                 // dst::MvccConfig::min_versions
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
  // --local-shortcuts=on|off (txn::TxnNodeConfig::local_shortcuts).
  bool local_shortcuts = true;
  // --sibling-wait=on|off (txn::TxnNodeConfig::sibling_wait).
  bool sibling_wait = true;
  // Launcher: SIGKILL every node this many seconds into the measured run (0: never).
  double crash_at = 0;
  // Tests: node `crash_node` kills itself at the `crash_hit`-th occurrence of
  // crash point `crash_name` (txn/crash_point.h, or "load": after its load,
  // before the load is recorded persistent). Empty name: none.
  std::string crash_name;
  int crash_node = -1;
  uint64_t crash_hit = 0;
  bool crash_requested() const { return crash_at > 0 || !crash_name.empty(); }
  // Failover runs (they imply --survive-failures): the faults the launcher
  // (or a node itself) injects and the survivors must go on after.
  //   kKill        --kill-node=N@S: SIGKILL node N S seconds into the run;
  //   kStop        --stop-node=N@S+MS: SIGSTOP it, SIGCONT MS later (beyond
  //                the lease it was removed: it must stop cleanly);
  //   kCrashPoint  --crash-point=NAME:N:HIT without durability (with
  //                durability: and --survive-failures): node N kills
  //                itself at that point of the commit path;
  //   kPartition   --partition-node=N@S+MS (with --hosts): node N's host is
  //                cut off the network by `<link_shell> down HOST` and
  //                joined again by `<link_shell> up HOST` MS later; removed
  //                beyond the lease, the node must stay fenced or stop.
  struct Fault {
    enum Kind : uint8_t { kKill, kStop, kCrashPoint, kPartition } kind = kKill;
    int node = 0;
    double at = 0;       // seconds into the measured run (kKill, kStop, kPartition)
    double stop_ms = 0;  // kStop, kPartition: how long stopped / cut off
  };
  // --link-shell=CMD (--partition-node): `CMD down HOST` cuts HOST off the
  // network, `CMD up HOST` joins it again.
  std::string link_shell;
  std::vector<Fault> faults;
  // The survivors' copies of each partition (WorkloadEnv::copies), set by
  // the reporting node of a failover run; empty otherwise.
  std::vector<uint16_t> live_copies;
  bool failover_run() const { return !faults.empty(); }
  // Where a --kill-node run keeps the nodes' acknowledgement journals (the
  // survivors read the killed node's to check its acknowledged commits)
  // and the kill's time: a directory of memory (/dev/shm) named by the
  // cluster.
  std::string kill_dir() const;
  std::vector<std::string> node_args(int node, const std::string& coordinator) const;
};

// argv -> options; --help gives kNotFound with the usage text. `known`:
// the workloads --bench may name (with their options).
Result<BenchOptions> parse_bench(int argc, char** argv,
                                 const std::vector<WorkloadInfo>& known = workloads());
// parse_bench for a main(): prints the usage (--help) to stdout or the
// error, prefixed with `program`, to stderr. Null with *exit_code set
// (0 after --help, 2 after an error) when the program should stop.
std::unique_ptr<BenchOptions> parse_for_main(int argc, char** argv, const char* program,
                                             int* exit_code,
                                             const std::vector<WorkloadInfo>& known = workloads());
// A node's main() after its options parsed: serves the coordinator first
// with --host-coordinator, runs the node, prints an error prefixed with
// `program` and the node id; the exit code.
int node_main(const BenchOptions& o, const char* program);
// main() of a program of your own that runs your workloads (besides the
// built-in ones) with drtmx-bench's whole command line: without --node it
// is the launcher and starts copies of itself as the nodes (or threads with
// --inprocess); with --node it is one node, like drtmx-node. A workload
// whose name is taken is refused.
int program_main(int argc, char** argv, const char* program, std::vector<WorkloadInfo> extra);
// Builds the workload named by o.bench from o.workload (errors name the option).
Result<std::unique_ptr<Workload>> make_workload(const BenchOptions& o);
// The engine's configuration of node `node` under `o` for workload `wl`:
// everything but the control plane's (coordinator, fingerprint, callbacks)
// and durability's, which the node adds (bench_node.cc); also what the
// launcher sizes a node by (memory_watch.h).
Result<txn::TxnNodeConfig> engine_config(const BenchOptions& o, const Workload& wl, uint16_t node);
// --sweep=KEY=V1,V2,...: the option swept and its values. Refused: an
// unknown shape, an empty value, a key that names files, nodes or the
// sweep itself (json, config, node, coordinator, pmem-dir, ...).
struct Sweep {
  std::string key;
  std::vector<std::string> values;
};
Result<Sweep> parse_sweep(const std::string& spec);
// drtmx-bench with --sweep: the options of every point — the command line
// with --KEY=V in place of any --KEY given, parsed again (all of them
// before any runs: a bad value is a command-line error).
Result<std::vector<BenchOptions>> sweep_points(int argc, char** argv, const BenchOptions& o);
// One run_local_cluster per point, a table of the points, and with --json
// one file {"sweep": {"key", "values"}, "points": [{"value", "report"}]}.
Status run_sweep(const BenchOptions& o, std::vector<BenchOptions> points);
// Launcher, before its runs: a --cluster-key-file=- is read now, once, for
// every run (a key file is read by each run; without one, each run makes
// its own key).
Status read_launcher_key(BenchOptions& o);
// Launcher: a coordinator here, the nodes as drtmx-node processes (default)
// or threads; with several policies, one run each, then a summary table.
Status run_local_cluster(const BenchOptions& o);
// Whether SIGINT or SIGTERM stopped the launcher's last run (loops over
// presets and sweep points stop then).
bool run_interrupted();
// One node, joined through o.coordinator; node 0 prints the report.
Status run_bench_node(const BenchOptions& o);
// The coordinator of a run, printing the nodes' per-second progress;
// `also` (optional) sees every publication too.
// `removed` (optional) is called at every membership change (the
// coordinator's thread): the epoch, the removed nodes and why.
Result<std::unique_ptr<r2::ControlServer>> start_coordinator(
    const BenchOptions& o, const std::string& listen,
    std::function<void(uint16_t node, const std::string& topic, const std::string& blob)> also = {},
    std::function<void(const r2::MembershipChange&)> removed = {});

}  // namespace drtmx::bench
