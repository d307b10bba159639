// The per-coroutine transaction source of the list-append workload
// (append.h): draws micro-ops, runs them through the Txn API, learns the
// slots' epochs, and describes each transaction for histories.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "append/append.h"

namespace drtmx::bench::append {

// The epoch each slot's clients draw keys of, shared by the clients of one
// node process: what one learned from a head (a retired or full list) the
// others use at once instead of each paying a failed attempt for it. Only
// a hint: a stale one costs a `fail`, never a wrong history.
class EpochHints {
 public:
  explicit EpochHints(uint32_t slots) : epoch_(slots) {}
  uint64_t get(uint32_t slot) const { return epoch_[slot].load(std::memory_order_relaxed); }
  // Raises the slot's epoch to at least `e`.
  void learn(uint32_t slot, uint64_t e) {
    uint64_t cur = epoch_[slot].load(std::memory_order_relaxed);
    while (cur < e && !epoch_[slot].compare_exchange_weak(cur, e, std::memory_order_relaxed)) {
    }
  }

 private:
  std::vector<std::atomic<uint64_t>> epoch_;
};

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            std::shared_ptr<EpochHints> hints);

}  // namespace drtmx::bench::append
