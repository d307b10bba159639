#include "store/heap.h"

#include <cstddef>
#include <cstring>
#include <utility>

#include "store/record.h"

namespace drtmx::store {

namespace {

constexpr uint64_t kAlign = 64;

std::string heap_label(const HeapOptions& o) {
  return "record heap " + (o.name.empty() ? std::string("<unnamed>") : o.name);
}

}  // namespace

uint64_t RecordHeap::bytes_for(uint64_t slots, uint32_t value_size) {
  return slots * static_cast<uint64_t>(record_slot_size(value_size));
}

Result<std::unique_ptr<RecordHeap>> RecordHeap::create(std::span<uint8_t> region,
                                                       const HeapOptions& options) {
  const std::string who = heap_label(options);
  if (options.value_size == 0) {
    return invalid_argument(who + ": value_size must be > 0");
  }
  if (options.range_offset % kAlign != 0) {
    return invalid_argument(who + ": range_offset " + std::to_string(options.range_offset) +
                            " is not 64-byte aligned");
  }
  const uint64_t region_bytes = region.size();
  if (options.range_offset > region_bytes ||
      options.range_bytes > region_bytes - options.range_offset) {
    return invalid_argument(who + ": range_offset " + std::to_string(options.range_offset) +
                            " + range_bytes " + std::to_string(options.range_bytes) +
                            " is outside the region (" + std::to_string(region_bytes) + " B)");
  }
  const uint64_t slot_bytes = record_slot_size(options.value_size);
  const uint64_t capacity = options.range_bytes / slot_bytes;
  if (capacity == 0) {
    return invalid_argument(who + ": range_bytes " + std::to_string(options.range_bytes) +
                            " holds no slot of " + std::to_string(slot_bytes) + " B (value_size " +
                            std::to_string(options.value_size) + ")");
  }
  return std::unique_ptr<RecordHeap>(new RecordHeap(region, options, slot_bytes, capacity));
}

RecordHeap::RecordHeap(std::span<uint8_t> region, const HeapOptions& o, uint64_t slot_bytes,
                       uint64_t capacity)
    : region_(region),
      options_(o),
      slot_bytes_(slot_bytes),
      capacity_(capacity),
      released_(capacity, 0) {}

Result<SlotGrant> RecordHeap::allocate() {
  std::lock_guard<std::mutex> g(mu_);
  if (!free_.empty()) {
    const uint64_t index = free_.back();
    free_.pop_back();
    released_[index] = 0;
    const uint64_t offset = options_.range_offset + index * slot_bytes_;
    uint32_t previous;
    std::memcpy(&previous, region_.data() + offset + offsetof(RecordHeader, incarnation),
                sizeof previous);
    uint32_t incarnation = previous + 1;
    if (incarnation == 0) incarnation = 1;
    ++in_use_;
    ++reused_;
    return SlotGrant{offset, incarnation};
  }
  if (next_fresh_ < capacity_) {
    const uint64_t index = next_fresh_++;
    ++in_use_;
    return SlotGrant{options_.range_offset + index * slot_bytes_, 1};
  }
  return exhausted(heap_label(options_) + " is full (" + std::to_string(capacity_) + " slots of " +
                   std::to_string(slot_bytes_) + " B); raise the table's capacity");
}

void RecordHeap::release(uint64_t offset) {
  std::lock_guard<std::mutex> g(mu_);
  if (offset < options_.range_offset) {
    ++bad_releases_;
    return;
  }
  const uint64_t rel = offset - options_.range_offset;
  const uint64_t index = rel / slot_bytes_;
  // Not on a slot boundary, past the last slot, never handed out, or
  // already on the free list.
  if (rel % slot_bytes_ != 0 || index >= next_fresh_ || released_[index] != 0) {
    ++bad_releases_;
    return;
  }
  released_[index] = 1;
  free_.push_back(index);
  --in_use_;
}

HeapStats RecordHeap::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  HeapStats s;
  s.capacity = capacity_;
  s.in_use = in_use_;
  s.never_used = capacity_ - next_fresh_;
  s.reused = reused_;
  return s;
}

uint64_t RecordHeap::bad_releases() const {
  std::lock_guard<std::mutex> g(mu_);
  return bad_releases_;
}

}  // namespace drtmx::store
