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
  std::string backend = "shm";    // "shm" or "verbs"
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

  Status validate() const;
  // Settings that must be equal on every node of a cluster; the control
  // plane compares them at join and names the first one that differs.
  std::map<std::string, std::string> fingerprint() const;
};

}  // namespace drtmx::r2
