// LocalHolds: which records the coroutines of one worker thread hold locked,
// so that a sibling about to read one of them waits for the holder to finish
// instead of reading a value that is about to change and aborting at
// validation (TxnNodeConfig::sibling_wait). The waiter parks (r2::Co::
// park_until) and the holder wakes it when its attempt ends.
//
// Why it pays: a hot record that every transaction of a worker writes (TPC-C
// W_YTD: one warehouse per worker, every Payment adds to it) is held from
// Validate through the Log round trip to Commit. With several coroutines per
// worker, every sibling that read it during that window aborts (74 % of
// Payment attempts on 3 nodes with 8 coroutines). Waiting costs no CPU: the
// waiter is parked until the holder's attempt ends, then reads the new
// value.
//
// Contract:
//   * Advisory only. Validation still locks and checks every record, so
//     serializability never depends on this table; a missed entry (table
//     full) only means an abort as before.
//   * Entries are added after the lock is acquired and dropped when the
//     holder's attempt ends (committed or aborted). Only a coroutine that
//     holds no lock waits (Execute), and a holder never waits for this table
//     (Validate, Log and Commit do not consult it): no wait cycle is
//     possible. Waits are bounded in time besides (Engine::await_sibling).
//   * Single-threaded: the coroutines of one worker run on its thread, one
//     at a time. Not shared between workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drtmx::txn {

class LocalHolds {
 public:
  static constexpr uint16_t kNobody = 0xFFFF;

  // Room for about `expected` held records at once (more are not recorded),
  // for coroutines 0 .. coroutines-1.
  LocalHolds(size_t expected, uint16_t coroutines);

  // Coroutine `co` holds (table, key), or is about to ask for its lock.
  // False when the table is full or another coroutine is recorded for it
  // (not recorded: do not drop it).
  bool hold(uint16_t table, uint64_t key, uint16_t co);
  // Forgets (table, key) if `co` is its recorded holder.
  void drop(uint16_t table, uint64_t key, uint16_t co);
  // The coroutine recorded as holding (table, key), or kNobody.
  uint16_t holder(uint16_t table, uint64_t key) const {
    if (count_ == 0) return kNobody;  // the common case: nothing held
    for (size_t i = slot_of(table, key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.co == kNobody) return kNobody;
      if (s.key == key && s.table == table) return s.co;
    }
  }
  size_t size() const { return count_; }

  // `waiter` waits for the attempt of `holder` to end (Engine parks it).
  void add_waiter(uint16_t holder, uint16_t waiter) {
    if (holder < waiters_.size()) waiters_[holder].push_back(waiter);
  }
  // The coroutines waiting for `holder`; when its attempt ends the engine
  // wakes and clears them. A listed waiter may have stopped waiting
  // (deadline) or wait for another holder by now: waking it is harmless (it
  // re-checks).
  std::vector<uint16_t>& waiters_of(uint16_t holder) { return waiters_[holder]; }

 private:
  struct Slot {
    uint64_t key = 0;
    uint16_t table = 0;
    uint16_t co = kNobody;  // kNobody: empty
  };
  size_t slot_of(uint16_t table, uint64_t key) const {
    uint64_t h = (key ^ (uint64_t{table} << 48)) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 32) & mask_;
  }
  std::vector<Slot> slots_;                     // open addressing, linear probing
  std::vector<std::vector<uint16_t>> waiters_;  // by holder coroutine
  size_t mask_;
  size_t count_ = 0;
};

}  // namespace drtmx::txn
