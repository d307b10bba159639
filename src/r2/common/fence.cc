#include "r2/common/fence.h"

namespace drtmx::r2 {

void FenceWord::init(uint16_t nodes) {
  for (auto& w : live) w.store(0, std::memory_order_relaxed);
  for (uint16_t n = 0; n < nodes && n < kMaxNodes; ++n) {
    live[n / 64].store(live[n / 64].load(std::memory_order_relaxed) | (uint64_t{1} << (n % 64)),
                       std::memory_order_relaxed);
  }
  epoch.store(0, std::memory_order_release);
}

void FenceWord::publish(uint64_t e, const NodeSet& set) {
  if (e <= epoch.load(std::memory_order_relaxed)) return;
  for (uint16_t w = 0; w < kMaxNodes / 64; ++w)
    live[w].store(node_word(set, w), std::memory_order_relaxed);
  // Release: whoever acquires the new epoch sees the live words above.
  epoch.store(e, std::memory_order_release);
}

FenceCheck::FenceCheck(uint16_t self, const FenceWord* own, std::vector<const FenceWord*> peers)
    : self_(self), own_(own), peers_(std::move(peers)), cache_(peers_.size()) {}

void FenceCheck::refresh(uint16_t peer, uint64_t own_epoch, uint64_t peer_epoch) {
  Cached& c = cache_[peer];
  c.own_epoch = own_epoch;
  c.peer_epoch = peer_epoch;
  const FenceWord* p = peers_[peer];
  c.allowed = own_->member(self_) && own_->member(peer) && (p == nullptr || p->member(self_));
}

}  // namespace drtmx::r2
