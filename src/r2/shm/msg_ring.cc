#include "r2/shm/msg_ring.h"

#include <cstring>

namespace drtmx::r2::shm {

bool RingWriter::reserve(uint64_t bytes) {
  if (tail_ + bytes - head_cache_ <= cap_) return true;
  head_cache_ = ctl_->head.load(std::memory_order_acquire);
  return tail_ + bytes - head_cache_ <= cap_;
}

bool RingWriter::append(const void* msg, uint32_t len, uint64_t visible_at_ns) {
  const uint64_t need = record_bytes(len);
  const uint64_t idx = tail_ & (cap_ - 1);
  const uint64_t to_end = cap_ - idx;
  if (need > to_end) {
    // Skip to the start with a wrap record; needs room for both.
    if (!reserve(to_end + need)) return false;
    auto* w = reinterpret_cast<RecordHeader*>(data_ + idx);
    w->len = 0;
    w->kind = kWrap;
    w->visible_at_ns = 0;
    tail_ += to_end;
  } else if (!reserve(need)) {
    return false;
  }
  uint8_t* at = data_ + (tail_ & (cap_ - 1));
  auto* h = reinterpret_cast<RecordHeader*>(at);
  h->len = len;
  h->kind = kMessage;
  h->visible_at_ns = visible_at_ns;
  std::memcpy(at + sizeof(RecordHeader), msg, len);
  tail_ += need;
  return true;
}

bool RingWriter::publish() {
  if (tail_ == published_) return false;
  ctl_->tail.store(tail_, std::memory_order_release);
  published_ = tail_;
  return true;
}

const uint8_t* RingReader::next(uint32_t* len, uint64_t now_ns) {
  for (;;) {
    if (read_ == tail_cache_) {
      tail_cache_ = ctl_->tail.load(std::memory_order_acquire);
      if (read_ == tail_cache_) return nullptr;
    }
    const uint64_t idx = read_ & (cap_ - 1);
    const auto* h = reinterpret_cast<const RecordHeader*>(data_ + idx);
    if (corrupted_) return nullptr;
    if (h->kind == kWrap) {
      read_ += cap_ - idx;
      continue;
    }
    if (h->kind != kMessage || record_bytes(h->len) > tail_cache_ - read_ ||
        record_bytes(h->len) > cap_ - idx) {
      corrupted_ = true;  // a misbehaving sender; never read past the tail
      return nullptr;
    }
    if (now_ns != 0 && h->visible_at_ns > now_ns) return nullptr;
    *len = h->len;
    read_ += record_bytes(h->len);
    return data_ + idx + sizeof(RecordHeader);
  }
}

void RingReader::release() {
  if (released_ == read_) return;
  ctl_->head.store(read_, std::memory_order_release);
  released_ = read_;
}

}  // namespace drtmx::r2::shm
