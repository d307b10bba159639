// Owner-side access to records in local registered memory (the writer and
// local-reader halves of the record.h protocols), shared by the indexes
// that keep records: hash tables and record trees. Every access to slot
// memory is a relaxed 8-byte atomic (word_copy.h), since one-sided readers
// and transactions' CAS/WRITEs race with the owner by design.
#pragma once

#include <atomic>
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
class RecordImage {
 public:
  explicit RecordImage(size_t slot_bytes) : words_(slot_bytes / 8, 0) {}
  RecordHeader* header() { return reinterpret_cast<RecordHeader*>(words_.data()); }
  uint8_t* value() { return reinterpret_cast<uint8_t*>(words_.data()) + sizeof(RecordHeader); }
  void* data() { return words_.data(); }
  size_t bytes() const { return words_.size() * 8; }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }

  // Copies the slot at `rec` (all of it, lock word included).
  void load(const uint8_t* rec) { load_words(words_.data(), rec, bytes()); }
  // Loads only the header words.
  void load_header(const uint8_t* rec) { load_words(words_.data(), rec, sizeof(RecordHeader)); }
  // Stores the sealed part at `rec`: [8, slot_bytes) except the lock word
  // and the tuple timestamp (record.h: both change by atomics only).
  void store_body(uint8_t* rec) const {
    store_words(rec + 8, words_.data() + 1, kTsOffset - 8);
    store_words(rec + kValueOffset, words_.data() + kValueOffset / 8, bytes() - kValueOffset);
  }

 private:
  std::vector<uint64_t> words_;
};

// MVCC on a backup copy (apply_in_order): the commit timestamp the new
// version carries, and `keep_old`, called with the record locked and
// before it changes (`old_image`: its whole slot; `deleted`: the change
// deletes it) to keep the replaced version. keep_old returning false
// defers the change (the caller retries it later); nothing changed then.
struct ApplyMvcc {
  uint64_t wts = 0;
  std::function<bool(uint64_t record_offset, const uint8_t* old_image, bool deleted)> keep_old;
};

inline std::atomic_ref<uint64_t> lock_of(uint8_t* rec) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(rec));
}

}  // namespace drtmx::store
