// membership-node: one node of a survive-failures cluster, for the
// membership tests (membership_process_test.cc), which host the coordinator,
// start three of these, and SIGKILL / SIGSTOP / SIGCONT them.
//
//   membership-node COORDINATOR CLUSTER NODE NODES LEASE_MS
//
// The node joins (survive mode, lease LEASE_MS), then its worker keeps
// adding 1 with one-sided FAA to word [NODE] of region 1 of every other
// member, skipping a peer once it is not a member in this node's view (a
// kFenced completion is counted, never fatal). Its main thread reports to
// the coordinator (Publish, topic "m"):
//   "ready"                               once its FAAs reached every peer
//   "view E L"                            each new epoch E, L = live nodes
//   "words W0,W1,..."                     after each view: this node's words
//   "final W0,W1,... fenced F"            at SIGUSR1, after which it leaves
// and exits 0. If it learns it was removed, it prints the reason on stderr
// and exits 3 without touching anything (the "stops cleanly" path).
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "r2/node_runtime.h"
#include "r2/sched/co.h"
#include "r2/sched/op_batch.h"
#include "support/test_cluster_key.h"

namespace {

using namespace drtmx;
using namespace drtmx::r2;

std::atomic<bool> g_finish{false};
void on_usr1(int) {
  g_finish.store(true);
}

constexpr RegionId kWords = 1;
constexpr RegionId kScratch = 2;

std::string words_of(NodeRuntime& rt, uint16_t nodes) {
  const uint8_t* base = rt.fabric().region(kWords)->base;
  std::string s;
  for (uint16_t n = 0; n < nodes; ++n) {
    const uint64_t v =
        __atomic_load_n(reinterpret_cast<const uint64_t*>(base + 8 * n), __ATOMIC_ACQUIRE);
    s += (n ? "," : "") + std::to_string(v);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: membership-node COORDINATOR CLUSTER NODE NODES LEASE_MS\n";
    return 1;
  }
  std::signal(SIGUSR1, on_usr1);
  NodeRuntimeConfig cfg;
  cfg.fabric.cluster = argv[2];
  cfg.fabric.cluster_key = drtmx::testing::kTestClusterKey;
  cfg.fabric.node = static_cast<NodeId>(std::stoi(argv[3]));
  cfg.fabric.num_nodes = static_cast<uint16_t>(std::stoi(argv[4]));
  cfg.fabric.lease_ms = static_cast<uint32_t>(std::stoul(argv[5]));
  cfg.fabric.survive_failures = true;
  cfg.fabric.ring_bytes = 64 * 1024;
  cfg.control.coordinator = argv[1];
  cfg.control.join_timeout = std::chrono::milliseconds(20000);
  cfg.worker.coroutines = 1;
  cfg.regions = {{kWords, 4096}, {kScratch, 4096}};
  if (Status s = cfg.fabric.validate(); !s.is_ok()) {
    std::cerr << s.to_string() << "\n";
    return 1;
  }
  auto rt = NodeRuntime::start(cfg);
  if (!rt) {
    std::cerr << "membership-node " << argv[3] << ": " << rt.status().to_string() << "\n";
    return 1;
  }
  NodeRuntime& r = **rt;
  const NodeId self = cfg.fabric.node;
  const uint16_t nodes = cfg.fabric.num_nodes;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> fenced{0};
  std::atomic<uint16_t> reached{0};  // peers this node's FAAs reached at least once
  r.launch([&](Worker& w) {
    (void)w.spawn([&](Co& co) {
      auto* old = reinterpret_cast<uint64_t*>(r.fabric().region(kScratch)->base);
      std::vector<bool> skip(nodes, false), hit(nodes, false);
      while (!stop.load(std::memory_order_relaxed)) {
        bool any = false;
        for (NodeId p = 0; p < nodes; ++p) {
          if (p == self || skip[p]) continue;
          if (!r.control().view().is_member(p)) {
            skip[p] = true;
            continue;
          }
          OpBatch b;
          b.faa({p, kWords, 8u * self}, 1, old);
          const OpStatus st = co.run(b);
          if (st == OpStatus::kOk && !hit[p]) {
            hit[p] = true;
            reached.fetch_add(1);
          }
          if (st == OpStatus::kFenced) {
            fenced.fetch_add(1);
            skip[p] = true;
          } else if (st != OpStatus::kOk) {
            std::cerr << "node " << self << ": FAA to node " << p << ": " << op_status_name(st)
                      << "\n";
            stop.store(true);
          }
          any = true;
        }
        if (!any) co.yield_idle();
      }
    });
  });
  // "ready" once this node's FAAs have landed on every peer (bounded).
  const auto ready_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (reached.load() + 1u < nodes && std::chrono::steady_clock::now() < ready_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (void)r.control().publish("m", "ready");
  uint64_t seen = 0;
  // Bounded: the tests end a run within seconds; 120 s is a hang.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int code = 0;
  while (!g_finish.load()) {
    if (Status h = r.health(); !h.is_ok()) {
      std::cerr << "membership-node " << self << ": stopping: " << h.message() << "\n";
      code = 3;
      break;
    }
    if (const uint64_t e = r.control().epoch(); e != seen) {
      seen = e;
      std::string live;
      const MembershipView::Snapshot v = r.control().view().snapshot();
      for (uint16_t n = 0; n < nodes; ++n) {
        if (v.live.test(n)) live += (live.empty() ? "" : ",") + std::to_string(n);
      }

      (void)r.control().publish("m", "view " + std::to_string(e) + " " + live);
      (void)r.control().publish("m", "words " + words_of(r, nodes));
    }
    if (std::chrono::steady_clock::now() > limit) {
      std::cerr << "membership-node " << self << ": no SIGUSR1 within 120 s\n";
      code = 2;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop.store(true);
  (void)r.wait_coroutines(std::chrono::seconds(10));
  if (code != 0) {
    r.stop();
    return code;
  }
  // Every survivor has stopped issuing once all passed this barrier.
  Status st = r.control().barrier("membership-node.stopped");
  (void)r.control().publish(
      "m", "final " + words_of(r, nodes) + " fenced " + std::to_string(fenced.load()));
  r.stop();
  if (st.is_ok()) st = r.control().leave();
  if (!st.is_ok()) {
    std::cerr << "membership-node " << self << ": " << st.to_string() << "\n";
    return 4;
  }
  return 0;
}
