// IdleBackoff: what a worker does when a loop iteration found nothing to do.
//
// A worker must never block (an RPC may arrive at any time), but a spinning
// idle worker steals a core from busy ones when there are more threads than
// cores (a 3-node local cluster on 2 cores). So: some iterations of pause,
// then sched_yield(), and — only when no coroutine of this worker waits for
// anything, i.e. the worker is a pure server right now — sleeps growing
// from 1 us to 64 us. Any work resets it.
//
// The spin length adapts. Each sched_yield() is timed: one that returns
// within kFastYieldNs gave the core to nobody (no other thread wanted it),
// so the next spin doubles (up to kMaxSpin) and saves system calls; one
// that took longer means another thread ran, so the spin drops back to
// kMinSpin and this worker keeps yielding early. Measured with r2-bench
// (shm, 8 coroutines, 2 cores): a fixed spin of 512 instead of 64 gave +20%
// RPC/s with 2 nodes but halved it with 3 nodes, and 4096 cut the 3-node
// rate 9x. Adaptive (same runs): 1.93 M RPC/s with 2 nodes (fixed 64:
// 1.6-1.8) and 1.57 with 3 nodes (fixed 64: 1.64); a 50 us threshold would
// lift 2 nodes to 2.14 but drop 3 nodes to 0.22, so 5 us it is.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>
#include <functional>

#include "r2/common/clock.h"

namespace drtmx::r2 {

class IdleBackoff {
 public:
  // Replaces the sleep: called with the nanoseconds it would sleep; may
  // return early when there is work (ucx: the worker's event descriptor).
  // Returns false when it did not wait at all (work was already there).
  void set_waiter(std::function<bool(long)> w) { waiter_ = std::move(w); }
  void on_work() { idle_ = yields_ = sleeps_ = 0; }
  // Returns true when it slept.
  bool on_idle(bool coroutines_waiting) {
    if (++idle_ < spin_) {
      cpu_relax();
      return false;
    }
    idle_ = 0;  // spin again before the next yield or sleep
    if (coroutines_waiting || yields_ < kYields) {
      ++yields_;
      const uint64_t t0 = now_ns();
      sched_yield();
      if (now_ns() - t0 < kFastYieldNs) {
        if (spin_ < kMaxSpin) spin_ *= 2;
      } else {
        spin_ = kMinSpin;
      }
      return false;
    }
    const uint64_t shift = sleeps_++ / 64;
    const long ns = 1000L << (shift > 6 ? 6 : shift);
    if (waiter_) return waiter_(ns);
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
    return true;
  }
  uint64_t spin() const { return spin_; }

 private:
  static constexpr uint64_t kMinSpin = 64;
  static constexpr uint64_t kMaxSpin = 4096;
  static constexpr uint64_t kYields = 64;
  static constexpr uint64_t kFastYieldNs = 5000;
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  uint64_t idle_ = 0;    // idle iterations since the last yield, sleep or work
  uint64_t yields_ = 0;  // yields since the last work
  uint64_t sleeps_ = 0;  // sleeps since the last work
  uint64_t spin_ = kMinSpin;
  std::function<bool(long)> waiter_;
};

}  // namespace drtmx::r2
