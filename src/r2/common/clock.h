// Monotonic nanoseconds, comparable across the processes of one host
// (CLOCK_MONOTONIC through the vDSO: no system call).
#pragma once

#include <cstdint>
#include <ctime>

namespace drtmx::r2 {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace drtmx::r2
