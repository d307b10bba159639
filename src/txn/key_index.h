// KeyIndex: a transaction's map from (table, key) to a position in one of
// its vectors (the access set, a batch of keys being read), so that finding
// a key costs O(1) instead of a walk over everything the transaction
// touched — Stock-Level reads some 400 records, and a walk per read made
// it quadratic.
//
// Open addressing with linear probing over a power-of-two table that grows
// at half full. clear() is O(1): every slot carries the epoch it was
// written in, and bumping the epoch empties the table (the slots are
// zeroed only when the 32-bit epoch wraps). Positions are whatever the
// caller stores; erase is not supported — a caller that removes from its
// vector rebuilds the index.
//
// Not thread-safe: one per engine (coroutine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drtmx::txn {

class KeyIndex {
 public:
  static constexpr uint32_t kAbsent = ~uint32_t{0};

  KeyIndex() { slots_.resize(kMinSlots); }
  // Starts at `epoch` (> 0): lets a test reach the epoch's wrap.
  explicit KeyIndex(uint32_t epoch) : KeyIndex() { epoch_ = epoch == 0 ? 1 : epoch; }

  // Empties the index.
  void clear() {
    used_ = 0;
    if (++epoch_ == 0) {  // wrapped: stale slots could look current
      for (Slot& s : slots_) s.epoch = 0;
      epoch_ = 1;
    }
  }

  uint32_t find(uint16_t table, uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(table, key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.epoch != epoch_) return kAbsent;
      if (s.key == key && s.table == table) return s.pos;
    }
  }

  // Maps (table, key) to `pos`, replacing an earlier mapping of it.
  void put(uint16_t table, uint64_t key, uint32_t pos) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    place(table, key, pos);
  }

  size_t size() const { return used_; }

 private:
  static constexpr size_t kMinSlots = 64;
  struct Slot {
    uint64_t key = 0;
    uint32_t epoch = 0;  // current when == epoch_
    uint32_t pos = 0;
    uint16_t table = 0;
  };

  static size_t hash(uint16_t table, uint64_t key) {
    uint64_t h = (key ^ (uint64_t{table} << 48)) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }

  void place(uint16_t table, uint64_t key, uint32_t pos) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(table, key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.epoch != epoch_) {
        s = Slot{key, epoch_, pos, table};
        ++used_;
        return;
      }
      if (s.key == key && s.table == table) {
        s.pos = pos;
        return;
      }
    }
  }

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.size() * 2);
    const uint32_t e = epoch_;
    used_ = 0;
    epoch_ = 1;  // the new table's slots are all epoch 0
    for (const Slot& s : old) {
      if (s.epoch == e) place(s.table, s.key, s.pos);
    }
  }

  std::vector<Slot> slots_;
  size_t used_ = 0;
  uint32_t epoch_ = 1;
};

}  // namespace drtmx::txn
