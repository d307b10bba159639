// Runs a cluster whose nodes are thread groups of the test process, joined
// through a real ControlServer (TCP, as drtmx-bench runs them): one thread
// per node calls node_fn(node, coordinator, cluster) and returns its outcome.
// The cluster's shm segments are removed before and after.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "r2/control/control.h"
#include "r2/shm/shm_fabric.h"
#include "support/test_cluster_key.h"

namespace drtmx::txn::testing {

// `name`: unique per concurrent run in this process (the pid is added).
// Empty when the control server cannot start (the failure is reported).
template <class Outcome, class NodeFn>
std::vector<Outcome> run_thread_cluster(const std::string& name, uint16_t nodes, NodeFn node_fn) {
  const std::string cluster = name + std::to_string(getpid());
  r2::remove_shm_segments(cluster);
  r2::ControlServerConfig sc;
  sc.cluster = cluster;
  sc.num_nodes = nodes;
  sc.key = drtmx::testing::kTestClusterKey;
  auto server = r2::ControlServer::start(sc);
  EXPECT_TRUE(server.is_ok()) << server.status().to_string();
  if (!server.is_ok()) return {};
  const std::string coord = "127.0.0.1:" + std::to_string((*server)->port());
  std::vector<Outcome> outs(nodes);
  std::vector<std::thread> ts;
  for (uint16_t n = 0; n < nodes; ++n) {
    ts.emplace_back([&, n] { outs[n] = node_fn(n, coord, cluster); });
  }
  for (auto& t : ts) t.join();
  r2::remove_shm_segments(cluster);
  return outs;
}

}  // namespace drtmx::txn::testing
