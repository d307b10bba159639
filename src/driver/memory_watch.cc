#include "memory_watch.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/resident.h"
#include "r2/common/growable.h"
#include "store/tables/plan.h"
#include "txn/txn_node.h"

namespace drtmx::bench {
namespace {

// What a node process holds besides its regions: indexes' inner nodes,
// learned and location caches, buffers (measured: 84 MiB RssAnon for a
// TPC-C node at the default scale after a run, docs/benchmarks.md).
constexpr uint64_t kProcessAllowance = uint64_t{96} << 20;

}  // namespace

uint64_t oom_kill_count() {
  const std::string v = read_small_file("/proc/vmstat");
  const size_t at = v.find("\noom_kill ");
  if (at == std::string::npos) return 0;
  return std::strtoull(v.c_str() + at + 10, nullptr, 10);
}

Result<LoadEstimate> estimate_node(const BenchOptions& o, const Workload& wl,
                                   const store::Catalog& cat, uint16_t node) {
  auto cfg = engine_config(o, wl, node);
  if (!cfg.is_ok()) return cfg.status();
  LoadEstimate e;
  e.tables = store::tables::load_bytes(cat, node, o.durable && o.locks_apart);
  for (const auto& [id, bytes] : txn::TxnNode::regions(cat, *cfg)) e.regions += bytes;
  e.process = kProcessAllowance;
  return e;
}

HostMemory host_memory() {
  HostMemory h;
  const std::string mi = read_small_file("/proc/meminfo");
  h.available = kib_field(mi, "MemAvailable");
  h.total = kib_field(mi, "MemTotal");
  struct statvfs sv {};
  if (statvfs("/dev/shm", &sv) == 0) h.shm_free = uint64_t{sv.f_bavail} * sv.f_frsize;
  // This process's memory cgroup: "N:memory:/path" (v1) or "0::/path" (v2).
  std::istringstream cg(read_small_file("/proc/self/cgroup"));
  std::string line;
  while (std::getline(cg, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string limit, usage;
    if (ctl == "memory") {
      limit = read_small_file("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
      usage = read_small_file("/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes");
    } else if (ctl.empty()) {
      limit = read_small_file("/sys/fs/cgroup" + path + "/memory.max");
      usage = read_small_file("/sys/fs/cgroup" + path + "/memory.current");
    }
    const uint64_t l = std::strtoull(limit.c_str(), nullptr, 10);
    if (l != 0 && (h.cgroup_limit == 0 || l < h.cgroup_limit)) {
      h.cgroup_limit = l;
      h.cgroup_usage = std::strtoull(usage.c_str(), nullptr, 10);
    }
  }
  return h;
}

Status check_fits(const std::vector<LoadEstimate>& nodes, const HostMemory& host, bool shm,
                  const std::string& bench) {
  LoadEstimate sum;
  for (const LoadEstimate& e : nodes) {
    sum.tables += e.tables, sum.regions += e.regions, sum.process += e.process;
  }
  const std::string advice =
      bench == "tpcc"   ? "lower --warehouses-per-node or --replicas, or spread the nodes over "
                          "more hosts (--hosts)"
      : bench == "tpce" ? "lower --customers or --replicas, or spread the nodes over more hosts "
                          "(--hosts)"
                        : "lower the workload's scale or --replicas, or spread the nodes over "
                          "more hosts (--hosts)";
  auto need = [&] {
    std::ostringstream os;
    os << "the cluster needs about " << r2::human_bytes(sum.total()) << " to load (" << nodes.size()
       << " nodes: tables " << r2::human_bytes(sum.tables) << ", engine regions "
       << r2::human_bytes(sum.regions) << ", processes " << r2::human_bytes(sum.process) << ")";
    return os.str();
  };
  const uint64_t usable = host.usable();
  if (usable != 0 && sum.total() > usable - usable / 8) {
    const bool cgroup = usable != host.available;
    return exhausted(
        need() + " but " +
        (cgroup ? "this process's memory cgroup has " + r2::human_bytes(usable) +
                      " left of its limit of " + r2::human_bytes(host.cgroup_limit)
                : "this host has " + r2::human_bytes(host.available) + " available of " +
                      r2::human_bytes(host.total) + " (/proc/meminfo MemAvailable)") +
        ", an eighth kept spare: " + advice + "; the run grows from there as rows are inserted");
  }
  const uint64_t in_shm = sum.tables + sum.regions;
  if (shm && host.shm_free != 0 && in_shm > host.shm_free) {
    return exhausted(need() + " of which " + r2::human_bytes(in_shm) + " in /dev/shm, which has " +
                     r2::human_bytes(host.shm_free) +
                     " free: enlarge it (mount -o remount,size=... /dev/shm) "
                     "or " +
                     advice);
  }
  return Status::ok();
}

MemoryWatch::MemoryWatch(std::string cluster, uint16_t nodes)
    : MemoryWatch(std::move(cluster), nodes, oom_kill_count()) {}

MemoryWatch::MemoryWatch(std::string cluster, uint16_t nodes, uint64_t oom_kills_at_start)
    : cluster_(std::move(cluster)), held_(nodes, 0), oom_kills_at_start_(oom_kills_at_start) {}

void MemoryWatch::sample(const std::vector<pid_t>& pids) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  std::vector<uint64_t> shm(held_.size(), 0);
  const std::string prefix = "drtmx." + cluster_ + ".n";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0) continue;
      const unsigned long n = std::strtoul(name.c_str() + prefix.size(), nullptr, 10);
      struct stat st {};
      if (n < shm.size() && stat(("/dev/shm/" + name).c_str(), &st) == 0) {
        shm[n] += uint64_t(st.st_blocks) * 512;
      }
    }
    closedir(d);
  }
  for (size_t i = 0; i < held_.size() && i < pids.size(); ++i) {
    if (pids[i] <= 0) continue;  // ended: keep its last sample
    const std::string status = read_small_file("/proc/" + std::to_string(pids[i]) + "/status");
    held_[i] = kib_field(status, "RssAnon") + shm[i];
  }
}

Status MemoryWatch::explain(const Status& result) const {
  if (result.is_ok()) return result;
  return explain(result, oom_kill_count(), host_memory());
}

Status MemoryWatch::explain(const Status& result, uint64_t now, const HostMemory& host) const {
  const std::string& m = result.message();
  const std::string tail = " was killed by signal 9";
  if (result.is_ok() || m.rfind("node ", 0) != 0 || m.find(tail) == std::string::npos) {
    return result;
  }
  if (now <= oom_kills_at_start_) return result;
  const unsigned long node = std::strtoul(m.c_str() + 5, nullptr, 10);
  std::ostringstream os;
  os << m.substr(0, m.find(tail)) << " was killed by the kernel for lack of memory (its "
     << "out-of-memory killer: /proc/vmstat oom_kill rose by " << now - oom_kills_at_start_
     << " during the run)";
  if (node < held_.size() && held_[node] != 0) {
    os << ": it held " << r2::human_bytes(held_[node])
       << " (resident memory and its /dev/shm segments)";
  }
  if (host.cgroup_limit != 0 && host.cgroup_limit < host.total) {
    os << "; the cluster's memory cgroup allows " << r2::human_bytes(host.cgroup_limit);
  } else {
    os << "; the host has " << r2::human_bytes(host.total);
  }
  os << ": run fewer warehouses or rows per node, fewer replicas, or more hosts (--hosts)";
  return Status(result.code(), os.str());
}

}  // namespace drtmx::bench
