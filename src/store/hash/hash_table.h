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
#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "base/status.h"
#include "store/hash/bucket.h"
#include "store/hash/layout.h"
#include "store/hash/record_slots.h"
#include "store/record.h"
#include "store/record_io.h"
#include "store/skipped_incarnations.h"

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
  // are relative to its start). Formats every head bucket. `slots`
  // must outlive the table. Errors name the bad parameter.
  // `words`: where the records' lock words are (default: in the slots;
  // durable nodes keep them apart, record.h).
  // `grow` (optional): backs [offset, offset + bytes) of the bucket region
  // (store/heap.h, HeapOptions::grow): called for the head buckets here,
  // and for overflow buckets in extents as chains need them (an overflow
  // bucket is formatted when it is linked, so the area beyond the ones in
  // use is never touched). Null: the whole area is backed already.
  using Grow = std::function<Status(uint64_t offset, uint64_t bytes)>;
  static Result<std::unique_ptr<HashTable>> create(std::span<uint8_t> bucket_region,
                                                   std::span<uint8_t> record_region,
                                                   const HashLayout& layout, RecordSlots& slots,
                                                   const SlotWords& words = {}, Grow grow = {});

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
  // A hint: brings the head bucket of `key`'s chain into the cache (for
  // callers that know the next keys they will install or look up).
  void prefetch(uint64_t key) const {
    __builtin_prefetch(bucket_ptr(bucket_index(key, layout_.buckets)), 1);
  }
  // A hint after prefetch(key) had time to land: prefetches the record
  // (its first line, and its lock word when lock words live apart) that
  // the head bucket holds for `key`. Reads the bucket without its latch
  // (word by word, like a one-sided reader): a torn view only makes the
  // hint useless, never wrong. Returns the offset it prefetched, or false.
  bool prefetch_record(uint64_t key, uint64_t* offset) const;
  // Deletes a present key and frees its slot. kNotFound, kUnavailable as above.
  Status remove(uint64_t key);

  // Transactions (the txn layer's owner RPCs, txn/index_ops.h).
  //
  // Versions of transactional records only grow, per slot and per key,
  // across deletes and re-inserts: the table remembers the highest version
  // a record it deleted ever had (deleted_high), and a new record starts
  // above it. So a validator that compares a slot's version with the one it
  // read never mistakes a new tenant for its record (no ABA), and backups
  // can apply a key's changes in version order (apply_in_order).
  //
  // reserve: publishes `key` with a record that is already locked with
  // `lock_word` (a transaction's, never 0 or kOwnerLockWord), version 0
  // ("not yet committed") and a zero value. Every reader finds it locked,
  // and a transaction that reads version 0 aborts, so no reader ever uses
  // its value. Returns where it is, with `version` = the base: the holder
  // commits it like any locked record with version base + 1 (then unlock),
  // or drops it with remove_held(). kAlreadyExists when the key holds a
  // committed record; kUnavailable when another transaction reserved it (it
  // may still abort); kResourceExhausted / as insert().
  Result<RecordLoc> reserve(uint64_t key, uint64_t lock_word);
  // Deletes the record `key` -> (offset, incarnation) that the caller holds
  // locked with `lock_word`: writes it kDeleted with a new version (version
  // + 1; a reservation: deleted_high + 1), raises deleted_high to it,
  // unlinks it, unlocks it, frees the slot. kNotFound when the key's entry
  // is not that record or it is not held with `lock_word` (nothing changes).
  Status remove_held(uint64_t key, uint64_t offset, uint32_t incarnation, uint64_t lock_word);

  // Backup copies (the transaction layer's log applier): applies one
  // committed change of `key` only when it is the next one for the copy —
  // kInsert when the key is absent, kUpdate and kDelete when the copy holds
  // exactly version - 1. True when applied; false when not yet (an earlier
  // change of the key, logged by another coordinator, has not arrived: the
  // caller retries later). Changes of one key then land in commit order
  // whatever order the log rings deliver them in.
  enum class Change : uint8_t { kInsert, kUpdate, kDelete };
  // `mvcc` (optional): the new version's wts and the keeper of the
  // replaced one (store/record_io.h).
  // `wrote` (optional): the offset of the record slot the change wrote
  // (a durable copy persists it).
  Result<bool> apply_in_order(uint64_t key, Change c, uint64_t version,
                              std::span<const uint8_t> value, const ApplyMvcc* mvcc = nullptr,
                              uint64_t* wrote = nullptr);
  // A consistent copy of the value (value_out.size() >= value_size) and the
  // record's location. kNotFound if absent; kUnavailable if a writer kept
  // the record torn for all bounded retries (a transaction mid write-back).
  Result<RecordLoc> get(uint64_t key, std::span<uint8_t> value_out) const;
  // Where `key`'s record is, as a one-sided reader's bucket READs would
  // find it (verified bucket copies, no record read, no latch): the slot's
  // offset and incarnation. False when the key is absent, or its buckets
  // stayed torn for every bounded retry. The record may change or go at any
  // time after: a reader verifies key and incarnation in its copy, as it
  // does with a location-cache entry.
  bool locate(uint64_t key, uint64_t* offset, uint32_t* incarnation) const;

  // Restart of a durable copy (the table is new, the slots are not): links
  // `key` to the record already in slot `offset` (incarnation, version as
  // the slot says; the slots allocator already counts it in use) without
  // writing the record. kAlreadyExists, kResourceExhausted as insert().
  Status adopt(uint64_t key, uint64_t offset, uint32_t incarnation, uint64_t version);
  // Restart: no new record may start at or below `v` (the highest version
  // any slot of the copy holds, live or deleted).
  void raise_deleted_high_to(uint64_t v);

  const HashLayout& layout() const { return layout_; }
  // Bytes of buckets backed: the heads and the overflow extents.
  uint64_t backed_bytes() const {
    return (uint64_t{layout_.buckets} + backed_overflow_.load(std::memory_order_relaxed)) *
           kBucketBytes;
  }
  HashTableStats stats() const {
    return {keys_.load(std::memory_order_relaxed),
            std::min(next_overflow_.load(std::memory_order_relaxed), layout_.overflow)};
  }

 private:
  HashTable(uint8_t* buckets, std::span<uint8_t> records, const HashLayout& l, RecordSlots& s,
            const SlotWords& w, Grow grow)
      : area_(buckets),
        records_(records),
        layout_(l),
        slots_(s),
        words_(w),
        grow_(std::move(grow)) {}
  // Overflow bucket `idx` is backed (growing the backed extent if needed).
  Status back_overflow(uint32_t idx);

  uint8_t* bucket_ptr(uint32_t index) const { return area_ + size_t{index} * kBucketBytes; }
  uint8_t* record_ptr(uint64_t offset) const { return records_.data() + offset; }
  // The lock word of the record slot at `offset`.
  std::atomic_ref<uint64_t> lock_at(uint64_t offset) const {
    return std::atomic_ref<uint64_t>(*words_.lock(record_ptr(offset), offset));
  }

  void lock_chain(uint32_t head) const;
  void unlock_chain(uint32_t head) const;

  // A key's slot in its chain, found under the chain latch.
  struct SlotPos {
    uint32_t bucket = 0;  // bucket index (head or overflow)
    uint32_t slot = 0;
    uint64_t ref = 0;
  };
  bool find_locked(uint32_t head, uint64_t key, SlotPos* pos) const;
  // The slot reference of `key` from verified bucket copies (get, locate).
  enum class Locate : uint8_t { kFound, kAbsent, kTorn };
  Locate find_ref(uint64_t key, uint64_t* ref) const;
  // `lock_word` != 0: the record is published locked with it (reserve).
  // `adopted`: publish that slot (its record already written) instead of
  // allocating and writing one (adopt()).
  Result<RecordLoc> insert_version(uint64_t key, std::span<const uint8_t> value, uint64_t version,
                                   uint64_t lock_word = 0, uint64_t wts = 0,
                                   const SlotGrant* adopted = nullptr);
  Status check_value(std::span<const uint8_t> value) const;
  // Deletes the record at `pos` of chain `head` at `version` (0: the
  // record's version + 1, or above deleted_high_ for a reservation): the
  // caller holds the chain latch and the record's lock; both are released,
  // then the slot.
  void unlink_locked(uint32_t head, const SlotPos& pos, uint64_t version);
  void raise_deleted_high(uint64_t v);
  // Writes `img` (the record's header, loaded) back to `rec` as a live
  // record at `version` holding `value` (zero-padded), sealed; the caller
  // holds the record's lock.
  void store_live(RecordImage& img, uint8_t* rec, uint64_t version,
                  std::span<const uint8_t> value) const;

  uint8_t* area_;
  std::span<uint8_t> records_;
  HashLayout layout_;
  RecordSlots& slots_;
  SlotWords words_;
  Grow grow_;
  std::atomic<uint32_t> next_overflow_{0};
  std::atomic<uint32_t> backed_overflow_{0};  // overflow buckets [0, n) are backed
  std::mutex grow_mu_;                        // serialises back_overflow's growth
  std::atomic<uint64_t> keys_{0};
  std::atomic<uint64_t> deleted_high_{0};  // see reserve()
  SkippedIncarnations skipped_;            // apply_in_order (backups)
};

}  // namespace drtmx::store::hash
