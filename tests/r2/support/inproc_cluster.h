// A cluster of shm nodes that are threads of the test process: fabrics
// built, regions registered, connected through LocalControl.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "r2/fabric_factory.h"
#include "r2/shm/shm_fabric.h"
#include "r2/support/local_control.h"
#include "r2/support/ucx_pump.h"

namespace drtmx::r2::testing {

// Test clusters are named "t<pid>-..."; a test process that crashed (an
// assertion abort, a sanitizer report) leaves its segments behind. Remove
// those whose process is gone, once per test process.
inline void sweep_dead_test_segments() {
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return;
  std::vector<std::string> dead;
  while (dirent* e = readdir(d)) {
    int pid = 0;
    if (std::sscanf(e->d_name, "drtmx.t%d-", &pid) == 1 && pid > 0 && kill(pid, 0) != 0 &&
        errno == ESRCH) {
      dead.push_back(std::string("/") + e->d_name);
    }
  }
  closedir(d);
  for (auto& n : dead) shm_unlink(n.c_str());
}

inline std::string unique_cluster(const std::string& tag) {
  static std::atomic<int> counter{0};
  static const bool swept = (sweep_dead_test_segments(), true);
  (void)swept;
  return "t" + std::to_string(getpid()) + "-" + tag + "-" + std::to_string(counter++);
}

// The fabric the suite runs on: DRTMX_TEST_FABRIC, or "shm". Tests of a
// property only shm has (--fabric-delay-ns, ops complete at the doorbell,
// message rings) skip elsewhere, saying so.
inline std::string test_fabric() {
  const char* f = std::getenv("DRTMX_TEST_FABRIC");
  return f != nullptr && *f != 0 ? f : "shm";
}

struct InProcCluster {
  // Builds `nodes` fabrics with `threads` endpoints each and the given
  // regions (id, bytes) on every node; `tweak` may change each config;
  // `more` may register more regions (e.g. file regions) on each node;
  // `growable`: regions registered growable (id, virtual bytes).
  static std::unique_ptr<InProcCluster> make(
      uint16_t nodes, uint16_t threads, std::vector<std::pair<RegionId, size_t>> regions,
      const std::function<void(FabricConfig&)>& tweak = nullptr,
      const std::function<Status(NodeId, Fabric&)>& more = nullptr,
      const std::vector<std::pair<RegionId, size_t>>& growable = {}) {
    auto c = std::make_unique<InProcCluster>();
    c->cluster = unique_cluster("c");
    auto hub = std::make_shared<LocalControlHub>(nodes);
    for (uint16_t n = 0; n < nodes; ++n) {
      FabricConfig cfg;
      cfg.cluster = c->cluster;
      cfg.node = n;
      cfg.num_nodes = nodes;
      cfg.threads = threads;
      cfg.ring_bytes = 64 * 1024;
      // DRTMX_TEST_FABRIC=ucx runs a suite on the ucx fabric, =ucx-tcp on
      // it with UCX_TLS=tcp (the network path; ctest registers the
      // fabric-neutral suites a second time so: tests/CMakeLists.txt). A
      // test's tweak still wins.
      if (const std::string fab = test_fabric(); fab != "shm") {
        cfg.backend = fab == "ucx-tcp" ? "ucx" : fab;
        if (fab == "ucx-tcp") setenv("UCX_TLS", "tcp", 1);
      }
      if (tweak) tweak(cfg);
      auto f = make_fabric(cfg);
      if (!f) {
        c->error = f.status();
        return c;
      }
      for (auto& [id, bytes] : regions) {
        auto r = (*f)->register_region(id, bytes);
        if (!r) {
          c->error = r.status();
          return c;
        }
      }
      for (auto& [id, bytes] : growable) {
        auto r = (*f)->register_growable_region(id, bytes);
        if (!r) {
          c->error = r.status();
          return c;
        }
      }
      if (more) {
        if (Status s = more(n, **f); !s.is_ok()) {
          c->error = s;
          return c;
        }
      }
      c->fabrics.push_back(std::move(f.value()));
      c->controls.push_back(std::make_unique<LocalControl>(hub, n, nodes));
    }
    std::vector<std::thread> ts;
    std::vector<Status> st(nodes);
    for (uint16_t n = 0; n < nodes; ++n) {
      ts.emplace_back([&, n] { st[n] = c->fabrics[n]->connect(*c->controls[n]); });
    }
    for (auto& t : ts) t.join();
    for (auto& s : st) {
      if (!s.is_ok()) c->error = s;
    }
    return c;
  }

  ~InProcCluster() {
    fabrics.clear();
    remove_shm_segments(cluster);
  }

  Fabric& f(NodeId n) { return *fabrics[n]; }
  // For tests that drive endpoints themselves, without Workers: the
  // endpoints of `nodes` polled from threads of their own while the result
  // lives. On ucx over TCP a one-sided op is executed by the TARGET's UCP
  // worker, which runs only when its endpoint is polled (ucx_pump.h); on
  // shm (and an RNIC) the target's CPU takes no part, and nothing is made.
  std::unique_ptr<Pump> serve(const std::vector<NodeId>& nodes) {
    if (fabrics.empty() || fabrics[0]->info().backend != "ucx") return nullptr;
    std::vector<Endpoint*> eps;
    for (NodeId n : nodes) {
      for (ThreadId t = 0; t < fabrics[n]->info().threads; ++t) eps.push_back(f(n).endpoint(t));
    }
    return std::make_unique<Pump>(eps);
  }
  uint8_t* base(NodeId n, RegionId r) { return fabrics[n]->region(r)->base; }

  std::string cluster;
  Status error;
  std::vector<std::unique_ptr<Fabric>> fabrics;
  std::vector<std::unique_ptr<LocalControl>> controls;
};

// Polls `ep` until `want` completions arrived (bounded: fails after 5 s).
inline std::vector<Completion> poll_n(Endpoint* ep, size_t want) {
  std::vector<Completion> out;
  Completion buf[32];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
    int n = ep->poll(buf, 32);
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

}  // namespace drtmx::r2::testing
