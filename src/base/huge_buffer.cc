#include "base/huge_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace drtmx {

Result<HugeBuffer> HugeBuffer::allocate(size_t bytes) {
  if (bytes == 0) return invalid_argument("HugeBuffer: zero bytes requested");
  if (bytes > (size_t{1} << 46)) {
    return invalid_argument("HugeBuffer: " + std::to_string(bytes) + " bytes is beyond any table");
  }
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Over-map by one huge page so an aligned start exists inside the mapping.
  const size_t map_bytes = rounded + kHugePage;
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    const int e = errno;
    return exhausted("HugeBuffer: mmap of " + std::to_string(map_bytes) + " bytes failed: " +
                     std::strerror(e) + " (lower the table's memory budget or free memory)");
  }
  const auto base = reinterpret_cast<uintptr_t>(map);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  HugeBuffer b;
  b.map_ = map;
  b.map_bytes_ = map_bytes;
  b.data_ = reinterpret_cast<void*>(aligned);
  b.size_ = rounded;
#ifdef MADV_HUGEPAGE
  (void)madvise(b.data_, rounded, MADV_HUGEPAGE);  // advice only (see the header)
#endif
  return b;
}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    map_ = o.map_;
    map_bytes_ = o.map_bytes_;
    o.data_ = o.map_ = nullptr;
    o.size_ = o.map_bytes_ = 0;
  }
  return *this;
}

void HugeBuffer::release() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = data_ = nullptr;
  size_ = map_bytes_ = 0;
}

}  // namespace drtmx
