// Decentralized scalar timestamps (thesis §5.2.4): 64-bit hybrid
// timestamps, 48-bit physical clock in the high bits, 16-bit logical
// counter in the low bits.
//
// Physical part: CLOCK_REALTIME (loosely synchronized across hosts by NTP
// or PTP) in units of 8.192 us (ns >> 13) since 2025-01-01T00:00:00Z; 48
// bits of those last 73 years. Correctness never depends on the clocks
// (any read timestamp gives a consistent snapshot, any commit timestamp
// above the ones a transaction met orders it correctly); they only decide
// how fresh a snapshot is (bounded staleness: the clock skew between
// nodes, thesis §5.2.4).
//
// Arithmetic: "ts + 1" increments the logical part; a carry into the
// physical part is harmless (a timestamp slightly in the future). Every
// timestamp a protocol step produces is > 0: 0 means "none" in records
// (loaded data carries wts 0, older than every snapshot).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ctime>

namespace drtmx::dst {

using Timestamp = uint64_t;

constexpr int kLogicalBits = 16;
constexpr uint64_t kEpochUnixNs = 1735689600ull * 1000000000ull;  // 2025-01-01
constexpr int kTickShift = 13;                                    // 8.192 us per tick

// The physical clock as a timestamp with logical part 0.
inline Timestamp physical_now() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  const uint64_t ns =
      static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
  const uint64_t ticks = ns > kEpochUnixNs ? (ns - kEpochUnixNs) >> kTickShift : 1;
  return ticks << kLogicalBits;
}

// Microseconds a timestamp difference stands for (reports, staleness).
inline double ts_to_us(uint64_t delta) {
  return static_cast<double>(delta >> kLogicalBits) * double(1u << kTickShift) / 1000.0;
}
inline uint64_t us_to_ts(double us) {
  return static_cast<uint64_t>(us * 1000.0 / double(1u << kTickShift)) << kLogicalBits;
}

// LocalTS of one worker thread (thesis Fig 5-7): never below the physical
// clock, never decreasing (a clock step backwards does not move it back),
// raised to every commit timestamp the worker's transactions produce.
// Shared by the worker's coroutines; the snapshot floor (floor.h) reads it
// from another thread, hence the atomic (relaxed: it is a lower bound).
class LocalClock {
 public:
  // A simulated clock offset (experiments on clock skew; 0 normally): the
  // physical part reads `skew` ahead (or behind, negative).
  void set_skew(int64_t skew_ts) { skew_ = skew_ts; }
  // The current local timestamp: max(physical clock, last value).
  Timestamp now() {
    const Timestamp p = physical_now() + static_cast<uint64_t>(skew_);
    Timestamp cur = last_.load(std::memory_order_relaxed);
    if (p > cur) {
      last_.store(p, std::memory_order_relaxed);
      return p;
    }
    return cur;
  }
  // After a commit with timestamp ts: LocalTS = max(LocalTS, ts).
  void observe(Timestamp ts) {
    if (ts > last_.load(std::memory_order_relaxed)) last_.store(ts, std::memory_order_relaxed);
  }

 private:
  std::atomic<Timestamp> last_{0};
  int64_t skew_ = 0;
};

}  // namespace drtmx::dst
