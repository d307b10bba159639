// RemotePtr: a FatPtr of another node's pool, as a client holds it — which
// node, which fabric region the pool is registered as, and the allocation.
// Remote accesses are bounds-checked against the FatPtr's payload before
// anything is sent, and a pointer that cannot be an allocation (wrong span
// for its size, misaligned, inside the header) is refused as forged; the
// owner checks again against its allocation watermark (two-sided) and the
// fabric against the region's bounds (one-sided).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "r2/fabric.h"
#include "rdpma/fat_ptr.h"

namespace drtmx::rdpma {

struct RemotePtr {
  r2::NodeId node = 0;
  r2::RegionId region = 0;  // the pool's data area, registered with register_file_region
  FatPtr ptr;

  // The fabric address of byte `at` of the payload.
  r2::RemoteAddr addr(uint64_t at = 0) const {
    return {node, region, ptr.offset - kPoolHeaderBytes + at};
  }
  std::string describe() const;
};

// Whether `p` can be an allocation of some pool: a non-empty span equal to
// alloc_span(size), an offset aligned to alloc_align(size) and past the
// header. kInvalidArgument ("forged") naming it otherwise.
Status check_shape(const FatPtr& p);
// check_shape(p.ptr) and [at, at + n) inside the payload (kOutOfRange);
// `what` names the access in the message.
Status check_access(const RemotePtr& p, uint64_t at, uint64_t n, const char* what);

}  // namespace drtmx::rdpma
