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
inline constexpr unsigned kAmRma = 15;     // a one-sided op the target's worker executes
inline constexpr unsigned kAmRmaReply =
    16;  // its completion (and a READ's data, an atomic's old value)

// kAmRma's body after the header (header.seq: the op's number on its
// channel, executed in that order), then a WRITE's bytes.
struct RmaRequest {
  uint64_t offset = 0;
  uint64_t compare = 0;  // CAS
  uint64_t operand = 0;  // CAS new value, FAA addend
  uint32_t len = 0;
  uint32_t token = 0;  // the origin's slot
  uint16_t region = 0;
  uint8_t verb = 0;  // enum Verb
  uint8_t pad[5] = {};
};
static_assert(sizeof(RmaRequest) == 40);

// kAmRmaReply's body after the header (header.seq: the op's number), then
// a READ's bytes or an atomic's old value (8 bytes).
struct RmaReply {
  uint32_t token = 0;
  uint8_t status = 0;  // enum OpStatus
  uint8_t pad[3] = {};
};
static_assert(sizeof(RmaReply) == 8);

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
