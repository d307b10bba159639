// SpinLock: a lock for critical sections of a few dozen instructions that
// are rarely contended (one worker thread per copy of a partition, with
// the occasional stats or upkeep call from another thread). Unlocking is a
// plain release store — no locked instruction, unlike a futex-based mutex's
// unlock — and locking one exchange when free. A waiter spins with `pause`
// on a load (not on the exchange, which would take the line from the
// holder) and yields the CPU every 64 rounds, so a holder preempted on a
// busy machine gets to run (spin_relax, shared with the other owner-side
// spinning locks).
//
// Satisfies Lockable (lock, try_lock, unlock): use it with std::lock_guard.
#pragma once

#include <immintrin.h>

#include <atomic>
#include <thread>

namespace drtmx {

// One step of a waiter that spins on a load: `pause`, and every 64th step
// (spins = 63, 127, ...) the CPU is given up instead, so that a preempted
// holder on a busy machine can run.
inline void spin_relax(uint32_t spins) {
  if ((spins & 63) == 63) {
    std::this_thread::yield();
  } else {
    _mm_pause();
  }
}

class SpinLock {
 public:
  void lock() {
    for (uint32_t spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) spin_relax(spins++);
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace drtmx
