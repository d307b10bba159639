// Delivery bounds and deferred queues (tpcc_deliveries.h).
#include "tpcc/tpcc_deliveries.h"

namespace drtmx::bench::tpcc {

Deliveries::Deliveries(uint32_t warehouses) : n_(size_t{warehouses} + 1), w_(new Warehouse[n_]) {
  for (size_t i = 0; i < n_; ++i) {
    for (auto& f : w_[i].from) f.store(0, std::memory_order_relaxed);
  }
}

uint32_t Deliveries::from(uint32_t w, uint32_t d) const {
  return w < n_ && d <= kDistricts ? w_[w].from[d].load(std::memory_order_relaxed) : 0;
}

void Deliveries::delivered(uint32_t w, uint32_t d, uint32_t bound) {
  if (w >= n_ || d > kDistricts) return;
  std::atomic<uint32_t>& a = w_[w].from[d];
  uint32_t cur = a.load(std::memory_order_relaxed);
  while (cur < bound && !a.compare_exchange_weak(cur, bound, std::memory_order_relaxed)) {
  }
}

void Deliveries::request(uint32_t w) {
  if (w < n_) w_[w].queued.fetch_add(1, std::memory_order_relaxed);
}

bool Deliveries::claim(uint32_t w) {
  if (w >= n_) return false;
  Warehouse& h = w_[w];
  if (h.queued.load(std::memory_order_relaxed) == 0) return false;  // the common case
  bool idle = false;
  // Acquire: the previous agent's done() happened before, and with it the
  // bounds its Delivery published.
  if (!h.agent.compare_exchange_strong(idle, true, std::memory_order_acquire)) return false;
  uint32_t q = h.queued.load(std::memory_order_relaxed);
  while (q > 0 && !h.queued.compare_exchange_weak(q, q - 1, std::memory_order_relaxed)) {
  }
  if (q > 0) return true;
  h.agent.store(false, std::memory_order_release);
  return false;
}

void Deliveries::done(uint32_t w) {
  if (w < n_) w_[w].agent.store(false, std::memory_order_release);
}

uint32_t Deliveries::queued(uint32_t w) const {
  return w < n_ ? w_[w].queued.load(std::memory_order_relaxed) : 0;
}

}  // namespace drtmx::bench::tpcc
