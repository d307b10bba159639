// The RPC layer's wire format, inside fabric messages (at most MTU bytes).
//
// Every message starts with an RpcHeader. A logical request or reply larger
// than (MTU - header) is split into fragments sent back to back on the same
// channel; each fragment carries the total length and its offset, so the
// receiver reassembles per source (node, thread) and can tell a missing or
// foreign fragment from a good one. Logical messages are bounded by the
// worker's max_rpc_bytes: larger ones are refused at the sender with an
// error, never truncated.
#pragma once

#include <cstdint>
#include <cstring>

namespace drtmx::r2 {

enum class RpcType : uint8_t {
  kRequest = 1,  // wants a reply
  kReply = 2,
  kOneWay = 3,  // no reply; acknowledged passively
  kAck = 4,     // carries only acknowledgements (header.acks)
};

enum RpcFlags : uint8_t {
  kRpcFlagError = 1,  // a reply carrying an error text instead of data
};

struct RpcHeader {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint16_t rpc_id = 0;
  uint16_t cor = 0;     // the requesting coroutine (requests and replies)
  uint16_t acks = 0;    // one-way messages of the receiver acknowledged here
  uint32_t seq = 0;     // the request's sequence number (matches the reply)
  uint32_t total = 0;   // length of the whole logical message
  uint32_t offset = 0;  // this fragment's offset in it
  uint32_t reserved = 0;
};
static_assert(sizeof(RpcHeader) == 24);

inline bool valid_type(uint8_t t) {
  return t >= 1 && t <= 4;
}

// Parses a received message. False when it is too short or its header is
// inconsistent (unknown type, fragment outside the logical message, a
// logical message above `max_total`).
inline bool parse_rpc(const uint8_t* msg, uint32_t len, uint32_t max_total, RpcHeader* h,
                      const uint8_t** payload, uint32_t* payload_len) {
  if (len < sizeof(RpcHeader)) return false;
  std::memcpy(h, msg, sizeof(RpcHeader));
  if (!valid_type(h->type)) return false;
  const uint32_t chunk = len - static_cast<uint32_t>(sizeof(RpcHeader));
  if (h->total > max_total || h->offset > h->total || chunk > h->total - h->offset) return false;
  if (chunk == 0 && h->total != 0) return false;
  *payload = msg + sizeof(RpcHeader);
  *payload_len = chunk;
  return true;
}

}  // namespace drtmx::r2
