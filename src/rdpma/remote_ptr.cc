#include "rdpma/remote_ptr.h"

namespace drtmx::rdpma {

std::string RemotePtr::describe() const {
  return "allocation (offset " + std::to_string(ptr.offset) + ", size " + std::to_string(ptr.size) +
         ") of region " + std::to_string(region) + " on node " + std::to_string(node);
}

Status check_shape(const FatPtr& p) {
  if (p.span == 0 || p.span != alloc_span(p.size) || p.offset < kPoolHeaderBytes ||
      p.offset % alloc_align(p.size) != 0) {
    return invalid_argument("forged pointer: offset " + std::to_string(p.offset) + ", size " +
                            std::to_string(p.size) + ", span " + std::to_string(p.span) +
                            " cannot be an allocation of a pool (use the FatPtr alloc returned)");
  }
  return Status::ok();
}

Status check_access(const RemotePtr& p, uint64_t at, uint64_t n, const char* what) {
  if (Status s = check_shape(p.ptr); !s.is_ok()) {
    return s.with_context(std::string(what) + " on node " + std::to_string(p.node) + " region " +
                          std::to_string(p.region));
  }
  if (at > p.ptr.size || n > p.ptr.size - at) {
    return out_of_range(std::string(what) + " of bytes [" + std::to_string(at) + ", " +
                        std::to_string(at + n) + ") of an " + p.describe());
  }
  if (n == 0) return invalid_argument(std::string(what) + " of 0 bytes of an " + p.describe());
  return Status::ok();
}

}  // namespace drtmx::rdpma
