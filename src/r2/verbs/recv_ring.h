// RecvRing: accounting (and memory) of one UD QP's pre-posted receive
// buffers, without a device.
//
// Each buffer holds the 40-byte GRH, the message header and up to `mtu`
// payload bytes. A buffer is in exactly one state:
//   to-post  — free, waiting for the next post_receives (initially all)
//   posted   — owned by the NIC
//   held     — its message was handed to the user by poll_messages; it stays
//              valid until the next poll_messages, which releases it
//              (Endpoint contract) and re-posts it.
// A buffer whose message is not delivered (credit-only, malformed, error
// completion) goes straight back to to-post.
//
// Single-threaded: owned by the endpoint's worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drtmx::r2::verbs {

class RecvRing {
 public:
  RecvRing(uint32_t count, uint32_t buf_bytes);

  uint32_t count() const { return count_; }
  uint32_t buf_bytes() const { return buf_bytes_; }
  uint8_t* buffer(uint32_t idx) { return mem_.data() + size_t{idx} * buf_bytes_; }
  uint8_t* memory() { return mem_.data(); }
  size_t memory_bytes() const { return mem_.size(); }

  uint32_t posted() const { return posted_; }
  uint32_t held() const { return static_cast<uint32_t>(held_.size()); }

  // Buffers waiting to be posted; the caller posts some prefix and reports
  // how many with on_posted(n) (they are removed from the front).
  const std::vector<uint32_t>& to_post() const { return to_post_; }
  void on_posted(uint32_t n);

  // A receive completed into buffer `idx`. deliver: handed to the user
  // (held, with its sender's peer index for the credit return); otherwise
  // it is re-posted at once.
  void on_received(uint32_t idx, bool deliver, uint32_t peer);

  struct Held {
    uint32_t idx;
    uint32_t peer;
  };
  // Releases every held buffer to to-post and lists them in `*released`
  // (cleared first; the caller reuses it so nothing allocates).
  void release_held(std::vector<Held>* released);

 private:
  uint32_t count_;
  uint32_t buf_bytes_;
  std::vector<uint8_t> mem_;
  uint32_t posted_ = 0;
  std::vector<uint32_t> to_post_;
  std::vector<Held> held_;
};

}  // namespace drtmx::r2::verbs
