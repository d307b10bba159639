#include "r2/control/membership.h"

namespace drtmx::r2 {

MembershipView::MembershipView(uint16_t nodes) {
  for (uint16_t n = 0; n < nodes && n < kMaxNodes; ++n) {
    live_[n / 64].store(live_[n / 64].load(std::memory_order_relaxed) | (uint64_t{1} << (n % 64)),
                        std::memory_order_relaxed);
  }
}

MembershipView::Snapshot MembershipView::snapshot() const {
  Snapshot s;
  for (;;) {
    // Seqlock read: an even sequence before and the same after means no
    // apply() overlapped the copy. The acquire fence orders the live-word
    // loads before the second sequence load.
    const uint64_t before = seq_.load(std::memory_order_acquire);
    if (before & 1) continue;
    s.epoch = epoch_.load(std::memory_order_relaxed);
    s.live.reset();
    for (uint16_t w = 0; w < kMaxNodes / 64; ++w) {
      const uint64_t bits = live_[w].load(std::memory_order_relaxed);
      for (uint16_t b = 0; b < 64; ++b) {
        if ((bits >> b) & 1) s.live.set(w * 64 + b);
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) == before) return s;
  }
}

bool MembershipView::apply(uint64_t epoch, const NodeSet& live) {
  if (epoch <= epoch_.load(std::memory_order_relaxed)) return false;
  // Odd sequence first; the release fence keeps the live-word stores after it.
  seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (uint16_t w = 0; w < kMaxNodes / 64; ++w)
    live_[w].store(node_word(live, w), std::memory_order_relaxed);
  // Release: a reader that acquires the new epoch (or the even sequence)
  // sees every live word above.
  epoch_.store(epoch, std::memory_order_release);
  seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  return true;
}

std::string node_list(const std::vector<uint16_t>& nodes) {
  std::string s;
  for (uint16_t n : nodes) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s.empty() ? "none" : s;
}

}  // namespace drtmx::r2
