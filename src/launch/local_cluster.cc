#include "local_cluster.h"

#include <cstdio>
#include <iostream>
#include <thread>

#include "node_options.h"
#include "process_group.h"
#include "r2/shm/shm_fabric.h"

namespace drtmx::bench {

namespace {
constexpr std::chrono::milliseconds kLeaveWait{5000};  // nodes leaving the coordinator
}  // namespace

r2::ControlServerConfig coordinator_config(const r2::FabricConfig& fabric,
                                           const std::string& listen,
                                           std::chrono::milliseconds join_timeout) {
  r2::ControlServerConfig sc;
  sc.listen = listen;
  sc.cluster = fabric.cluster;
  sc.key = fabric.cluster_key;
  sc.num_nodes = fabric.num_nodes;
  sc.join_timeout = join_timeout;
  sc.lease = std::chrono::milliseconds(fabric.lease_ms);
  sc.survive_failures = fabric.survive_failures;
  return sc;
}

Status run_node_threads(uint16_t nodes, const std::function<Status(uint16_t node)>& run) {
  std::vector<std::thread> ts;
  std::vector<Status> st(nodes);
  for (uint16_t n = 0; n < nodes; ++n) {
    ts.emplace_back([&, n] { st[n] = run(n); });
  }
  for (auto& t : ts) t.join();
  for (uint16_t n = 0; n < nodes; ++n) {
    if (!st[n].is_ok()) return st[n].with_context("node " + std::to_string(n));
  }
  return Status::ok();
}

Status run_node_processes(const r2::FabricConfig& fabric, std::chrono::milliseconds limit,
                          const std::function<std::vector<std::string>(int node)>& args) {
  ProcessGroup group;
  const std::string exe = self_exe();
  for (int n = 0; n < fabric.num_nodes; ++n) {
    DRTMX_RETURN_IF_ERROR(
        group.spawn("node " + std::to_string(n), exe, args(n), key_stdin(fabric)));
  }
  return group.wait_all(limit);
}

std::string lease_summary(const r2::ControlServer& server, uint32_t lease_ms) {
  const auto stats = server.lease_stats();
  int64_t max_us = 0;
  size_t who = 0;
  for (size_t n = 0; n < stats.size(); ++n) {
    if (stats[n].max_gap.count() > max_us) {
      max_us = stats[n].max_gap.count();
      who = n;
    }
  }
  char gap[32];
  std::snprintf(gap, sizeof gap, "%.1f", static_cast<double>(max_us) / 1000.0);
  return "leases: " + std::to_string(stats.size()) + " nodes, lease " + std::to_string(lease_ms) +
         " ms (renewed every " + std::to_string(lease_ms / 4) + " ms), max gap " + gap +
         " ms (node " + std::to_string(who) + "), epoch " + std::to_string(server.epoch());
}

LocalCluster::LocalCluster(std::unique_ptr<r2::ControlServer> server, bool shm, std::string cluster,
                           uint32_t lease_ms, bool survive)
    : server_(std::move(server)),
      lease_ms_(lease_ms),
      survive_(survive),
      shm_(shm),
      cluster_(std::move(cluster)),
      coordinator_("127.0.0.1:" + std::to_string(server_->port())) {}

Result<LocalCluster> LocalCluster::start(const r2::FabricConfig& fabric, const std::string& listen,
                                         std::chrono::milliseconds join_timeout) {
  const bool shm = fabric.backend == "shm";
  if (shm) r2::remove_shm_segments(fabric.cluster);
  auto server = r2::ControlServer::start(
      coordinator_config(fabric, listen.empty() ? "127.0.0.1:0" : listen, join_timeout));
  if (!server) return server.status();
  return LocalCluster(std::move(server.value()), shm, fabric.cluster, fabric.lease_ms,
                      fabric.survive_failures);
}

Status LocalCluster::finish(Status nodes_result) {
  if (nodes_result.is_ok()) nodes_result = server_->wait_done(kLeaveWait);
  if (survive_) std::cout << lease_summary(*server_, lease_ms_) << std::endl;
  if (shm_) r2::remove_shm_segments(cluster_);
  return nodes_result;
}

Result<HostedCoordinator> HostedCoordinator::start(bool host, const r2::FabricConfig& fabric,
                                                   const std::string& listen,
                                                   std::chrono::milliseconds join_timeout) {
  if (!host) return HostedCoordinator(nullptr);
  auto server = r2::ControlServer::start(coordinator_config(fabric, listen, join_timeout));
  if (!server) return server.status();
  return HostedCoordinator(std::move(server.value()));
}

Status HostedCoordinator::finish(Status node_result) {
  if (!server_) return node_result;
  Status left = server_->wait_done(kLeaveWait);
  return node_result.is_ok() ? left : node_result;
}

}  // namespace drtmx::bench
