// NodeRuntime: one node of a cluster, put together — its fabric with its
// regions, its control-plane client, and one Worker per worker thread.
// What a node program (r2-bench, drtmx-node) starts with.
//
// start() builds the fabric, registers the regions, joins the cluster
// through the coordinator and connects the fabric (a collective: every node
// must start). launch() runs each worker on its own thread: `setup` runs
// there first (register handlers, spawn coroutines), then the loop serves
// until stop(). Workers keep serving after their coroutines finish, so that
// slower nodes still get answers; stop() after a cluster-wide barrier.
//
// Membership (survive-failures mode): every change the control client
// learns is applied to the fabric (Fabric::apply_membership: fencing) on
// the client's thread, before control.on_change sees it. A removed node's
// own fabric refuses everything from then on; health() says why.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "r2/control/control.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"
#include "r2/sched/worker.h"

namespace drtmx::r2 {

struct NodeRuntimeConfig {
  // fabric.lease_ms / fabric.survive_failures set the control client's
  // lease and mode.
  FabricConfig fabric;
  // node, num_nodes, cluster, fingerprint, lease and mode are filled from
  // fabric, and the key from fabric.cluster_key when control.key is empty; control.on_change, if
  // set, is called after the runtime applied the change to the fabric.
  ControlClientConfig control;
  WorkerConfig worker;
  std::vector<std::pair<RegionId, size_t>> regions;  // volatile: register_region
  // Volatile and growable: register_growable_region (id, virtual bytes);
  // the owner backs ranges with fabric().commit().
  std::vector<std::pair<RegionId, size_t>> growable_regions;
  // Persistent: register_file_region (e.g. a PmemPool's data_region()); the
  // mapping must outlive the runtime.
  std::vector<std::pair<RegionId, FileRegion>> file_regions;
};

// The exit code of a node process that ended because its coordinator is
// gone (exit_when_orphaned).
constexpr int kOrphanExitCode = 69;

// ControlClientConfig::on_lost for a node that is a process of its own
// (drtmx-node, r2-bench --processes, ...): a node whose coordinator is gone
// can never finish its run, report, or be stopped by its launcher, so it
// says why on stderr ("<program> node N: lost the coordinator ...; stopping
// this node"), removes the host-wide names of its shared memory (shm: its
// /dev/shm segments, so their memory goes back once every process that maps
// them has ended) and ends the process at once with kOrphanExitCode, as a
// crash would: persistent regions (pool files) are never touched, and a
// durable cluster restarts from them with --recover. Not for nodes that are
// threads of a launcher or test (they share its process).
std::function<void(const Status&)> exit_when_orphaned(const std::string& program,
                                                      const FabricConfig& fabric);

class NodeRuntime {
 public:
  static Result<std::unique_ptr<NodeRuntime>> start(const NodeRuntimeConfig& cfg);
  ~NodeRuntime();

  Fabric& fabric() { return *fabric_; }
  ControlClient& control() { return *control_; }
  Worker& worker(ThreadId t) { return *workers_[t]; }
  uint16_t threads() const { return static_cast<uint16_t>(workers_.size()); }

  void launch(const std::function<void(Worker&)>& setup);
  // True once every worker's coroutines have returned.
  bool coroutines_finished() const { return finished_.load() == workers_.size(); }
  // Waits (bounded) until coroutines_finished(); false on timeout.
  bool wait_coroutines(std::chrono::milliseconds timeout) const;
  // Ends the loops and joins the worker threads.
  void stop();
  // The first failure of any worker (an escaped exception), if any.
  Status failure() const;
  // ok while this node is a member of a live cluster; otherwise why not
  // (e.g. "node 2 was removed from the cluster at epoch 1 (lease expired
  // ...)"). Any thread.
  Status health() const { return control_->health(); }

 private:
  NodeRuntime() = default;
  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<ControlClient> control_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> finished_{0};
  // Membership changes reach the fabric from the control thread and from
  // start() (the ones learnt before connect); one at a time.
  std::mutex fence_mu_;
  std::atomic<Fabric*> fenced_fabric_{nullptr};  // set once connected
};

}  // namespace drtmx::r2
