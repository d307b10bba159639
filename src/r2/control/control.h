// The control plane: how nodes find each other, agree on a configuration,
// exchange descriptors and meet at barriers. TCP + protobuf (control.proto).
//
// One ControlServer (the coordinator) serves one cluster of `num_nodes`
// nodes. It runs in whichever process hosts it: a launcher (drtmx-bench,
// r2-bench --processes), node 0 of a multi-host cluster, or a test. Every
// node — including one in the coordinator's process — talks to it through a
// ControlClient.
//
// Guarantees (each failure reaches EVERY connected node as a clear error,
// never a hang):
//   * join: a node that does not connect within the timeout is named in the
//     error every other node gets; a duplicate node id, a node id out of
//     range, a different cluster name or node count, or a configuration
//     fingerprint that differs (the first differing key, with both values) is
//     refused and the whole cluster is failed with that reason.
//   * exchange/barrier are collective: every node calls them with the same
//     name in the same order. They complete when all nodes have called them,
//     or fail when a node fails, disconnects, or the timeout passes.
//   * A node that disconnects before leave() fails the cluster.
//
// Threading: a ControlClient is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::r2 {

struct ControlServerConfig {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free port
  std::string cluster = "drtmx";
  uint16_t num_nodes = 1;
  // All nodes must have joined within this time after the server started.
  std::chrono::milliseconds join_timeout{10000};
  // Called on the server's thread for every ControlClient::publish(), in
  // arrival order per node. Must be quick (it holds up the control plane).
  std::function<void(uint16_t node, const std::string& topic, const std::string& blob)> on_publish;
};

class ControlServer {
 public:
  // Binds and starts serving on a background thread.
  static Result<std::unique_ptr<ControlServer>> start(const ControlServerConfig& cfg);
  virtual ~ControlServer() = default;
  // The bound port (useful with port 0).
  virtual uint16_t port() const = 0;
  // Blocks until every node has left cleanly (ok) or the cluster failed
  // (the failure), or `timeout` passed (kTimeout).
  virtual Status wait_done(std::chrono::milliseconds timeout) = 0;
};

struct ControlClientConfig {
  std::string coordinator = "127.0.0.1:7400";  // host:port of the server
  std::string cluster = "drtmx";
  uint16_t node = 0;
  uint16_t num_nodes = 1;
  // Address other nodes may use to reach this one (for multi-host setups);
  // informational, returned in membership().
  std::string host = "127.0.0.1";
  // Must be equal on every node (see FabricConfig::fingerprint()).
  std::map<std::string, std::string> fingerprint;
  // Connecting (with retries) and waiting for all nodes to join.
  std::chrono::milliseconds join_timeout{10000};
  // Default bound for exchange() and barrier().
  std::chrono::milliseconds op_timeout{60000};
};

struct Member {
  uint16_t node = 0;
  std::string host;
};

class ControlClient {
 public:
  // Connects (retrying until join_timeout), joins, and returns once every
  // node has joined and the membership is known.
  static Result<std::unique_ptr<ControlClient>> join(const ControlClientConfig& cfg);
  virtual ~ControlClient() = default;

  virtual uint16_t node() const = 0;
  virtual uint16_t num_nodes() const = 0;
  virtual const std::vector<Member>& membership() const = 0;

  // All-gather: every node contributes `blob` under `name`; the result holds
  // every node's blob, indexed by node id.
  virtual Result<std::vector<std::string>> exchange(const std::string& name,
                                                    const std::string& blob,
                                                    std::chrono::milliseconds timeout) = 0;
  Result<std::vector<std::string>> exchange(const std::string& name, const std::string& blob) {
    return exchange(name, blob, default_timeout());
  }
  // Returns when every node has reached the barrier `name`.
  Status barrier(const std::string& name, std::chrono::milliseconds timeout) {
    auto r = exchange(name, std::string(), timeout);
    return r.is_ok() ? Status::ok() : r.status();
  }
  Status barrier(const std::string& name) { return barrier(name, default_timeout()); }
  virtual std::chrono::milliseconds default_timeout() const = 0;
  // Sends `blob` under `topic` to the coordinator's on_publish callback.
  // Fire-and-forget: no collective, no reply; errors only if the connection
  // is gone.
  virtual Status publish(const std::string& topic, const std::string& blob) = 0;
  // Fails the whole cluster with `why` (this node's id is prepended).
  virtual void report_failure(const std::string& why) = 0;
  // Leaves cleanly. Called by the destructor if not called before.
  virtual Status leave() = 0;
};

}  // namespace drtmx::r2
