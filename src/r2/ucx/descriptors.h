// What a ucx node tells every other node at connect() (through the control
// plane's all-gather), and the blob format it travels in.
//
// Format: little-endian binary, every read length-checked.
//   u32 magic "DRUX" (0x58555244), u16 version (1)
//   u16 node, u16 num_nodes, u16 threads
//   u32 max_op_bytes
//   per thread: u32 length, the UCP worker address (opaque bytes)
//   u16 region count, then per region:
//       u16 id, u64 base VA, u64 size, u8 persistence (enum Persistence),
//       u32 length, the packed rkey (ucp_rkey_pack; opaque bytes)
// parse_node_desc refuses anything malformed (truncated, trailing bytes,
// wrong magic/version, a shape that does not match the cluster, an empty
// worker address or rkey, a duplicate region, an unknown persistence code)
// naming the sender and what is wrong. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::r2::ucx {

inline constexpr uint32_t kDescMagic = 0x58555244;  // "DRUX" little-endian
inline constexpr uint16_t kDescVersion = 1;

struct RegionDesc {
  RegionId id = 0;
  uint64_t base = 0;
  uint64_t size = 0;
  Persistence persistence = Persistence::kNone;
  std::string rkey;  // packed
  friend bool operator==(const RegionDesc&, const RegionDesc&) = default;
};

struct NodeDesc {
  NodeId node = 0;
  uint16_t num_nodes = 0;
  uint16_t threads = 0;
  uint32_t max_op_bytes = 0;
  std::vector<std::string> workers;  // [thread] UCP worker addresses
  std::vector<RegionDesc> regions;
  friend bool operator==(const NodeDesc&, const NodeDesc&) = default;
};

std::string serialize_node_desc(const NodeDesc& d);
Result<NodeDesc> parse_node_desc(const std::string& blob, NodeId from, uint16_t num_nodes,
                                 uint16_t threads);

}  // namespace drtmx::r2::ucx
