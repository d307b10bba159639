// IdleBackoff: what a worker does when a loop iteration found nothing to do.
//
// A worker must never block (an RPC may arrive at any time), but a spinning
// idle worker steals a core from busy ones when there are more threads than
// cores (a 3-node local cluster on 2 cores). So: a few iterations of pause,
// then sched_yield() (cheap when nobody else wants the core), and — only
// when no coroutine of this worker waits for anything, i.e. the worker is a
// pure server right now — sleeps growing from 1 us to 64 us. Any work
// resets it.
//
// The spin length is a measured trade-off (r2-bench, shm, 8 coroutines, on
// 2 cores): 512 spins instead of 64 gave +20% RPC/s with 2 nodes but halved
// it with 3 nodes (more busy threads than cores), and 4096 cut the 3-node
// rate 9x. Yielding early is what keeps oversubscribed clusters alive.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

namespace drtmx::r2 {

class IdleBackoff {
 public:
  void on_work() { idle_ = 0; }
  // Returns true when it slept.
  bool on_idle(bool coroutines_waiting) {
    ++idle_;
    if (idle_ < kSpin) {
      cpu_relax();
      return false;
    }
    if (coroutines_waiting || idle_ < kYield) {
      sched_yield();
      return false;
    }
    uint32_t shift = static_cast<uint32_t>((idle_ - kYield) / 64);
    long ns = 1000L << (shift > 6 ? 6 : shift);
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
    return true;
  }

 private:
  static constexpr uint64_t kSpin = 64;
  static constexpr uint64_t kYield = 2048;
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  uint64_t idle_ = 0;
};

}  // namespace drtmx::r2
