// The launcher side of a benchmark's local cluster: the coordinator in
// this process, the nodes as copies of this executable or as threads, and
// the cleanup after them (r2-bench and rdpma-bench; drtmx-bench, which
// starts drtmx-node processes, shares the coordinator's configuration and
// the threads). Each program keeps its own options, node arguments and node
// logic; only the running of the nodes is here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/control/control.h"
#include "r2/fabric_config.h"

namespace drtmx::bench {

// The coordinator's configuration for the cluster `fabric.cluster` of
// `fabric.num_nodes` nodes: it listens at `listen` (host:port; port 0: any
// free port) and expects every node to join within `join_timeout`.
r2::ControlServerConfig coordinator_config(const r2::FabricConfig& fabric,
                                           const std::string& listen,
                                           std::chrono::milliseconds join_timeout);

// One line on the nodes' lease renewals as `server` saw them: the lease,
// the renewal period, the largest gap between two renewals (and whose), the
// epoch. "leases: 3 nodes, lease 1000 ms (renewed every 250 ms), max gap
// 262.1 ms (node 1), epoch 0". What --lease-ms is chosen by.
std::string lease_summary(const r2::ControlServer& server, uint32_t lease_ms);

// Launcher options `o` made into node `n`'s, joining at `coordinator`.
// Options: a benchmark's options with `node`, `fabric.node` and `coordinator`.
template <typename Options>
Options as_node(const Options& o, uint16_t n, const std::string& coordinator) {
  Options mine = o;
  mine.node = n;
  mine.fabric.node = n;
  mine.coordinator = coordinator;
  return mine;
}

// Runs run(n) for every node n below `nodes`, each on a thread of its own,
// and waits for all of them. Returns ok, or the error of the lowest node
// that failed, with the context "node n".
Status run_node_threads(uint16_t nodes, const std::function<Status(uint16_t node)>& run);

// Starts `nodes` copies of this executable, node n with the arguments
// args(n) (which hold kKeyFromStdinArg) and `fabric`'s cluster key on its
// standard input, named "node n", and waits for them (ProcessGroup::wait_all:
// the first failure stops the others and is returned; past `limit` all are
// killed and kTimeout returned). No child outlives the call.
Status run_node_processes(const r2::FabricConfig& fabric, std::chrono::milliseconds limit,
                          const std::function<std::vector<std::string>(int node)>& args);

// A local cluster's coordinator and its shm segments, around one run of
// its nodes: start(), run the nodes (joining at coordinator()), finish().
class LocalCluster {
 public:
  // Removes the cluster's shm segments left by an earlier run (backend
  // "shm"), then starts its coordinator (coordinator_config) at `listen`,
  // or at 127.0.0.1 on any free port when `listen` is empty. Errors: the
  // coordinator's (nothing to finish then).
  static Result<LocalCluster> start(const r2::FabricConfig& fabric, const std::string& listen,
                                    std::chrono::milliseconds join_timeout);

  // Where the nodes join: "127.0.0.1:<the coordinator's port>".
  const std::string& coordinator() const { return coordinator_; }

  // After the nodes ended with `nodes_result`: when it is ok, waits (5 s at
  // most) until every node left the coordinator and returns how that went;
  // otherwise returns `nodes_result`. Removes the shm segments either way.
  // With --survive-failures, prints lease_summary().
  Status finish(Status nodes_result);

 private:
  LocalCluster(std::unique_ptr<r2::ControlServer> server, bool shm, std::string cluster,
               uint32_t lease_ms, bool survive);
  std::unique_ptr<r2::ControlServer> server_;
  uint32_t lease_ms_;
  bool survive_;
  bool shm_;
  std::string cluster_;
  std::string coordinator_;
};

// A node started on its own (--node=N) that may also serve its cluster's
// coordinator (--host-coordinator): r2-bench, rdpma-bench, drtmx-node.
class HostedCoordinator {
 public:
  // Serves `server`, a coordinator started elsewhere (null: nothing).
  explicit HostedCoordinator(std::unique_ptr<r2::ControlServer> server = nullptr)
      : server_(std::move(server)) {}

  // host false: serves nothing. Otherwise starts the coordinator
  // (coordinator_config) at `listen`; errors are the coordinator's.
  static Result<HostedCoordinator> start(bool host, const r2::FabricConfig& fabric,
                                         const std::string& listen,
                                         std::chrono::milliseconds join_timeout);

  // After this node's run ended with `node_result`: when serving, waits (5
  // s at most) until every node left — whatever the node's result — and
  // returns `node_result`, or that wait's error when `node_result` is ok.
  Status finish(Status node_result);

 private:
  std::unique_ptr<r2::ControlServer> server_;
};

}  // namespace drtmx::bench
