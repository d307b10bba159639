// WrTag: what the verbs backend packs into the 64-bit ibv wr_id.
//
// The user's own 64-bit wr_id cannot travel in the ibv wr_id together with
// the backend's bookkeeping, so the ibv wr_id carries a tag instead:
//
//   bits 63..56  kind     (kRc, kUdSend, kUdRecv; 0 is never a valid tag)
//   bits 55..48  flags    (kForced: a signal the backend added itself)
//   bits 47..32  channel  (RC: peer node; UD recv: 0; UD send: 0)
//   bits 31..0   seq      (RC/UD send: sequence number of the post on the
//                          channel; UD recv: receive buffer index)
//
// The user's wr_id lives in the channel's slot array indexed by seq (see
// rc_channel.h). Pure functions; usable from any thread.
#pragma once

#include <cstdint>

namespace drtmx::r2::verbs {

enum class WrKind : uint8_t { kRc = 1, kUdSend = 2, kUdRecv = 3 };

inline constexpr uint8_t kWrFlagForced = 0x01;
inline constexpr uint8_t kWrKnownFlags = kWrFlagForced;

struct WrTag {
  WrKind kind = WrKind::kRc;
  uint8_t flags = 0;
  uint16_t channel = 0;
  uint32_t seq = 0;

  bool forced() const { return (flags & kWrFlagForced) != 0; }
  friend bool operator==(const WrTag&, const WrTag&) = default;
};

constexpr uint64_t encode_wr_id(const WrTag& t) {
  return (uint64_t{static_cast<uint8_t>(t.kind)} << 56) | (uint64_t{t.flags} << 48) |
         (uint64_t{t.channel} << 32) | uint64_t{t.seq};
}

// False when `id` is not a tag this backend produced (unknown kind or flags).
constexpr bool decode_wr_id(uint64_t id, WrTag* out) {
  const auto kind = static_cast<uint8_t>(id >> 56);
  const auto flags = static_cast<uint8_t>(id >> 48);
  if (kind < static_cast<uint8_t>(WrKind::kRc) || kind > static_cast<uint8_t>(WrKind::kUdRecv)) {
    return false;
  }
  if ((flags & ~kWrKnownFlags) != 0) return false;
  out->kind = static_cast<WrKind>(kind);
  out->flags = flags;
  out->channel = static_cast<uint16_t>(id >> 32);
  out->seq = static_cast<uint32_t>(id);
  return true;
}

}  // namespace drtmx::r2::verbs
