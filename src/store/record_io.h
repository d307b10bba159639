// Owner-side access to records in local registered memory (the writer and
// local-reader halves of the record.h protocols), shared by the indexes
// that keep records: hash tables and record trees. Every access to slot
// memory is a relaxed 8-byte atomic (word_copy.h), since one-sided readers
// and transactions' CAS/WRITEs race with the owner by design.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "store/record.h"
#include "store/word_copy.h"

namespace drtmx::store {

// The record lock word the owner writes while it changes a record; never
// produced by lock_word() (whose values are below 2^56).
constexpr uint64_t kOwnerLockWord = ~uint64_t{0};

// A private image of one slot (header + value + padding) in 8-byte words.
// Slots up to kInlineBytes live in the object itself (every insert, apply
// and rewrite builds one: no allocation on those paths); larger ones on the
// heap.
class RecordImage {
 public:
  static constexpr size_t kInlineBytes = 1024;

  explicit RecordImage(size_t slot_bytes) : n_(slot_bytes / 8) {
    if (n_ > kInlineWords) {
      heap_.assign(n_, 0);
      words_ = heap_.data();
    } else {
      words_ = inline_;
      clear();
    }
  }
  RecordImage(const RecordImage&) = delete;
  RecordImage& operator=(const RecordImage&) = delete;

  RecordHeader* header() { return reinterpret_cast<RecordHeader*>(words_); }
  uint8_t* value() { return reinterpret_cast<uint8_t*>(words_) + sizeof(RecordHeader); }
  void* data() { return words_; }
  size_t bytes() const { return n_ * 8; }
  void clear() { std::fill(words_, words_ + n_, 0); }

  // Copies the slot at `rec` (all of it, lock word included).
  void load(const uint8_t* rec) { load_words(words_, rec, bytes()); }
  // Loads only the header words.
  void load_header(const uint8_t* rec) { load_words(words_, rec, sizeof(RecordHeader)); }
  // Stores the body at `rec`: [kBodyOffset, slot_bytes), i.e. not the lock
  // word nor the tuple timestamp (record.h: both change by atomics only).
  void store_body(uint8_t* rec) const {
    store_words(rec + kBodyOffset, words_ + kBodyOffset / 8, bytes() - kBodyOffset);
  }

 private:
  static constexpr size_t kInlineWords = kInlineBytes / 8;
  size_t n_;
  uint64_t* words_;
  uint64_t inline_[kInlineWords];
  std::vector<uint64_t> heap_;
};

// Quiet copies: a local reader's proof that no writer overlapped its copy
// of a slot, in place of verifying the seal (which hashes the whole value:
// the largest part of reading a row in place). A copy is quiet when
//   H1 = the sealed header words [version .. wts], loaded first,
//   L1 = the lock word, then the slot is copied, then (acquire fence)
//   L2 = the lock word and H2 = the header words again
// give L1 == L2 == 0 and H1 == H2 == the copy's header words.
//
// Why that suffices. A writer of a live record holds its lock word from
// before its first store to after its last (record.h). If the copy saw one
// of its stores, the writer's earlier lock is visible to L2: L2 is its
// lock (refused), or a later unlock — and then H2 sees the version the
// writer stored, which H1, loaded before L1 saw the record unlocked, did
// not (refused). A writer that finished before L1 left nothing to
// overlap. The only writers without the lock are inserts into a free slot
// (a new incarnation: a reader that expects the old one finds the identity
// wrong; one that expects the new one found its address only after the
// insert published it) and they store the header words before the value
// (store_words: ascending release stores), so a copy that saw the value
// being written sees a new header in H2.
//
// This holds only where every store into the slot is a CPU store that
// other CPUs see in program order (x86-64's total store order) — volatile
// memory on a fabric whose one-sided ops are CPU stores (shm).
// StoreNode::quiet_copies() says whether this node's records qualify; where
// they do not (a NIC's DMA, non-temporal stores of persistent WRITEs,
// weaker memory models), readers verify the seal.
#if defined(__x86_64__)
inline constexpr bool kCpuStoresInOrder = true;
#else
inline constexpr bool kCpuStoresInOrder = false;
#endif

// A part of a slot's value a reader wants: slot bytes [from, to), 8-byte
// aligned, at or after kValueOffset. The default (to == 0) is all of it.
struct SlotPart {
  uint32_t from = 0;
  uint32_t to = 0;
  bool whole() const { return to == 0; }
};

// The words of a slot of `slot_bytes` that hold value bytes
// [offset, offset + size).
constexpr SlotPart slot_part(size_t offset, size_t size, size_t slot_bytes) {
  const size_t from = (kValueOffset + offset) & ~size_t{7};
  const size_t to = std::min(slot_bytes, (kValueOffset + offset + size + 7) & ~size_t{7});
  return {static_cast<uint32_t>(from), static_cast<uint32_t>(to)};
}

// Copies the slot at `rec` (lock word in the slot, `bytes` its size) to
// `out`; true when the copy is quiet (above). On false the copy is made
// all the same: verify() it.
// With a `part`, only the header words and the part's are copied (to the
// same offsets in `out`). The argument above holds word by word — it never
// needed the whole slot — so a quiet part is one writer's image as well,
// the writer whose header was copied. A part copy that is not quiet cannot
// be verified (the seal covers the whole value): copy the slot again whole.
inline bool copy_quiet(uint8_t* out, const uint8_t* rec, size_t bytes, SlotPart part = {}) {
  constexpr size_t kFirst = offsetof(RecordHeader, version) / 8;
  constexpr size_t kWords = (offsetof(RecordHeader, wts) + 8) / 8 - kFirst;
  auto* w = reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(rec));
  uint64_t h1[kWords];
  for (size_t i = 0; i < kWords; ++i) {
    h1[i] = std::atomic_ref<uint64_t>(w[kFirst + i]).load(std::memory_order_acquire);
  }
  const uint64_t l1 = std::atomic_ref<uint64_t>(w[0]).load(std::memory_order_acquire);
  if (part.whole()) {
    load_words(out, rec, bytes);
  } else {
    load_words(out, rec, kValueOffset);
    load_words(out + part.from, rec + part.from, part.to - part.from);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (l1 != 0 || std::atomic_ref<uint64_t>(w[0]).load(std::memory_order_acquire) != 0) {
    return false;
  }
  const auto* copy = reinterpret_cast<const uint64_t*>(out);
  for (size_t i = 0; i < kWords; ++i) {
    if (std::atomic_ref<uint64_t>(w[kFirst + i]).load(std::memory_order_acquire) != h1[i] ||
        copy[kFirst + i] != h1[i]) {
      return false;
    }
  }
  return true;
}

// verify() of a quiet copy: the same answers, without the seal's hash (a
// quiet copy is one writer's complete image, whose seal holds).
inline RecordCheck verify_quiet(const void* copy, uint64_t key, uint32_t incarnation) {
  RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  if (never_written(h)) return RecordCheck::kEmpty;
  return check_identity(h, key, incarnation);
}

// MVCC on a backup copy (apply_in_order): the commit timestamp the new
// version carries, and `keep_old`, called with the record locked and
// before it changes (`old_image`: its whole slot; `deleted`: the change
// deletes it) to keep the replaced version. keep_old returning false
// defers the change (the caller retries it later); nothing changed then.
// `will_keep` (may be empty), called once the record to change is found,
// before it is locked and read: a hint to bring in what keep_old will
// touch, so those cache misses overlap the record's.
struct ApplyMvcc {
  uint64_t wts = 0;
  std::function<bool(uint64_t record_offset, const uint8_t* old_image, bool deleted)> keep_old;
  std::function<void(uint64_t record_offset)> will_keep;
};

// The lock word in the slot at `rec` (a node whose lock words are in the
// slots; see SlotWords).
inline std::atomic_ref<uint64_t> lock_of(uint8_t* rec) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(rec));
}

// A record as owner-side code touches it: its slot, and the two words that
// change by atomics only — its lock word and its MVCC tuple timestamp.
// Those are the slot's own words (record.h: +0 and +48), or, on a durable
// node, its entry in the heap's lock area (record.h, "Lock words apart").
struct SlotRef {
  uint8_t* rec = nullptr;
  uint64_t* lock = nullptr;
  uint64_t* ts = nullptr;
  // A record whose lock and ts words are in its slot.
  static SlotRef in_slot(uint8_t* rec) {
    return {rec, reinterpret_cast<uint64_t*>(rec), ts_word(rec)};
  }
};

// Where the owner finds the lock and ts words of one heap's records: in the
// slots (default-constructed), or apart, in the heap's lock area (durable
// nodes, H8). Chosen when the table is built; copyable, read-only after.
class SlotWords {
 public:
  SlotWords() = default;
  // `area`: the heap's lock area, one kLockEntryBytes entry per slot;
  // `heap_offset`: the heap's first slot (region-relative, like every
  // record offset); `slot_bytes`, `slots`: its slot size and capacity.
  SlotWords(uint64_t* area, uint64_t heap_offset, uint64_t slot_bytes, uint64_t slots)
      : area_(area), heap_offset_(heap_offset), slot_bytes_(slot_bytes), slots_(slots) {}

  bool apart() const { return area_ != nullptr; }
  // Whether `offset` is the first byte of one of the heap's slots (apart:
  // the only offsets an entry exists for; in the slots: any).
  bool holds(uint64_t offset) const {
    return area_ == nullptr ||
           (offset >= heap_offset_ && (offset - heap_offset_) % slot_bytes_ == 0 &&
            (offset - heap_offset_) / slot_bytes_ < slots_);
  }
  // The words of the record at `rec`, region offset `offset` (a slot of
  // this heap: holds(offset)).
  uint64_t* lock(uint8_t* rec, uint64_t offset) const {
    return area_ == nullptr ? reinterpret_cast<uint64_t*>(rec) : entry(offset);
  }
  uint64_t* ts(uint8_t* rec, uint64_t offset) const {
    return area_ == nullptr ? ts_word(rec) : entry(offset) + 1;
  }
  SlotRef at(uint8_t* rec, uint64_t offset) const {
    if (area_ == nullptr) return SlotRef::in_slot(rec);
    uint64_t* e = entry(offset);
    return {rec, e, e + 1};
  }

 private:
  static_assert(kLockEntryBytes == 16, "an entry is [lock][ts]");
  uint64_t* entry(uint64_t offset) const {
    return area_ + (offset - heap_offset_) / slot_bytes_ * (kLockEntryBytes / 8);
  }
  uint64_t* area_ = nullptr;
  uint64_t heap_offset_ = 0;
  uint64_t slot_bytes_ = 1;
  uint64_t slots_ = 0;
};

}  // namespace drtmx::store
