// How a Worker names its one-sided ops in the fabric's 64-bit wr_id:
//   [63:48] coroutine index, [47:32] op slot in the coroutine's batch,
//   [31:0]  the coroutine's wait epoch.
// A completion whose epoch is not the coroutine's current one belongs to a
// wait that already ended (a passive op's late error) and is not routed.
#pragma once

#include <cstdint>

namespace drtmx::r2 {

constexpr uint16_t kMaxCoroutines = 4096;
constexpr uint32_t kMaxBatchOps = 65535;

struct WrId {
  uint16_t cor;
  uint16_t slot;
  uint32_t epoch;
};

inline uint64_t encode_wr_id(WrId w) {
  return (static_cast<uint64_t>(w.cor) << 48) | (static_cast<uint64_t>(w.slot) << 32) | w.epoch;
}

inline WrId decode_wr_id(uint64_t v) {
  return {static_cast<uint16_t>(v >> 48), static_cast<uint16_t>(v >> 32), static_cast<uint32_t>(v)};
}

}  // namespace drtmx::r2
