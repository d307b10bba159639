// Runs one Worker per (node, thread) of an InProcCluster on its own thread.
// `setup(worker)` registers handlers and spawns coroutines; every worker
// keeps serving until all workers' coroutines have finished (bounded by a
// deadline, after which the run is reported as timed out).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "r2/sched/worker.h"
#include "r2/support/inproc_cluster.h"

namespace drtmx::r2::testing {

struct WorkerRun {
  std::vector<std::unique_ptr<Worker>> workers;  // node-major
  bool timed_out = false;
  Worker& at(NodeId n, ThreadId t, uint16_t threads) { return *workers[n * threads + t]; }
};

inline WorkerRun run_workers(InProcCluster& c, const WorkerConfig& wcfg,
                             const std::function<void(Worker&)>& setup,
                             std::chrono::seconds limit = std::chrono::seconds(60),
                             const std::function<bool(NodeId)>& serving = nullptr) {
  WorkerRun run;
  const uint16_t nodes = static_cast<uint16_t>(c.fabrics.size());
  const uint16_t threads = c.fabrics[0]->info().threads;
  for (NodeId n = 0; n < nodes; ++n) {
    for (ThreadId t = 0; t < threads; ++t) {
      run.workers.push_back(std::make_unique<Worker>(c.f(n).endpoint(t), n, nodes, threads, wcfg));
      setup(*run.workers.back());
    }
  }
  std::atomic<size_t> finished{0};
  std::atomic<bool> expired{false};
  const size_t total = run.workers.size();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<std::thread> ts;
  for (auto& w : run.workers) {
    if (serving && !serving(w->node())) {
      ++finished;
      continue;
    }
    Worker* wp = w.get();
    ts.emplace_back([&, wp] {
      bool counted = false;
      uint64_t spins = 0;
      wp->run_until([&] {
        if (!counted && wp->coroutines_finished()) {
          counted = true;
          ++finished;
        }
        if ((++spins & 1023) == 0 && std::chrono::steady_clock::now() > deadline) expired = true;
        return (counted && finished.load() == total) || expired.load();
      });
    });
  }
  for (auto& t : ts) t.join();
  run.timed_out = expired.load();
  return run;
}

}  // namespace drtmx::r2::testing
