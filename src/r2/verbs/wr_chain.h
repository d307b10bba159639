// Building ibv_send_wr chains (doorbell batching), without a device.
//
// A WrChain is the fixed storage of one send queue's not-yet-posted work
// requests: post() appends, doorbell links the entries through `next` and
// hands the head to ONE ibv_post_send, then clears. Storage is allocated
// once (capacity = the send queue depth), so the sg_list pointers stay valid
// and nothing allocates on the hot path.
//
// fill_rc_wr/fill_ud_wr translate one request into ibv_send_wr + ibv_sge;
// keys, addresses and the signal decision are computed by the caller
// (rc_channel.h) so these stay pure.
//
// Single-threaded: a chain belongs to one channel of one worker thread.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

#include "r2/fabric.h"

namespace drtmx::r2::verbs {

// WRITEs strictly shorter than this are sent inline (IBV_SEND_INLINE), when
// the QP's max_inline_data allows it.
inline constexpr uint32_t kInlineBelow = 64;

struct RcWrParams {
  uint64_t remote_addr = 0;  // region base VA + offset
  uint32_t rkey = 0;         // the target region's rkey in the peer thread's PD
  uint32_t lkey = 0;         // the local buffer's lkey in this thread's PD
  bool signaled = false;     // user-signaled or forced
  uint64_t ibv_wr_id = 0;    // an encoded WrTag
  uint32_t max_inline = 0;   // the QP's max_inline_data
};

// Fills `out` (and its single `sge`) for a READ/WRITE/CAS/FAA. `out->next`
// is left null; WrChain::link sets it.
void fill_rc_wr(const WorkRequest& wr, const RcWrParams& p, ibv_send_wr* out, ibv_sge* sge);

struct UdWrParams {
  ibv_ah* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  uint64_t buf = 0;  // registered send buffer holding header + payload
  uint32_t len = 0;
  uint32_t lkey = 0;
  bool signaled = false;
  uint64_t ibv_wr_id = 0;
  uint32_t max_inline = 0;
};

void fill_ud_wr(const UdWrParams& p, ibv_send_wr* out, ibv_sge* sge);

class WrChain {
 public:
  explicit WrChain(uint32_t capacity) : wrs_(capacity), sges_(capacity) {}

  uint32_t capacity() const { return static_cast<uint32_t>(wrs_.size()); }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == wrs_.size(); }

  // Storage for the next entry (zeroed); requires !full().
  ibv_send_wr* next_wr();
  ibv_sge* next_sge() { return &sges_[size_]; }
  // Makes the entry returned by next_wr() part of the chain.
  void commit() { ++size_; }

  // Links entries 0..size-1 through `next` and returns the head (nullptr
  // when empty). The chain stays intact until clear().
  ibv_send_wr* link();
  const ibv_send_wr& at(uint32_t i) const { return wrs_[i]; }
  // Index of `wr` in the chain (used after a failed ibv_post_send).
  uint32_t index_of(const ibv_send_wr* wr) const { return static_cast<uint32_t>(wr - wrs_.data()); }
  void clear() { size_ = 0; }

 private:
  std::vector<ibv_send_wr> wrs_;
  std::vector<ibv_sge> sges_;
  uint32_t size_ = 0;
};

}  // namespace drtmx::r2::verbs
