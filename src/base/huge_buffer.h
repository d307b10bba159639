// HugeBuffer: a private, zero-filled block of memory for a large table that
// is read at random (a cache, an index), backed by transparent huge pages
// where the kernel allows it.
//
// Why: a lookup in a table of tens of MB touches a random 4 KiB page, so
// it misses the TLB as well as the data cache; under virtualization the
// page walk itself costs several more DRAM reads. With 2 MiB pages the
// whole table fits the TLB and a lookup is one miss. The block is aligned
// to 2 MiB and advised MADV_HUGEPAGE; whether the kernel backs it with huge
// pages (transparent_hugepage "always" or "madvise") is its decision, and a
// refused advice is no error. The memory is ordinary otherwise:
// correctness never depends on huge pages.
//
// Not for memory other processes map (shared regions live in r2).
// Move-only; the destructor unmaps.
#pragma once

#include <cstddef>

#include "base/status.h"

namespace drtmx {

class HugeBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  // At least `bytes` (> 0) of zeroed memory, aligned to kHugePage.
  static Result<HugeBuffer> allocate(size_t bytes);

  HugeBuffer() = default;
  HugeBuffer(HugeBuffer&& o) noexcept { *this = static_cast<HugeBuffer&&>(o); }
  HugeBuffer& operator=(HugeBuffer&& o) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  ~HugeBuffer() { release(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  void* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // the whole mapping (data_ is its aligned part)
  size_t map_bytes_ = 0;
};

}  // namespace drtmx
