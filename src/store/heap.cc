#include "store/heap.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <unordered_map>
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

Result<std::unique_ptr<RecordHeap>> RecordHeap::recover(std::span<uint8_t> region,
                                                        const HeapOptions& options,
                                                        HeapRecovery* out) {
  Result<std::unique_ptr<RecordHeap>> made = create(region, options);
  if (!made.is_ok()) return made.status();
  RecordHeap& h = **made;
  *out = HeapRecovery{};
  std::unordered_map<uint64_t, size_t> by_key;  // key -> index in out->live
  // Only what was ever backed: reading a hole of a sparse pool would back it.
  const uint64_t scan = std::min(h.capacity_, options.recover_bytes / h.slot_bytes_);
  std::vector<uint8_t> in_use(scan, 0);
  uint64_t written = 0;  // slots up to the last one that holds anything
  for (uint64_t i = 0; i < scan; ++i) {
    uint8_t* rec = region.data() + options.range_offset + i * h.slot_bytes_;
    const RecordCheck c = verify(rec, options.value_size);
    if (c == RecordCheck::kEmpty) {
      // All zero but maybe a lock word or ts: a slot a crash caught before
      // its first write; free like a never-used one.
      if (reinterpret_cast<const RecordHeader*>(rec)->lock != 0) written = i + 1;
      continue;
    }
    written = i + 1;
    if (c == RecordCheck::kTorn) {
      ++out->torn;
      continue;
    }
    RecordHeader hd;
    std::memcpy(&hd, rec, sizeof hd);
    out->max_version = std::max(out->max_version, hd.version);
    if (c == RecordCheck::kDeleted) {
      ++out->deleted;
      continue;
    }
    if (hd.version == 0) {
      ++out->uncommitted;
      continue;
    }
    out->max_wts = std::max(out->max_wts, hd.wts);
    const LiveSlot ls{hd.key, options.range_offset + i * h.slot_bytes_, hd.incarnation, hd.version};
    auto [it, fresh] = by_key.emplace(hd.key, out->live.size());
    if (!fresh) {
      ++out->duplicates;
      LiveSlot& kept = out->live[it->second];
      if (kept.version >= hd.version) continue;
      in_use[(kept.offset - options.range_offset) / h.slot_bytes_] = 0;
      kept = ls;
    } else {
      out->live.push_back(ls);
    }
    in_use[i] = 1;
  }
  for (const LiveSlot& ls : out->live) {
    // Only where set: on persistent memory a store is a media write.
    uint8_t* rec = region.data() + ls.offset;
    for (uint64_t* w : {reinterpret_cast<uint64_t*>(rec), ts_word(rec)}) {
      std::atomic_ref<uint64_t> word(*w);
      if (word.load(std::memory_order_relaxed) != 0) word.store(0, std::memory_order_relaxed);
    }
  }
  h.next_fresh_ = written;
  h.released_.assign(written, 0);
  if (written > 0 && options.grow) {
    // The slots up to the last one written are backed again (the pool's
    // blocks are there; grow() only maps them and what goes with them).
    const uint64_t bytes = written * h.slot_bytes_;
    DRTMX_RETURN_IF_ERROR(options.grow(options.range_offset, bytes));
    h.committed_end_.store(bytes, std::memory_order_release);
  }
  for (uint64_t i = written; i-- > 0;) {
    if (in_use[i]) {
      ++h.in_use_;
    } else {
      h.released_[i] = 1;
      h.free_.push_back(i);  // LIFO: the lowest slots are reused first
    }
  }
  return made;
}

RecordHeap::RecordHeap(std::span<uint8_t> region, const HeapOptions& o, uint64_t slot_bytes,
                       uint64_t capacity)
    : region_(region), options_(o), slot_bytes_(slot_bytes), capacity_(capacity) {
  if (!options_.grow) committed_end_.store(capacity_ * slot_bytes_, std::memory_order_relaxed);
}

uint64_t RecordHeap::extent_after(uint64_t committed) const {
  return std::max(next_extent_bytes(committed, options_.min_extent_bytes), slot_bytes_);
}

bool RecordHeap::ahead_due(uint64_t committed) const {
  const uint64_t used = next_fresh_ * slot_bytes_;
  return committed < capacity_ * slot_bytes_ &&
         committed - std::min(used, committed) < extent_after(committed) / 2;
}

Status RecordHeap::back_next(bool ahead) {
  std::lock_guard<std::mutex> grow(grow_mu_);
  const uint64_t range = capacity_ * slot_bytes_;
  const uint64_t committed = committed_end_.load(std::memory_order_acquire);
  const uint64_t extent = extent_after(committed);
  {
    std::lock_guard<SpinLock> g(mu_);
    // Inline: another thread backed the next fresh slot meanwhile. Ahead:
    // no longer due (the inline path got there first, or nothing is left
    // to back).
    if (!ahead && (next_fresh_ + 1) * slot_bytes_ <= committed) return Status::ok();
    if (ahead && !ahead_due(committed)) return Status::ok();
  }
  if (committed >= range) {
    return exhausted(heap_label(options_) + " is full: its " + std::to_string(capacity_) +
                     " slots of " + std::to_string(slot_bytes_) +
                     " B use up the address space its table was planned with (" +
                     std::to_string(range >> 20) +
                     " MiB per partition copy); give the table fewer partitions per node or "
                     "fewer tables per node");
  }
  // Whole pages at the end (the next extent starts on a page of its own
  // when the slots allow it; grow() rounds out to pages either way).
  uint64_t end = std::min(range, committed + extent);
  const uint64_t page_end = (options_.range_offset + end + 4095) / 4096 * 4096;
  end = std::min(range, page_end - options_.range_offset);
  DRTMX_RETURN_IF_ERROR(options_.grow(options_.range_offset + committed, end - committed));
  std::lock_guard<SpinLock> g(mu_);
  committed_end_.store(end, std::memory_order_release);
  ++(ahead ? grown_ahead_ : grown_inline_);
  return Status::ok();
}

void RecordHeap::maybe_post_ahead(uint64_t end) {
  if (options_.ahead == nullptr || !options_.grow || ahead_posted_ || !ahead_due(end)) return;
  ahead_posted_ = true;
  options_.ahead->post([this] {
    (void)back_next(true);  // a failure shows at the allocate() that needs the slot
    std::lock_guard<SpinLock> g(mu_);
    ahead_posted_ = false;
  });
}

Result<SlotGrant> RecordHeap::allocate() {
  // Each pass either hands out a slot or backs an extent (at least a slot)
  // first; only other threads taking the new slots can make it go round
  // again, so a few passes do.
  for (int pass = 0; pass < 1024; ++pass) {
    {
      std::lock_guard<SpinLock> g(mu_);
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
      // The next fresh slot must lie wholly in the backed part of the range.
      const uint64_t end = committed_end_.load(std::memory_order_acquire);
      if ((next_fresh_ + 1) * slot_bytes_ <= end) {
        const uint64_t index = next_fresh_++;
        released_.push_back(0);
        ++in_use_;
        maybe_post_ahead(end);
        return SlotGrant{options_.range_offset + index * slot_bytes_, 1};
      }
    }
    DRTMX_RETURN_IF_ERROR(back_next(false));
  }
  return exhausted(heap_label(options_) +
                   ": other inserters took every slot backed for this one 1024 times in a row");
}

void RecordHeap::release(uint64_t offset) {
  std::lock_guard<SpinLock> g(mu_);
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
  std::lock_guard<SpinLock> g(mu_);
  HeapStats s;
  s.capacity = capacity_;
  s.committed = committed_end_.load(std::memory_order_relaxed) / slot_bytes_;
  s.in_use = in_use_;
  s.never_used = capacity_ - next_fresh_;
  s.reused = reused_;
  s.grown_inline = grown_inline_;
  s.grown_ahead = grown_ahead_;
  return s;
}

uint64_t RecordHeap::bad_releases() const {
  std::lock_guard<SpinLock> g(mu_);
  return bad_releases_;
}

}  // namespace drtmx::store
