// RecordTree: the owner side of an ordered table partition whose values are
// records in a RecordHeap (so transactions can lock, validate and write
// them one-sided like hash records): an XTree maps key -> RecordAddr
// (plan.h), the record lives in its heap slot in the record.h format.
//
// Orders (the hash table's, hash_table.h, applied to a tree):
//   insert: allocate a slot -> write the record body (version 1, key,
//           incarnation, kLive, value, seal; the lock word is left alone)
//           -> insert (key, addr) into the tree. A reader that finds the
//           entry finds the complete record. If the key exists, the slot
//           goes back to the heap unpublished.
//   update: lock the record (CPU CAS 0 -> kOwnerLockWord; a transaction's
//           lock gives kUnavailable) -> check it is still the entry's
//           record (key, incarnation, live) -> write version+1 and value ->
//           unlock.
//   remove: lock -> check -> write kDeleted (version+1) -> remove the entry
//           from the tree -> unlock -> release the slot. A client holding
//           the old entry READs kDeleted or, after reuse, another
//           key/incarnation: it treats the key as absent or asks again.
// Thread safety: every member from any owner thread, concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "store/heap.h"
#include "store/record_io.h"
#include "store/skipped_incarnations.h"
#include "store/tables/plan.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::tables {

class RecordTree {
 public:
  // `region`: the owner's mapping of the region holding the heap's slots;
  // `words`: where their lock words are (default: in the slots; durable
  // nodes keep them apart, store/record.h).
  RecordTree(xstore::XTree& tree, RecordHeap& heap, std::span<uint8_t> region, uint32_t value_size,
             const SlotWords& words = {})
      : tree_(tree), heap_(heap), region_(region), value_size_(value_size), words_(words) {}

  // kAlreadyExists (unless upsert: then update), kResourceExhausted (heap
  // or leaves full), kOutOfRange (value larger than value_size).
  Result<RecordAddr> insert(uint64_t key, std::span<const uint8_t> value, bool upsert = false);
  // kNotFound, kUnavailable (locked by a transaction for every retry).
  Result<RecordAddr> update(uint64_t key, std::span<const uint8_t> value);
  Status remove(uint64_t key);
  // Backup copies: writes `value` with exactly `version` unless the record
  // holds a version >= it; inserts an absent key. True when written.
  Result<bool> install(uint64_t key, uint64_t version, std::span<const uint8_t> value);
  // Transactions (txn/index_ops.h), as HashTable::reserve / remove_held /
  // apply_in_order (versions only grow per slot and key: deleted_high):
  // reserve publishes `key` with a record locked with `lock_word`, version
  // 0 and a zero value, and sets *base (commit writes base + 1);
  // kAlreadyExists for a committed record, kUnavailable for another
  // transaction's reservation. remove_held deletes the record at `a` that
  // the caller holds with `lock_word` (kDeleted with a new version, entry
  // removed, unlocked, slot freed), kNotFound when it is not that.
  // apply_in_order: backups, the next change of a key or false (not yet).
  Result<RecordAddr> reserve(uint64_t key, uint64_t lock_word, uint64_t* base);
  Status remove_held(uint64_t key, const RecordAddr& a, uint64_t lock_word);
  enum class Change : uint8_t { kInsert, kUpdate, kDelete };
  Result<bool> apply_in_order(uint64_t key, Change c, uint64_t version,
                              std::span<const uint8_t> value, const ApplyMvcc* mvcc = nullptr,
                              uint64_t* wrote = nullptr);
  // True + a consistent copy of the value (value_out >= value_size).
  Result<bool> get(uint64_t key, std::span<uint8_t> value_out, RecordAddr* where = nullptr) const;

  // Restart of a durable copy (the tree is new, the heap's slots are not):
  // publishes `key` -> `a`, a record already in its slot. kAlreadyExists,
  // kResourceExhausted (out of leaves).
  Status adopt(uint64_t key, const RecordAddr& a);
  // Restart: no new record may start at or below `v`.
  void raise_deleted_high_to(uint64_t v) { raise_deleted_high(v); }

  xstore::XTree& tree() { return tree_; }
  // The slot at `offset` (region-relative), for owner-side inspection.
  const uint8_t* record(uint64_t offset) const { return slot(offset); }
  uint32_t value_size() const { return value_size_; }

 private:
  uint8_t* slot(uint64_t offset) const { return region_.data() + offset; }
  // The lock word of the record slot at `offset`.
  std::atomic_ref<uint64_t> lock_at(uint64_t offset) const {
    return std::atomic_ref<uint64_t>(*words_.lock(slot(offset), offset));
  }
  size_t slot_bytes() const;
  // Locks the record of entry `a` for `key`; false when it is no longer
  // that key's live record (kNotFound), error when it stays locked.
  Result<bool> lock_record(uint64_t key, const RecordAddr& a);
  void unlock_record(const RecordAddr& a);
  // Writes `version` (0: version + 1), flags and value over a locked record.
  void rewrite(const RecordAddr& a, uint32_t flags, std::span<const uint8_t> value,
               uint64_t version = 0, const uint64_t* wts = nullptr);
  // `lock_word` != 0: the record is published locked with it (reserve).
  Result<RecordAddr> insert_version(uint64_t key, std::span<const uint8_t> value, uint64_t version,
                                    bool upsert, uint64_t lock_word = 0, uint64_t wts = 0);

  void raise_deleted_high(uint64_t v);

  xstore::XTree& tree_;
  RecordHeap& heap_;
  std::atomic<uint64_t> deleted_high_{0};
  SkippedIncarnations skipped_;  // apply_in_order (backups)
  std::span<uint8_t> region_;
  uint32_t value_size_;
  SlotWords words_;
};

}  // namespace drtmx::store::tables
