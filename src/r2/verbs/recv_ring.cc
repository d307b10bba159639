#include "r2/verbs/recv_ring.h"

#include <cassert>

namespace drtmx::r2::verbs {

RecvRing::RecvRing(uint32_t count, uint32_t buf_bytes)
    : count_(count), buf_bytes_(buf_bytes), mem_(size_t{count} * buf_bytes) {
  to_post_.reserve(count);
  for (uint32_t i = 0; i < count; ++i) to_post_.push_back(i);
  held_.reserve(count);
}

void RecvRing::on_posted(uint32_t n) {
  assert(n <= to_post_.size());
  to_post_.erase(to_post_.begin(), to_post_.begin() + n);
  posted_ += n;
}

void RecvRing::on_received(uint32_t idx, bool deliver, uint32_t peer) {
  assert(posted_ > 0);
  --posted_;
  if (deliver) {
    held_.push_back({idx, peer});
  } else {
    to_post_.push_back(idx);
  }
}

void RecvRing::release_held(std::vector<Held>* released) {
  released->clear();
  for (const Held& h : held_) {
    to_post_.push_back(h.idx);
    released->push_back(h);
  }
  held_.clear();
}

}  // namespace drtmx::r2::verbs
