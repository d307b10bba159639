// The launcher's view of its nodes' memory (issue 46, "know before you
// run"): an estimate of what the cluster needs to load, refused when the
// host cannot hold it; what each node held while it ran (its resident
// process memory and its /dev/shm segments, sampled); and a node killed by
// the kernel's out-of-memory killer reported as such. Local clusters only
// (a --hosts cluster's nodes are on other machines).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench.h"
#include "store/catalog.h"

namespace drtmx::bench {

// What one node needs to load `cat` under the options: its table copies
// (store::tables::load_bytes), its engine regions (logs, arenas, scratch)
// and a process allowance.
struct LoadEstimate {
  uint64_t tables = 0, regions = 0, process = 0;
  uint64_t total() const { return tables + regions + process; }
};
Result<LoadEstimate> estimate_node(const BenchOptions& o, const Workload& wl,
                                   const store::Catalog& cat, uint16_t node);

// /proc/meminfo MemAvailable and MemTotal, /dev/shm's free bytes, and the
// limit of this process's memory cgroup (v1 or v2) with its usage — what
// its children inherit (0 when unknown or unlimited).
struct HostMemory {
  uint64_t available = 0, shm_free = 0, total = 0;
  uint64_t cgroup_limit = 0, cgroup_usage = 0;
  // What the cluster may use: MemAvailable, or less under a cgroup limit.
  uint64_t usable() const {
    if (cgroup_limit == 0 || cgroup_limit >= total) return available;
    const uint64_t left = cgroup_limit > cgroup_usage ? cgroup_limit - cgroup_usage : 0;
    return available == 0 ? left : std::min(available, left);
  }
};
HostMemory host_memory();

// Ok when `nodes` estimates fit the host (with an eighth spare); else
// kResourceExhausted naming the need, what the host has, and what to
// change. `shm`: the tables live in /dev/shm (multi-node shm clusters).
Status check_fits(const std::vector<LoadEstimate>& nodes, const HostMemory& host, bool shm,
                  const std::string& bench);

// Samples each node's memory while the run goes on, and explains a node
// the kernel killed.
class MemoryWatch {
 public:
  MemoryWatch(std::string cluster, uint16_t nodes);
  // With the OOM kill count at the start given (tests).
  MemoryWatch(std::string cluster, uint16_t nodes, uint64_t oom_kills_at_start);
  // At most every 250 ms: for node i with process `pids[i]` (-1: ended),
  // its RssAnon plus the blocks of its /dev/shm segments.
  void sample(const std::vector<pid_t>& pids);
  uint64_t held(uint16_t node) const { return node < held_.size() ? held_[node] : 0; }
  // `result` unchanged unless it says a node "was killed by signal 9" and
  // the kernel's OOM kill counter (/proc/vmstat oom_kill) rose during the
  // run: then the message says the kernel killed it for lack of memory,
  // what it held, and what to change.
  Status explain(const Status& result) const;
  // The same with the counter's value now and the host's memory given.
  Status explain(const Status& result, uint64_t oom_kills_now, const HostMemory& host) const;
  // Tests: what node `node` held at its last sample.
  void set_held(uint16_t node, uint64_t bytes) {
    if (node < held_.size()) held_[node] = bytes;
  }

 private:
  std::string cluster_;
  std::vector<uint64_t> held_;
  uint64_t oom_kills_at_start_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

// /proc/vmstat's oom_kill (0 when unknown).
uint64_t oom_kill_count();

}  // namespace drtmx::bench
