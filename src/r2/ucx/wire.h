// The active messages the ucx backend sends besides UCX's own: user
// messages (the Endpoint's send()) and the persist request/reply of the
// flushing READ. Every one starts with an 8-byte header; little-endian.
#pragma once

#include <cstdint>

namespace drtmx::r2::ucx {

// Active-message ids registered on every worker.
inline constexpr unsigned kAmMessage = 11;
inline constexpr unsigned kAmPersistRequest = 12;
inline constexpr unsigned kAmPersistReply = 13;
inline constexpr unsigned kAmFenced = 14;  // "you were removed" (header only)

struct AmHeader {
  uint16_t src_node = 0;
  uint16_t src_thread = 0;
  uint32_t seq = 0;  // messages: per (sender thread, receiver thread); persist: request id
};
static_assert(sizeof(AmHeader) == 8);

// A persist request's body after the header: u32 count, u32 unused, then
// `count` PersistRange entries.
struct PersistRange {
  uint64_t offset = 0;
  uint64_t len = 0;
  uint16_t region = 0;
  uint16_t pad[3] = {};
};
static_assert(sizeof(PersistRange) == 24);

// A persist reply's body after the header: u32 status (0 = durable).
enum class PersistStatus : uint32_t { kOk = 0, kBadRange = 1, kMsyncFailed = 2 };

}  // namespace drtmx::r2::ucx
