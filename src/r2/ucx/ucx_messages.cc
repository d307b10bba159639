// UcxEndpoint: messages as active messages (send, receive, order), and the
// send buffers every active message of the backend uses. See ucx_endpoint.h.
#include <cstring>

#include "r2/ucx/ucx_endpoint.h"

namespace drtmx::r2::ucx {

// --- messaging ---------------------------------------------------------------

UcxEndpoint::SendBuf* UcxEndpoint::take_send_buf() {
  if (free_sends_.empty()) {
    all_sends_.push_back(std::make_unique<SendBuf>());
    all_sends_.back()->owner = this;
    return all_sends_.back().get();
  }
  SendBuf* b = free_sends_.back();
  free_sends_.pop_back();
  return b;
}

void UcxEndpoint::give_send_buf(SendBuf* b) {
  free_sends_.push_back(b);
}

void UcxEndpoint::on_sent(void* request, ucs_status_t, void* user_data) {
  auto* b = static_cast<SendBuf*>(user_data);
  --b->owner->sends_in_flight_;
  b->owner->give_send_buf(b);
  ucp_request_free(request);
}

SendResult UcxEndpoint::send(NodeId node, ThreadId thread, const void* msg, uint32_t len) {
  if (node >= nodes_ || thread >= threads_) return SendResult::kBadPeer;
  if (len > mtu_) return SendResult::kTooLarge;
  if (peer_closed_[node] || !fence_.allowed(node)) return SendResult::kFenced;
  if (sends_in_flight_ >= kMaxSendsInFlight) {
    progress();
    if (sends_in_flight_ >= kMaxSendsInFlight) return SendResult::kNoSpace;
  }
  const size_t key = size_t{node} * threads_ + thread;
  SendBuf* b = take_send_buf();
  b->bytes.resize(sizeof(AmHeader) + len);
  AmHeader h{self_, thread_, send_seq_[key]++};
  std::memcpy(b->bytes.data(), &h, sizeof h);
  std::memcpy(b->bytes.data() + sizeof h, msg, len);
  // Sent (copied) at once, or queued, or failed: a lost message.
  (void)send_eager(ep(node, thread), kAmMessage, b);
  return SendResult::kOk;
}

void UcxEndpoint::flush_sends() {
  // Sends leave at send(); progress pushes out what UCX queued.
  ucp_worker_progress(worker_);
}

int UcxEndpoint::poll_messages(Message* out, int max) {
  for (Rx& r : delivered_) spare_.push_back(std::move(r.data));
  delivered_.clear();
  apply_epoch();
  progress();
  int n = 0;
  while (!inbox_.empty() && n < max) {
    Rx& front = inbox_.front();
    // Received before a membership change that removed its sender (or this
    // node): dropped unread, as shm stops reading a removed node's rings.
    if (cut_off_ || peer_closed_[front.node] || !fence_.member(self_) ||
        !fence_.member(front.node)) {
      ++stats_.messages_dropped;
      spare_.push_back(std::move(front.data));
      inbox_.pop_front();
      continue;
    }
    delivered_.push_back(std::move(front));
    inbox_.pop_front();
    const Rx& r = delivered_.back();
    out[n++] = {r.node, r.thread, static_cast<uint32_t>(r.data.size()), r.data.data()};
  }
  return n;
}

ucs_status_t UcxEndpoint::on_message(void* arg, const void*, size_t, void* data, size_t length,
                                     const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  AmHeader h;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || length < sizeof h) {
    ++self->stats_.messages_dropped;
    return UCS_OK;
  }
  std::memcpy(&h, data, sizeof h);
  if (h.src_node >= self->nodes_ || h.src_thread >= self->threads_ ||
      !self->fence_.member(self->self_) || !self->fence_.member(h.src_node) ||
      self->peer_closed_[h.src_node]) {
    ++self->stats_.messages_dropped;
    return UCS_OK;
  }
  Rx rx;
  rx.node = h.src_node;
  rx.thread = h.src_thread;
  if (!self->spare_.empty()) {
    rx.data = std::move(self->spare_.back());
    self->spare_.pop_back();
  }
  const auto* p = static_cast<const uint8_t*>(data) + sizeof h;
  rx.data.assign(p, p + (length - sizeof h));
  const size_t key = size_t{h.src_node} * self->threads_ + h.src_thread;
  uint32_t& expect = self->expect_seq_[key];
  if (h.seq != expect) {
    ++self->stats_.messages_reordered;
    self->early_.emplace((uint64_t{key} << 32) | h.seq, std::move(rx));
    return UCS_OK;
  }
  self->inbox_.push_back(std::move(rx));
  ++expect;
  // Messages that arrived ahead of this one follow it now.
  while (!self->early_.empty()) {
    auto it = self->early_.find((uint64_t{key} << 32) | expect);
    if (it == self->early_.end()) break;
    self->inbox_.push_back(std::move(it->second));
    self->early_.erase(it);
    ++expect;
  }
  return UCS_OK;
}

}  // namespace drtmx::r2::ucx
