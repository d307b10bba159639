// VersionLock: the optimistic version lock (seqlock) of one XTree node.
//
// The word is even when free and odd while a writer holds it; every unlock
// adds 1 more, so a released word never repeats a value a reader saw.
//
// Reader:  v = read_begin();  read fields (atomics, relaxed);
//          if (!validate(v)) restart.
// Writer:  either try_upgrade(v) from a version it read (fails if anything
//          changed since, which is how writers validate what they read), or
//          lock() (spin); change fields; unlock().
//
// Memory ordering (Boehm, "Can seqlocks get along with programming language
// memory models?"): read_begin is an acquire load; validate puts an acquire
// fence between the reader's field loads and its second load of the word.
// The writer's CAS is acquire, followed by a release fence, so no field
// store becomes visible before the word turns odd; unlock is a release
// increment, so every field store is visible before the word turns even.
//
// Waiting: read_begin() and lock() spin with pause while the word is odd,
// and yield the CPU every 64 spins (critical sections are short, but with
// more threads than cores the holder may be descheduled).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/spin_lock.h"

namespace drtmx::store::xstore {

class VersionLock {
 public:
  // Waits until the word is free and returns it.
  uint64_t read_begin() const {
    for (uint32_t spins = 0;; ++spins) {
      const uint64_t v = word_.load(std::memory_order_acquire);
      if ((v & 1) == 0) return v;
      spin_relax(spins);
    }
  }
  // True when nobody wrote since read_begin() returned v.
  bool validate(uint64_t v) const {
    std::atomic_thread_fence(std::memory_order_acquire);
    return word_.load(std::memory_order_relaxed) == v;
  }
  // Locks if the word is still v (v must be even).
  bool try_upgrade(uint64_t v) {
    if (!word_.compare_exchange_strong(v, v + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      return false;
    }
    std::atomic_thread_fence(std::memory_order_release);
    return true;
  }
  // Locks if the word is free now; never waits.
  bool try_lock() {
    const uint64_t v = word_.load(std::memory_order_relaxed);
    return (v & 1) == 0 && try_upgrade(v);
  }
  void lock() {
    for (uint32_t spins = 0;; ++spins) {
      uint64_t v = word_.load(std::memory_order_relaxed);
      if ((v & 1) == 0 && try_upgrade(v)) return;
      spin_relax(spins);
    }
  }
  void unlock() { word_.fetch_add(1, std::memory_order_release); }

 private:
  std::atomic<uint64_t> word_{0};
};

}  // namespace drtmx::store::xstore
