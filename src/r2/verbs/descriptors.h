// Node descriptors: what a node tells every other node at connect() through
// ControlClient::exchange, and the blob format they travel in.
//
// Format: explicit little-endian binary, every read length-checked.
//   u32 magic "DRVX" (0x58565244), u16 version (2)
//   u16 node, u16 num_nodes, u16 threads
//   u32 msg_mtu        largest message payload this node accepts
//   u32 max_op_bytes   largest READ/WRITE its port accepts
//   u32 recv_buffers   receive buffers per UD QP (the credit plan needs it
//                      equal on every node)
//   u16 region count, then per region:
//       u16 id, u64 base VA, u64 size, u8 persistence (enum Persistence),
//       u32 rkey[threads]
//   per thread (threads entries):
//       u32 ud_qpn, u32 qkey, u16 lid, u8 port, u8 active_mtu (enum ibv_mtu),
//       u8 gid[16],
//       u32 rc_qpn[num_nodes]   (the QP of this thread toward each node)
//
// parse_node_desc refuses anything malformed (truncated, trailing bytes,
// wrong magic/version, a node id/shape that does not match the cluster,
// duplicate regions, an unknown persistence code, QPNs beyond 24 bits) with a message naming the
// sender node and what is wrong. Pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::r2::verbs {

inline constexpr uint32_t kDescMagic = 0x58565244;  // "DRVX" little-endian
inline constexpr uint16_t kDescVersion = 2;         // 2: region persistence

struct RegionDesc {
  RegionId id = 0;
  uint64_t base = 0;
  uint64_t size = 0;
  std::vector<uint32_t> rkeys;  // [thread]
  Persistence persistence = Persistence::kNone;
  friend bool operator==(const RegionDesc&, const RegionDesc&) = default;
};

struct ThreadDesc {
  uint32_t ud_qpn = 0;
  uint32_t qkey = 0;
  uint16_t lid = 0;
  uint8_t port = 1;
  uint8_t active_mtu = 0;  // enum ibv_mtu of the port (1..5)
  std::array<uint8_t, 16> gid{};
  std::vector<uint32_t> rc_qpn;  // [peer node]
  friend bool operator==(const ThreadDesc&, const ThreadDesc&) = default;
};

struct NodeDesc {
  NodeId node = 0;
  uint16_t num_nodes = 0;
  uint16_t threads = 0;
  uint32_t msg_mtu = 0;
  uint32_t max_op_bytes = 0;
  uint32_t recv_buffers = 0;
  std::vector<RegionDesc> regions;
  std::vector<ThreadDesc> thread_descs;  // [thread]
  friend bool operator==(const NodeDesc&, const NodeDesc&) = default;
};

// Requires a consistent desc (rkeys.size() == threads, rc_qpn.size() ==
// num_nodes, thread_descs.size() == threads).
std::string serialize_node_desc(const NodeDesc& d);

// Parses the blob node `from` contributed; it must describe node `from` of a
// cluster with `num_nodes` nodes of `threads` threads.
Result<NodeDesc> parse_node_desc(const std::string& blob, NodeId from, uint16_t num_nodes,
                                 uint16_t threads);

}  // namespace drtmx::r2::verbs
