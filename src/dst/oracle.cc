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
  if (ts <= s || ts > issued() || done_[ts % kWindow].load() == ts) {
    return invalid_argument("GTS INSTALL of timestamp " + std::to_string(ts) +
                            ": not an outstanding one (stable " + std::to_string(s) + ", issued " +
                            std::to_string(issued()) + ")");
  }
  if (ts - s >= kWindow) {
    std::lock_guard<std::mutex> g(mu_);
    if (!overflow_.insert(ts).second) {
      return invalid_argument("GTS INSTALL of timestamp " + std::to_string(ts) + " twice");
    }
    overflowed_.fetch_add(1, std::memory_order_relaxed);
    has_overflow_.store(true);
    // StableTS may have moved while we inserted (an advancer that looked
    // at has_overflow_ before our store would leave ts where it is).
    drain_overflow();
  } else {
    mark(ts);  // mark, then look at StableTS
  }
  installs_.fetch_add(1, std::memory_order_relaxed);
  advance();
  return Status::ok();
}

void GtsOracle::settle_issued() {
  std::lock_guard<std::mutex> g(mu_);
  const Timestamp last = issued();
  Timestamp cur = stable();
  while (cur < last && !__atomic_compare_exchange_n(stable_, &cur, last, false, __ATOMIC_SEQ_CST,
                                                    __ATOMIC_SEQ_CST)) {
  }
  overflow_.clear();
  has_overflow_.store(false);
}

void GtsOracle::advance() {
  // Bounded: each round advances StableTS over at most kWindow marks (or
  // sees another thread's advance), and a round repeats only after it
  // moved overflow entries into the window.
  for (int round = 0; round < 1 << 20; ++round) {
    Timestamp cur = stable();
    for (uint64_t guard = 0; guard < 4 * kWindow; ++guard) {
      if (done_[(cur + 1) % kWindow].load() != cur + 1) break;
      if (__atomic_compare_exchange_n(stable_, &cur, cur + 1, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST)) {
        ++cur;
      }
    }
    if (!has_overflow_.load()) return;
    std::lock_guard<std::mutex> g(mu_);
    const size_t before = overflow_.size();
    drain_overflow();
    if (overflow_.size() == before) return;
  }
}

void GtsOracle::drain_overflow() {
  const Timestamp s = stable();
  while (!overflow_.empty() && *overflow_.begin() - s < kWindow) {
    mark(*overflow_.begin());
    overflow_.erase(overflow_.begin());
  }
  has_overflow_.store(!overflow_.empty());
}

}  // namespace drtmx::dst
