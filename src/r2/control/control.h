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
//   * Default ("fail-stop") mode: a node that disconnects before leave()
//     fails the cluster.
//
// "Survive failures" mode (ControlServerConfig::survive_failures, opt-in
// until the engine can reconfigure; r2/control/README.md, membership.h):
//   * Leases. After the join, every client renews a lease by a Heartbeat
//     every lease/4 from its own thread (any frame renews it too). The
//     coordinator removes a node whose lease expired (no renewal for
//     `lease`) or whose connection closed before leave(). Each removal
//     raises the epoch by one; every survivor gets a MembershipChange (new
//     epoch, live nodes, removed nodes with the reason); the removed node
//     gets Removed (epoch, reason) — if it is alive to read it, e.g. after
//     SIGSTOP/SIGCONT — and its connection is closed. From then on every
//     call on its client returns "removed from the cluster at epoch E
//     (reason)", and it cannot join again.
//   * Collectives: one in progress when a removal happens (some survivor
//     entered it) FAILS on every survivor with kAborted naming the change —
//     also on a survivor that enters it only later; collectives started
//     after the change complete when every live node contributed, and hold
//     "" for the nodes that are not members. Rationale: a caller of an
//     all-gather expects every node's blob; one that silently lacks one is
//     worse than an error it can retry under a name of the new epoch.
//   * The cluster ends ok when every live node left; a failure report
//     (report_failure), a configuration mismatch or a missing node at join
//     still fail the whole cluster.
// With leases on (both modes) the coordinator records every node's largest
// gap between renewals (lease_stats()), the number to choose --lease-ms by,
// and renews its own lease to each node: a Heartbeat every lease/4 of that
// node's lease. A node that hears nothing from the coordinator for a whole
// lease (or whose connection closes) has lost it (ControlClientConfig::
// on_lost): in both modes, every call on its client fails from then on.
//
// Connections: the coordinator speaks first, with a Challenge; a
// connection becomes a node only by answering it with a join MACed under
// the cluster key (cluster_key.h), and the node believes the coordinator
// only once it proved the key back. A connection that sends anything else,
// garbage, a frame above 64 KiB, a join of another cluster, without a key,
// with a wrong key or answering another connection's challenge (a replay),
// or that does not answer within handshake_timeout, is turned away — one
// line on the coordinator's stderr, the reason to the peer — and nothing
// else changes. A connection in the handshake holds no node's place. Once
// every node joined, a new connection is refused at once, naming why, never
// left to time out; a join then never fails the running cluster (a removed
// node's is answered Removed).
//
// Threading: a ControlClient's calls are made by one thread at a time;
// epoch(), view() and the on_change callback are the exceptions (below).
// The client runs one thread of its own after the join: it reads every
// frame from the coordinator and sends the heartbeats.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/control/membership.h"

namespace drtmx::r2 {

// Connections in the key handshake at once (ControlServerConfig).
constexpr size_t kMaxHandshakes = 64;

struct ControlServerConfig {
  // host:port; port 0 picks a free port. The host is the one address
  // bound ("*" or 0.0.0.0: every interface, only when asked for).
  std::string listen = "127.0.0.1:0";
  std::string cluster = "drtmx";
  // The cluster key (at least kMinClusterKeyBytes, cluster_key.h): a
  // connection becomes a node only after proving it (README.md, "The
  // cluster key"). Required.
  std::string key;
  // A connection must complete the key handshake (send its SignedJoin)
  // within this long after it was accepted, else it is turned away; the
  // join timeout caps it. A connection in the handshake holds no node's
  // place; at most kMaxHandshakes are in it at once (the oldest is turned
  // away for a newer one).
  std::chrono::milliseconds handshake_timeout{2000};
  uint16_t num_nodes = 1;
  // All nodes must have joined within this time after the server started.
  std::chrono::milliseconds join_timeout{10000};
  // Called on the server's thread for every ControlClient::publish(), in
  // arrival order per node. Must be quick (it holds up the control plane).
  std::function<void(uint16_t node, const std::string& topic, const std::string& blob)> on_publish;
  // Leases: when above 0, every node must join with this lease (else the
  // cluster fails at join, naming both values). 0: whatever the nodes
  // renew (their fingerprint makes them agree) is measured, never enforced.
  // survive_failures needs a lease.
  std::chrono::milliseconds lease{0};
  // false (default): a node that disconnects without leaving fails the
  // cluster, and leases are only measured. true: such a node, or one whose
  // lease expired, is removed and the others keep running (see above).
  bool survive_failures = false;
  // Called on the server's thread after every membership change (survive
  // mode), before the survivors are told. Must be quick.
  std::function<void(const MembershipChange&)> on_membership;
};

// What the coordinator observed of one node's lease renewals.
struct LeaseStats {
  uint64_t renewals = 0;                 // heartbeats and other frames after the join
  std::chrono::microseconds max_gap{0};  // largest time between two renewals
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
  // The current epoch (0 until the first removal) and live set. Any thread.
  virtual uint64_t epoch() const = 0;
  virtual NodeSet live() const = 0;
  // Per node, what its lease renewals looked like so far. Any thread.
  virtual std::vector<LeaseStats> lease_stats() const = 0;
};

struct ControlClientConfig {
  std::string coordinator = "127.0.0.1:7400";  // host:port of the server
  std::string cluster = "drtmx";
  // The cluster key. The node proves it to the coordinator and joins only
  // a coordinator that proves it back. Empty: the node has none, and the
  // coordinator turns it away (saying so on both sides).
  std::string key;
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
  // The lease this node renews every lease/4 (0: no heartbeats) and the
  // mode it expects; both must equal the coordinator's.
  std::chrono::milliseconds lease{0};
  bool survive_failures = false;
  // Called once on the client's own thread when the coordinator is gone:
  // its connection closed or broke, it sent a malformed frame, or — with a
  // lease above 0 — nothing came from it for a whole lease. (The lease runs
  // both ways: the coordinator sends every node a Heartbeat every lease/4,
  // so a silent coordinator is a stopped process or an unreachable host.)
  // Not called for the coordinator's own decisions (a failed cluster, this
  // node's removal), nor after leave(). Every call on the client fails with
  // the same reason from then on, whether or not this is set. A node
  // process uses it to end instead of running on without a cluster
  // (r2::exit_when_orphaned in node_runtime.h). Set before join().
  std::function<void(const Status&)> on_lost;
  // Called on the client's own thread for each membership change this node
  // learns (survivors), and once when this node learns it was removed
  // (change.removed names it; change.live does not) — BEFORE view() and
  // changes() show it, so that whoever sees the new epoch in view() knows
  // the callback (e.g. the node runtime fencing its fabric) has run. Must be
  // quick and must not call the client. Set before join().
  std::function<void(const MembershipChange&)> on_change;
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
  // Who joined (fixed at join; see view() for who is still a member).
  virtual const std::vector<Member>& membership() const = 0;
  // The membership as this node knows it now. Any thread, lock-free
  // (MembershipView). Epoch 0 with every node live until a change.
  virtual const MembershipView& view() const = 0;
  uint64_t epoch() const { return view().epoch(); }
  // Every change learnt so far, in order (a copy; takes a lock: not for
  // hot paths).
  virtual std::vector<MembershipChange> changes() const = 0;
  // ok while this node is a member of a live cluster; otherwise why not
  // ("removed from the cluster at epoch E (...)", "cluster failed: ...").
  // Any thread.
  virtual Status health() const = 0;

  // All-gather: every node contributes `blob` under `name`; the result holds
  // every node's blob, indexed by node id ("" for a non-member, survive
  // mode). kAborted when a membership change interrupted it (survive mode).
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
