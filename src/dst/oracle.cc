#include "dst/oracle.h"

#include <string>

namespace drtmx::dst {

GtsOracle::GtsOracle(uint8_t* region)
    : counter_(reinterpret_cast<uint64_t*>(region + kCounterOffset)),
      stable_(reinterpret_cast<uint64_t*>(region + kStableOffset)),
      done_(new std::atomic<uint64_t>[kWindow]) {
  for (uint64_t i = 0; i < kWindow; ++i) done_[i].store(0, std::memory_order_relaxed);
}

Status GtsOracle::install(Timestamp ts) {
  const Timestamp s = stable();
  if (ts <= s || ts > issued() || ts - s >= kWindow) {
    return invalid_argument("GTS INSTALL of timestamp " + std::to_string(ts) +
                            ": not an outstanding one (stable " + std::to_string(s) +
                            ", issued " + std::to_string(issued()) + ")");
  }
  uint64_t zero_or_old = done_[ts % kWindow].load();
  if (zero_or_old == ts) {
    return invalid_argument("GTS INSTALL of timestamp " + std::to_string(ts) + " twice");
  }
  done_[ts % kWindow].store(ts);  // mark, then look at StableTS
  installs_.fetch_add(1, std::memory_order_relaxed);
  Timestamp cur = stable();
  // Bounded: each iteration either advances StableTS by one (at most
  // kWindow outstanding) or sees another thread's advance.
  for (uint64_t guard = 0; guard < 4 * kWindow; ++guard) {
    if (done_[(cur + 1) % kWindow].load() != cur + 1) break;
    if (__atomic_compare_exchange_n(stable_, &cur, cur + 1, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
      ++cur;
    }
  }
  return Status::ok();
}

}  // namespace drtmx::dst
