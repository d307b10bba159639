// The header every UD message carries in front of its payload.
//
// UD tells a receiver only the sender's QPN, so the header names the source
// (node, thread), and it carries the credits the sender returns to the
// receiver thread (see credits.h). Explicit little-endian layout, 8 bytes:
//
//   [0]     magic 0xD7
//   [1]     type (1 = data, 2 = credit-only; a credit-only message has no payload)
//   [2..3]  source node
//   [4..5]  source thread
//   [6..7]  credits returned to the receiver thread
//
// A UD receive buffer holds the 40-byte GRH, then this header, then the
// payload. Pure functions.
#pragma once

#include <cstdint>

#include "r2/fabric.h"

namespace drtmx::r2::verbs {

inline constexpr uint32_t kGrhBytes = 40;
inline constexpr uint32_t kMsgHeaderBytes = 8;
inline constexpr uint8_t kMsgMagic = 0xD7;

enum class MsgType : uint8_t { kData = 1, kCredit = 2 };

struct MsgHeader {
  MsgType type = MsgType::kData;
  NodeId src_node = 0;
  ThreadId src_thread = 0;
  uint16_t credits = 0;
  friend bool operator==(const MsgHeader&, const MsgHeader&) = default;
};

void encode_msg_header(const MsgHeader& h, uint8_t* out);
// `bytes` is the message length after the GRH (header + payload). False for
// a short message, a wrong magic, an unknown type, or a credit-only message
// with a payload.
bool decode_msg_header(const uint8_t* in, uint32_t bytes, MsgHeader* out);

}  // namespace drtmx::r2::verbs
