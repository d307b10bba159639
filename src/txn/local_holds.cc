// LocalHolds (local_holds.h).
#include "txn/local_holds.h"

namespace drtmx::txn {

LocalHolds::LocalHolds(size_t expected, uint16_t coroutines) : waiters_(coroutines) {
  // Kept at most half full (hold() refuses beyond), so probes stay short
  // and every probe sequence ends at an empty slot.
  size_t n = 64;
  while (n < 2 * expected) n *= 2;
  slots_.resize(n);
  mask_ = n - 1;
}

bool LocalHolds::hold(uint16_t table, uint64_t key, uint16_t co) {
  size_t i = slot_of(table, key);
  for (;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.co == kNobody) break;
    // Recorded by another: that one's attempt is still running (drops come
    // at its end), so it holds the lock or is about to; ours will fail.
    if (s.key == key && s.table == table) return s.co == co;
  }
  if (2 * (count_ + 1) > slots_.size()) return false;
  slots_[i] = {key, table, co};
  ++count_;
  return true;
}

void LocalHolds::drop(uint16_t table, uint64_t key, uint16_t co) {
  size_t i = slot_of(table, key);
  for (;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.co == kNobody) return;
    if (s.key == key && s.table == table) break;
  }
  if (slots_[i].co != co) return;
  // Backward-shift deletion: move later members of the probe run into the
  // hole when their home slot does not lie strictly between the hole and
  // them (cyclically), so every lookup still finds them.
  size_t hole = i;
  for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
    const Slot& s = slots_[j];
    if (s.co == kNobody) break;
    const size_t home = slot_of(s.table, s.key);
    const bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!between) {
      slots_[hole] = s;
      hole = j;
    }
  }
  slots_[hole] = Slot{};
  --count_;
}

}  // namespace drtmx::txn
