// RecordHeap: the record slots of one table partition, carved out of a byte
// range of a node's registered region (docs/architecture.md). Implements
// RecordSlots for the indexes (hash/hash_table.h, the ordered tables'
// records) — they write the records; the heap only hands out and takes back
// slot offsets.
//
// Layout: the range [range_offset, range_offset + range_bytes) of the region
// holds floor(range_bytes / slot_bytes) slots of slot_bytes =
// record_slot_size(value_size) bytes each, back to back from range_offset
// (which must be 64-byte aligned). Offsets handed out are relative to the
// region start, like every address a remote node uses.
//
// Growth: the range is the heap's room in address space, not memory. Only
// slots inside the committed prefix of the range are handed out; when the
// bump pointer reaches its end, allocate() asks HeapOptions::grow to back
// the next extent (an eighth of what is committed, at least
// min_extent_bytes) before it hands out a slot there. So memory follows
// the rows inserted, and the addresses handed out never move. Without a
// `grow` the whole range is taken as backed (tests, fixed areas). With
// HeapOptions::ahead, allocate() posts the next extent to that thread once
// less than half an extent of backed slots is left (at most 1.5 extents,
// 19 % of what is backed, sit unused), and backs an extent inline only
// when the thread is behind. grow() is called by one thread at a time
// (grow_mu_), never under the allocation lock: a thread backing an extent
// stalls no allocate() that finds a slot.
//
// Allocation: a slot never used before comes from a bump pointer and gets
// incarnation 1; a released slot goes to a LIFO free list and, when handed
// out again, gets (incarnation in its record header) + 1, skipping 0 on
// wrap-around. The header's incarnation is the one its last tenant wrote
// (the heap reads it at allocate() time, under the heap's lock, after the
// releasing thread's writes: release() is called after the index unlinked
// and the record was written kDeleted, so the release/acquire of the lock
// orders them). The heap itself never writes slot memory.
//
// Thread safety: allocate()/release() from any thread; one spin lock guards
// the free list and bump pointer (owner-side inserts/deletes are not the
// one-sided hot path); grow_mu_ orders the calls of grow(). stats() and bad_releases() read under
// the same mutex (a consistent snapshot).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/spin_lock.h"
#include "base/status.h"
#include "store/extent.h"
#include "store/grow_ahead.h"
#include "store/slots.h"

namespace drtmx::store {

struct HeapOptions {
  std::string name;           // table/partition, for error messages ("customer/p3")
  uint32_t value_size = 0;    // value bytes per record (> 0)
  uint64_t range_offset = 0;  // first byte of the heap in the region (64-byte aligned)
  uint64_t range_bytes = 0;   // bytes of the region the heap may use
  // Backs [offset, offset + bytes) of the region (region-relative) and
  // whatever the caller keeps per slot there (lock entries, MVCC chain
  // heads), before a slot in it is handed out. Called by one thread at a
  // time (an inserter, or `ahead`'s), with extents in ascending order. An
  // error (the host has no memory) fails that allocate() with it; the
  // heap stays usable.
  std::function<Status(uint64_t offset, uint64_t bytes)> grow;
  // Backs extents ahead of the inserters (optional; must outlive the heap
  // or be drained before the heap goes).
  GrowAhead* ahead = nullptr;
  uint64_t min_extent_bytes = kMinExtentBytes;  // the smallest extent grow() is asked for
  // recover(): how many bytes of the range were ever backed (the rest is
  // never read: a hole of a sparse pool holds nothing). Default: all.
  uint64_t recover_bytes = UINT64_MAX;
};

struct HeapStats {
  uint64_t capacity = 0;      // slots in the range (its address space)
  uint64_t committed = 0;     // slots backed by memory so far
  uint64_t in_use = 0;        // allocated and not released
  uint64_t never_used = 0;    // slots the bump pointer has not reached
  uint64_t reused = 0;        // allocations served from the free list
  uint64_t grown_inline = 0;  // extents an allocate() backed itself
  uint64_t grown_ahead = 0;   // extents HeapOptions::ahead backed
};

// A committed record recover() found in a slot.
struct LiveSlot {
  uint64_t key = 0;
  uint64_t offset = 0;  // relative to the region, like allocate()'s
  uint32_t incarnation = 0;
  uint64_t version = 0;
};

// What recover() found in the slots.
struct HeapRecovery {
  std::vector<LiveSlot> live;  // one per key (its highest version)
  uint64_t max_version = 0;    // over every sealed slot, live or deleted
  uint64_t max_wts = 0;        // MVCC: the newest commit timestamp a live record carries
  uint64_t deleted = 0;        // sealed, deleted records
  uint64_t uncommitted = 0;    // sealed, live, version 0: a reservation never committed
  uint64_t torn = 0;           // written, seal broken: a write a crash cut short
  uint64_t duplicates = 0;     // older copies of a key another slot holds newer
};

class RecordHeap final : public RecordSlots {
 public:
  // Bytes a heap of `slots` records of `value_size` needs (for region plans).
  static uint64_t bytes_for(uint64_t slots, uint32_t value_size);

  // `region`: the owner's local view of the whole registered region.
  // kInvalidArgument naming the field when the range is outside the region,
  // misaligned, value_size is 0, or the range holds no slot.
  static Result<std::unique_ptr<RecordHeap>> create(std::span<uint8_t> region,
                                                    const HeapOptions& options);
  // A heap over slots that survived a restart (a durable copy): each slot
  // holding a sealed, live, committed (version > 0) record is in use — one
  // per key, the highest version, the others freed —, every other slot up
  // to the last one ever written is free (its incarnation kept, so reuse
  // bumps it as usual), the rest never used. The lock and ts words of the
  // records kept are cleared where set (no transaction and no snapshot
  // survives a restart; a node whose words live apart, record.h, finds
  // them 0 already and writes nothing). `out` receives
  // the records kept and the counts.
  static Result<std::unique_ptr<RecordHeap>> recover(std::span<uint8_t> region,
                                                     const HeapOptions& options, HeapRecovery* out);

  // kResourceExhausted naming the heap when no slot is free and the range
  // is used up (its address space), or grow() failed (with its message).
  Result<SlotGrant> allocate() override;
  // `offset` must be one this heap handed out and not yet released; a bad
  // offset (outside the range, not on a slot boundary, double release) is a
  // caller bug: it is ignored and counted in bad_releases() (never corrupts
  // the free list).
  void release(uint64_t offset) override;

  HeapStats stats() const;
  uint64_t bad_releases() const;
  uint64_t slot_bytes() const { return slot_bytes_; }
  // Bytes of the range backed so far (from range_offset; what grow() was
  // asked for). Lock-free: a slot below it is backed memory.
  uint64_t committed_bytes() const { return committed_end_.load(std::memory_order_acquire); }
  const HeapOptions& options() const { return options_; }

 private:
  RecordHeap(std::span<uint8_t> region, const HeapOptions& o, uint64_t slot_bytes,
             uint64_t capacity);
  // Backs the next extent, under grow_mu_ (not mu_). Inline (`ahead`
  // false): unless another thread has backed the next fresh slot
  // meanwhile. Ahead: unless less than half an extent is used up of the
  // backed slots left.
  Status back_next(bool ahead);
  // Posts back_next(true) when it is due and none is queued (caller
  // holds mu_; `end`: the backed bytes it saw).
  void maybe_post_ahead(uint64_t end);
  // The extent backed after `committed` bytes.
  uint64_t extent_after(uint64_t committed) const;
  // Whether the next extent is due ahead (caller holds mu_): the range is
  // not all backed and less than half an extent of backed slots is left.
  bool ahead_due(uint64_t committed) const;

  std::span<uint8_t> region_;
  HeapOptions options_;
  uint64_t slot_bytes_;
  uint64_t capacity_;
  std::mutex grow_mu_;       // held while grow() runs; orders the extents
  mutable SpinLock mu_;      // guards the fields below (short sections)
  uint64_t next_fresh_ = 0;  // index of the next never-used slot
  // Bytes of the range backed (written under grow_mu_, after grow()
  // returned; read under mu_): slots wholly below it.
  std::atomic<uint64_t> committed_end_{0};
  bool ahead_posted_ = false;  // a back_next(true) is queued or running
  uint64_t grown_inline_ = 0, grown_ahead_ = 0;
  std::vector<uint64_t> free_;     // released slot indexes (LIFO)
  std::vector<uint8_t> released_;  // per slot handed out: 1 while on the free list
  uint64_t in_use_ = 0;
  uint64_t reused_ = 0;
  uint64_t bad_releases_ = 0;
};

}  // namespace drtmx::store
