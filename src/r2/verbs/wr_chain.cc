#include "r2/verbs/wr_chain.h"

#include <cassert>
#include <cstring>

namespace drtmx::r2::verbs {

void fill_rc_wr(const WorkRequest& wr, const RcWrParams& p, ibv_send_wr* out, ibv_sge* sge) {
  std::memset(out, 0, sizeof(*out));
  const bool atomic = wr.verb == Verb::kCas || wr.verb == Verb::kFaa;
  sge->addr = reinterpret_cast<uintptr_t>(wr.local);
  sge->length = atomic ? 8 : wr.len;
  sge->lkey = p.lkey;
  out->wr_id = p.ibv_wr_id;
  out->sg_list = sge;
  out->num_sge = 1;
  out->send_flags = p.signaled ? IBV_SEND_SIGNALED : 0;
  switch (wr.verb) {
    case Verb::kRead:
      out->opcode = IBV_WR_RDMA_READ;
      break;
    case Verb::kWrite:
      out->opcode = IBV_WR_RDMA_WRITE;
      if (wr.len < kInlineBelow && wr.len <= p.max_inline) out->send_flags |= IBV_SEND_INLINE;
      break;
    case Verb::kCas:
      out->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
      break;
    case Verb::kFaa:
      out->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
      break;
  }
  if (atomic) {
    out->wr.atomic.remote_addr = p.remote_addr;
    out->wr.atomic.rkey = p.rkey;
    out->wr.atomic.compare_add = wr.verb == Verb::kCas ? wr.compare : wr.operand;
    out->wr.atomic.swap = wr.verb == Verb::kCas ? wr.operand : 0;
  } else {
    out->wr.rdma.remote_addr = p.remote_addr;
    out->wr.rdma.rkey = p.rkey;
  }
}

void fill_ud_wr(const UdWrParams& p, ibv_send_wr* out, ibv_sge* sge) {
  std::memset(out, 0, sizeof(*out));
  sge->addr = p.buf;
  sge->length = p.len;
  sge->lkey = p.lkey;
  out->wr_id = p.ibv_wr_id;
  out->sg_list = sge;
  out->num_sge = 1;
  out->opcode = IBV_WR_SEND;
  out->send_flags = p.signaled ? IBV_SEND_SIGNALED : 0;
  if (p.len < kInlineBelow && p.len <= p.max_inline) out->send_flags |= IBV_SEND_INLINE;
  out->wr.ud.ah = p.ah;
  out->wr.ud.remote_qpn = p.remote_qpn;
  out->wr.ud.remote_qkey = p.remote_qkey;
}

ibv_send_wr* WrChain::next_wr() {
  assert(!full());
  ibv_send_wr* w = &wrs_[size_];
  std::memset(w, 0, sizeof(*w));
  return w;
}

ibv_send_wr* WrChain::link() {
  if (size_ == 0) return nullptr;
  for (uint32_t i = 0; i + 1 < size_; ++i) wrs_[i].next = &wrs_[i + 1];
  wrs_[size_ - 1].next = nullptr;
  return &wrs_[0];
}

}  // namespace drtmx::r2::verbs
