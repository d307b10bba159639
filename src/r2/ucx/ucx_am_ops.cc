// UcxEndpoint: one-sided ops as the backend's own active messages (tcp),
// both sides — the origin's request and the target's execution and reply.
// See ucx_endpoint.h and README.md, "One-sided ops".
#include <cstring>

#include "r2/ucx/ucx_endpoint.h"

namespace drtmx::r2::ucx {

// --- one-sided ops over active messages ---------------------------------------

void UcxEndpoint::send_queued(SendBuf* b, NodeId node, ThreadId thread, unsigned id) {
  ucp_ep_h e = eps_.empty() ? nullptr : ep(node, thread);
  if (e == nullptr) {
    give_send_buf(b);
    return;
  }
  // Sent (copied), or the peer is gone: its answer never comes.
  (void)send_eager(e, id, b);
}

ucs_status_ptr_t UcxEndpoint::send_eager(ucp_ep_h e, unsigned id, SendBuf* b) {
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = &UcxEndpoint::on_sent;
  p.user_data = b;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t r = ucp_am_send_nbx(e, id, nullptr, 0, b->bytes.data(), b->bytes.size(), &p);
  if (UCS_PTR_IS_PTR(r)) {
    ++sends_in_flight_;  // on_sent returns the buffer
  } else {
    give_send_buf(b);  // copied at once, or failed
  }
  return r;
}

void UcxEndpoint::issue_am(Channel& ch, const WorkRequest& wr, Slot* s) {
  s->am = true;
  s->am_seq = ch.am_next++;
  s->am_local = wr.local;
  s->am_len = wr.verb == Verb::kRead ? wr.len : (wr.verb == Verb::kWrite ? 0 : 8);
  RmaRequest rq;
  rq.offset = wr.remote.offset;
  rq.compare = wr.compare;
  rq.operand = wr.operand;
  rq.len = wr.verb == Verb::kCas || wr.verb == Verb::kFaa ? 8 : wr.len;
  rq.token = static_cast<uint32_t>(s - ch.slots.data());
  rq.region = wr.remote.region;
  rq.verb = static_cast<uint8_t>(wr.verb);
  SendBuf* b = take_send_buf();
  const size_t data = wr.verb == Verb::kWrite ? wr.len : 0;
  b->bytes.resize(sizeof(AmHeader) + sizeof rq + data);
  const AmHeader h{self_, thread_, s->am_seq};
  std::memcpy(b->bytes.data(), &h, sizeof h);
  std::memcpy(b->bytes.data() + sizeof h, &rq, sizeof rq);
  if (data != 0) std::memcpy(b->bytes.data() + sizeof h + sizeof rq, wr.local, data);
  ucs_status_ptr_t r = send_eager(ep(ch.peer, thread_), kAmRma, b);
  if (UCS_PTR_IS_ERR(r)) finish_now(s, map_error(ch));
  // Otherwise done when the target's reply arrives (on_rma_reply).
}

ucs_status_t UcxEndpoint::on_rma_request(void* arg, const void*, size_t, void* data, size_t length,
                                         const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  AmHeader h;
  RmaRequest rq;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || length < sizeof h + sizeof rq) {
    return UCS_OK;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  std::memcpy(&h, p, sizeof h);
  std::memcpy(&rq, p + sizeof h, sizeof rq);
  const size_t extra = length - sizeof h - sizeof rq;
  if (h.src_node >= self->nodes_ || h.src_thread >= self->threads_ || rq.verb > 3 ||
      (static_cast<Verb>(rq.verb) == Verb::kWrite ? extra != rq.len : extra != 0)) {
    return UCS_OK;  // malformed: no answer (the origin's op fails with its peer)
  }
  const size_t key = size_t{h.src_node} * self->threads_ + h.src_thread;
  uint32_t& expect = self->rma_expect_[key];
  if (h.seq != expect) {  // ahead of an earlier op of its channel: wait for it
    PendingRma e{h.src_node, h.src_thread, h.seq, rq, {}};
    e.bytes.assign(p + sizeof h + sizeof rq, p + length);
    self->rma_early_.emplace((uint64_t{key} << 32) | h.seq, std::move(e));
    return UCS_OK;
  }
  self->execute_am(h.src_node, h.src_thread, h.seq, rq, p + sizeof h + sizeof rq);
  ++expect;
  while (!self->rma_early_.empty()) {
    auto it = self->rma_early_.find((uint64_t{key} << 32) | expect);
    if (it == self->rma_early_.end()) break;
    const PendingRma& e = it->second;
    self->execute_am(e.node, e.thread, e.seq, e.rq, e.bytes.data());
    self->rma_early_.erase(it);
    ++expect;
  }
  return UCS_OK;
}

void UcxEndpoint::execute_am(NodeId node, ThreadId thread, uint32_t seq, const RmaRequest& rq,
                             const uint8_t* bytes) {
  const Verb verb = static_cast<Verb>(rq.verb);
  RmaReply rep;
  rep.token = rq.token;
  OpStatus st = OpStatus::kOk;
  uint8_t* at = nullptr;
  // The target's fence: a node this one removed (or this node, removed)
  // changes nothing here any more.
  if (cut_off_ || peer_closed_[node] || !fence_.member(self_) || !fence_.member(node)) {
    st = OpStatus::kFenced;
  } else {
    const RegionEntry* r = table_->find(self_, rq.region);
    if (r == nullptr) {
      st = OpStatus::kBadRegion;
    } else if (rq.len == 0 || rq.offset > r->size || rq.len > r->size - rq.offset) {
      st = OpStatus::kOutOfBounds;
    } else if (verb != Verb::kRead && verb != Verb::kWrite && (r->base + rq.offset) % 8 != 0) {
      st = OpStatus::kMisaligned;
    } else {
      at = reinterpret_cast<uint8_t*>(r->base + rq.offset);
    }
  }
  const size_t out = st != OpStatus::kOk    ? 0
                     : verb == Verb::kRead  ? rq.len
                     : verb == Verb::kWrite ? 0
                                            : 8;
  SendBuf* b = take_send_buf();
  b->bytes.resize(sizeof(AmHeader) + sizeof rep + out);
  uint8_t* dst = b->bytes.data() + sizeof(AmHeader) + sizeof rep;
  if (at != nullptr) {
    switch (verb) {
      case Verb::kRead:
        std::memcpy(dst, at, rq.len);
        break;
      case Verb::kWrite:
        std::memcpy(at, bytes, rq.len);
        break;
      case Verb::kCas: {
        uint64_t expected = rq.compare;
        __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(at), &expected, rq.operand, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        std::memcpy(dst, &expected, 8);
        break;
      }
      case Verb::kFaa: {
        const uint64_t old =
            __atomic_fetch_add(reinterpret_cast<uint64_t*>(at), rq.operand, __ATOMIC_SEQ_CST);
        std::memcpy(dst, &old, 8);
        break;
      }
    }
    ++stats_.am_ops_served;
  }
  rep.status = static_cast<uint8_t>(st);
  const AmHeader h{self_, thread_, seq};
  std::memcpy(b->bytes.data(), &h, sizeof h);
  std::memcpy(b->bytes.data() + sizeof h, &rep, sizeof rep);
  out_am_.push_back({b, node, thread, kAmRmaReply});
}

ucs_status_t UcxEndpoint::on_rma_reply(void* arg, const void*, size_t, void* data, size_t length,
                                       const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  AmHeader h;
  RmaReply rep;
  if (length < sizeof h + sizeof rep) return UCS_OK;
  const auto* p = static_cast<const uint8_t*>(data);
  std::memcpy(&h, p, sizeof h);
  std::memcpy(&rep, p + sizeof h, sizeof rep);
  if (h.src_node >= self->nodes_) return UCS_OK;
  Channel& ch = self->channels_[h.src_node];
  if (rep.token >= ch.slots.size()) return UCS_OK;
  Slot& s = ch.slots[rep.token];
  if (!s.am || s.done || s.am_seq != h.seq) return UCS_OK;  // failed or fenced meanwhile
  const auto st = static_cast<OpStatus>(rep.status);
  if (st == OpStatus::kOk) {
    if (length != sizeof h + sizeof rep + s.am_len) {
      s.status = OpStatus::kTransportError;
      s.done = true;
      return UCS_OK;
    }
    if (s.am_len != 0) std::memcpy(s.am_local, p + sizeof h + sizeof rep, s.am_len);
  }
  s.status = st;
  s.done = true;
  return UCS_OK;
}

}  // namespace drtmx::r2::ucx
