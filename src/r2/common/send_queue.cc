#include "r2/common/send_queue.h"

#include <cassert>

namespace drtmx::r2 {

SendQueue::SendQueue(uint32_t depth) : depth_(depth < 2 ? 2 : depth), covers_(depth_) {}

bool SendQueue::on_post(bool user_signaled, bool* forced) {
  assert(has_room());
  ++used_;
  *forced = false;
  bool signal = user_signaled;
  if (!signal && unsignaled_run_ + 1 >= depth_ / 2) {
    signal = true;
    *forced = true;
  }
  if (!signal) {
    ++unsignaled_run_;
    return false;
  }
  covers_[(head_ + count_) % depth_] = unsignaled_run_ + 1;
  ++count_;
  unsignaled_run_ = 0;
  return true;
}

void SendQueue::on_signaled_completion() {
  assert(count_ > 0);
  uint32_t n = covers_[head_];
  head_ = (head_ + 1) % depth_;
  --count_;
  assert(used_ >= n);
  used_ -= n;
}

}  // namespace drtmx::r2
