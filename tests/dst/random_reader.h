// Test helper of the concurrent VersionStore suites: a snapshot reader
// racing the writers and GC.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>
#include <vector>

#include "dst/version_store.h"

namespace drtmx::dst::testing {

// Until `stop`: reads a random record slot at a random timestamp in
// [lwm, clock) whose version in place (newest[slot]'s wts) is newer, and
// counts in *bad every wrong answer — a reclaimed slot while the timestamp
// stayed at or above the lwm, or a version newer than the timestamp or
// with another value than its wts says (the writers store wts % 251) —
// and in *reads the versions read.
inline void read_randomly(const VersionStore& s, const std::vector<std::atomic<uint64_t>>& newest,
                          const std::atomic<uint64_t>& clock, const std::atomic<uint64_t>& lwm,
                          const std::atomic<bool>& stop, std::atomic<uint64_t>* bad,
                          std::atomic<uint64_t>* reads, uint64_t seed) {
  std::mt19937_64 rng(seed);
  while (!stop.load()) {
    const uint64_t lo = lwm.load(), hi = clock.load();
    if (hi <= lo) continue;
    const uint64_t ts = lo + rng() % (hi - lo);
    const uint64_t slot = rng() % newest.size();
    if (newest[slot].load() <= ts) continue;  // the in-place version answers
    uint8_t v[32];
    VersionInfo info;
    const Found f = s.find(slot, ts, v, &info);
    if (lwm.load() > ts) continue;  // fell below the lwm meanwhile: no promise
    if (f == Found::kReclaimed) {
      ++*bad;
    } else if (f == Found::kVersion) {
      ++*reads;
      if (info.wts > ts || v[0] != info.wts % 251) ++*bad;
    }
  }
}

}  // namespace drtmx::dst::testing
