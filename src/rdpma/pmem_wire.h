// The wire format of RDPMA's two-sided requests (one RPC id, the op in
// the header). Both sides are the same build on hosts of one byte order,
// as everywhere in drtmx's RPCs.
//
// Request:  PmemRequest (32 bytes), then `len` data bytes for a write.
// Reply:    u8 Code (base/status.h); kOk: the read's bytes (none for a
//           write); otherwise the error text. The code travels in the
//           reply itself because r2 error replies carry no code of their own.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::rdpma {

// RPC id of RDPMA requests (txn uses 100-159; see src/txn/*_ops.h).
constexpr uint16_t kRpcPmem = 170;

enum class PmemOp : uint8_t {
  kRead = 1,    // reply: the bytes
  kWrite = 2,   // non-temporal stores, not fenced (Write)
  kPWrite = 3,  // non-temporal stores + fence, or msync, before the reply (PWrite)
};

enum class Addressing : uint8_t {
  kFatPtr = 0,  // (offset, size, span) an allocation, `at` inside its payload
  kRaw = 1,     // `offset` a raw region offset (PWrite only): no alignment, no padding
};

struct PmemRequest {
  uint8_t op = 0;          // PmemOp
  uint8_t addressing = 0;  // Addressing
  uint16_t region = 0;     // the pool's fabric region on the owner
  uint32_t len = 0;        // bytes to read or write
  uint64_t offset = 0;     // FatPtr::offset (file offset), or the raw region offset
  uint32_t size = 0;       // FatPtr::size
  uint32_t span = 0;       // FatPtr::span
  uint64_t at = 0;         // kFatPtr: first byte of the payload accessed
};
static_assert(sizeof(PmemRequest) == 32);

// Largest read or write one request may carry (below the RPC layer's
// max_rpc_bytes default of 1 MiB, with room for the header).
constexpr uint32_t kMaxPmemBytes = 512 * 1024;

inline void encode_request(const PmemRequest& h, const void* data, std::vector<uint8_t>* out) {
  const uint32_t n = h.op == static_cast<uint8_t>(PmemOp::kRead) ? 0 : h.len;
  out->resize(sizeof h + n);
  std::memcpy(out->data(), &h, sizeof h);
  if (n != 0) std::memcpy(out->data() + sizeof h, data, n);
}

// Decodes a reply; on kOk *data is the payload after the code byte.
inline Status decode_reply(std::span<const uint8_t> reply, std::span<const uint8_t>* data) {
  if (reply.empty()) return internal_error("empty RDPMA reply (is the owner a drtmx build?)");
  const uint8_t code = reply[0];
  if (code == 0) {
    *data = reply.subspan(1);
    return Status::ok();
  }
  const Code c =
      code <= static_cast<uint8_t>(Code::kIoError) ? static_cast<Code>(code) : Code::kInternal;
  return Status(c, std::string(reinterpret_cast<const char*>(reply.data()) + 1, reply.size() - 1));
}

}  // namespace drtmx::rdpma
