// HashTable: the owner side of one DrTM-KV hash table partition — cluster
// chaining over buckets in registered memory (bucket.h), records in record
// slots (store/record.h) handed out by a RecordSlots allocator.
//
// Who calls what:
//   * insert / update / remove / get: any thread of the owner node (its
//     worker threads' RPC handlers, a loader), concurrently. None of them
//     waits for anything but a chain latch held by another owner thread for
//     a short, non-blocking critical section; so they are safe in handlers.
//   * Remote clients never call this class: they READ buckets and records
//     (hash_client.h) while the owner changes them.
//
// Owner concurrency (no HTM). Every change of a chain (its head bucket and
// the overflow buckets linked from it) and of the records it references is
// made under the chain latch: word 0 of the head bucket, taken with a CPU
// CAS 0 -> 1 (acquire) and released with a store of 0 (release). That orders
// owner writers among themselves. Readers never take it:
//   * a bucket is rewritten as a whole new image — build the image, stamp+1,
//     seal, store its words (relaxed 8-byte atomic stores); a reader's copy
//     (remote READ, or local get() with relaxed 8-byte atomic loads) verifies
//     the seal or is retried;
//   * a record is written by the record.h writer protocol: the owner also
//     takes the record's lock word (CAS 0 -> kOwnerLockWord) so it never
//     overwrites a record a transaction holds (that gives kUnavailable,
//     "retry"); the lock is released after the write.
//
// Orders that make a one-sided lookup correct:
//   insert: write the record (lock 0, version 1, key, incarnation, kLive,
//           value, seal) -> release fence -> publish the slot in the bucket.
//           A reader that finds the slot finds the complete record.
//   delete: lock the record -> write it kDeleted (version+1) -> remove the
//           slot from the bucket -> unlock -> release the slot to the
//           allocator. A reader holding an older bucket image (or a cached
//           address) that READs the record sees kDeleted, or, once the slot
//           is reused, another key or incarnation: it restarts or falls back.
//   update: in place, version+1 (record lock held): addresses stay valid.
//
// Chains never shrink (bucket.h), so the overflow area is consumed only by
// chains that once needed it; out of overflow buckets is kResourceExhausted.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "store/hash/bucket.h"
#include "store/hash/layout.h"
#include "store/hash/record_slots.h"
#include "store/record.h"
#include "store/record_io.h"

namespace drtmx::store::hash {

// kOwnerLockWord (store/record_io.h): the lock word the owner holds while it
// changes a record.
using store::kOwnerLockWord;

// Where a key's record is, and the version of the copy returned.
struct RecordLoc {
  uint64_t offset = 0;  // in the record region
  uint32_t incarnation = 0;
  uint64_t version = 0;
};

struct HashTableStats {
  uint64_t keys = 0;
  uint32_t overflow_used = 0;
};

class HashTable {
 public:
  // `bucket_region` / `record_region`: the owner's local memory of the
  // layout's regions (the whole region: offsets in the layout and in grants
  // are relative to its start). Formats every bucket of the area. `slots`
  // must outlive the table. Errors name the bad parameter.
  static Result<std::unique_ptr<HashTable>> create(std::span<uint8_t> bucket_region,
                                                   std::span<uint8_t> record_region,
                                                   const HashLayout& layout, RecordSlots& slots);

  // Adds `key` with `value` (value.size() <= value_size; the rest is zero).
  // kAlreadyExists if present, kResourceExhausted when out of record slots
  // or overflow buckets, kOutOfRange for an oversized value.
  Result<RecordLoc> insert(uint64_t key, std::span<const uint8_t> value);
  // Overwrites the value of a present key (version + 1). kNotFound if absent,
  // kUnavailable while a transaction holds the record's lock (retry).
  Result<RecordLoc> update(uint64_t key, std::span<const uint8_t> value);
  // Backup copies (the transaction layer's log applier): writes `value`
  // with exactly `version` unless the copy already holds a version >= it;
  // inserts an absent key with that version. True when written, false when
  // skipped as older. Concurrent appliers of one key are ordered by version.
  Result<bool> install(uint64_t key, uint64_t version, std::span<const uint8_t> value);
  // Deletes a present key and frees its slot. kNotFound, kUnavailable as above.
  Status remove(uint64_t key);
  // A consistent copy of the value (value_out.size() >= value_size) and the
  // record's location. kNotFound if absent; kUnavailable if a writer kept
  // the record torn for all bounded retries (a transaction mid write-back).
  Result<RecordLoc> get(uint64_t key, std::span<uint8_t> value_out) const;

  const HashLayout& layout() const { return layout_; }
  HashTableStats stats() const {
    return {keys_.load(std::memory_order_relaxed),
            std::min(next_overflow_.load(std::memory_order_relaxed), layout_.overflow)};
  }

 private:
  HashTable(uint8_t* buckets, std::span<uint8_t> records, const HashLayout& l, RecordSlots& s)
      : area_(buckets), records_(records), layout_(l), slots_(s) {}

  uint8_t* bucket_ptr(uint32_t index) const { return area_ + size_t{index} * kBucketBytes; }
  uint8_t* record_ptr(uint64_t offset) const { return records_.data() + offset; }

  void lock_chain(uint32_t head) const;
  void unlock_chain(uint32_t head) const;

  // A key's slot in its chain, found under the chain latch.
  struct SlotPos {
    uint32_t bucket = 0;  // bucket index (head or overflow)
    uint32_t slot = 0;
    uint64_t ref = 0;
  };
  bool find_locked(uint32_t head, uint64_t key, SlotPos* pos) const;
  Result<RecordLoc> insert_version(uint64_t key, std::span<const uint8_t> value, uint64_t version);
  Status check_value(std::span<const uint8_t> value) const;

  uint8_t* area_;
  std::span<uint8_t> records_;
  HashLayout layout_;
  RecordSlots& slots_;
  std::atomic<uint32_t> next_overflow_{0};
  std::atomic<uint64_t> keys_{0};
};

}  // namespace drtmx::store::hash
