// Run-time configuration of a fabric (one node's view). Validated values
// only: make_fabric() calls validate() and refuses a bad configuration with a
// message that names the option.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::r2 {

struct FabricConfig {
  std::string backend = "shm";    // "shm", "verbs" or "ucx"
  std::string cluster = "drtmx";  // names shm segments; must match on all nodes
  NodeId node = 0;
  uint16_t num_nodes = 1;
  uint16_t threads = 1;  // worker threads (endpoints) per node

  // Requests a channel may have posted but not completed.
  uint32_t send_queue_depth = 256;
  // Largest message payload wanted. The endpoint may offer less (verbs: the
  // port MTU minus a header); Endpoint::mtu() is what holds.
  uint32_t mtu = 4096;

  // shm: a completion (or message) becomes visible this long after the
  // doorbell that sent it. 0 = at once.
  uint64_t delay_ns = 0;
  // shm: bytes of each message ring, one per (sender thread, receiver thread).
  uint32_t ring_bytes = 256 * 1024;

  // verbs: device name ("" = the first one), port, GID index (RoCE/rxe).
  std::string device;
  uint8_t ib_port = 1;
  int gid_index = 0;
  // verbs: receive buffers pre-posted on each UD QP.
  uint32_t recv_buffers = 1024;
  // ucx: one-sided ops through UCX's own RMA and atomics (on tcp: UCX's
  // emulation, instead of the backend's active messages), each channel
  // ordered as when UCX spreads them over several lanes (r2/ucx/README.md,
  // "Ordering"): an op that is not a READ, and any op after one, waits for
  // the earlier ones' remote completion. For tests and for measuring what
  // that order costs.
  bool ucx_strict_order = false;

  // Membership (r2/control/README.md, "Leases and membership"). Every node
  // renews a lease of `lease_ms` through the control plane every
  // lease_ms / 4; with `survive_failures` the coordinator removes a node
  // whose lease expired or whose connection closed, and the others keep
  // running (epoch + 1, fabric fences the removed node). Without it (the
  // default until the engine reconfigures) a node failure ends the run and
  // leases are only measured. The default lease was chosen from renewal gaps
  // measured with 3 node processes on 2 busy cores (docs/membership.md).
  uint32_t lease_ms = kDefaultLeaseMs;
  bool survive_failures = false;
  // The cluster key (r2/control/README.md, "The cluster key"): the secret
  // every node and the coordinator hold; a join proves it by an HMAC over
  // fresh nonces. Never part of the fingerprint, never printed. Launchers
  // make one per run or read --cluster-key-file (r2/control/cluster_key.h).
  std::string cluster_key;
  static constexpr uint32_t kDefaultLeaseMs = 1000;
  static constexpr uint32_t kMinLeaseMs = 20;
  static constexpr uint32_t kMaxLeaseMs = 600000;

  Status validate() const;
  // Settings that must be equal on every node of a cluster; the control
  // plane compares them at join and names the first one that differs.
  std::map<std::string, std::string> fingerprint() const;
};

}  // namespace drtmx::r2
