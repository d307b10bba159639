// How much a growing part of a table backs at a time (tables/plan.h,
// "Growth"): record heaps, hash overflow buckets and XStore leaves each
// back an extent of an eighth of what they have backed, at least
// kMinExtentBytes. An eighth bounds the memory backed ahead of use at
// 12.5 % and keeps the number of commits logarithmic in a part's size;
// 64 KiB keeps a small table (one warehouse row) at 16 pages.
#pragma once

#include <algorithm>
#include <cstdint>

namespace drtmx::store {

constexpr uint64_t kMinExtentBytes = 64 * 1024;

// Bytes of the next extent of a part that has backed `backed` bytes.
constexpr uint64_t next_extent_bytes(uint64_t backed, uint64_t min = kMinExtentBytes) {
  return std::max(min, backed / 8);
}

}  // namespace drtmx::store
