// Worker's incoming RPC path: parsing, reassembly, handler dispatch, reply
// routing to the waiting coroutine, passive acknowledgements.
#include <algorithm>
#include <cstring>

#include "r2/sched/worker.h"

namespace drtmx::r2 {

bool Worker::poll_messages() {
  const int n = ep_->poll_messages(msgs_.data(), static_cast<int>(msgs_.size()));
  for (int i = 0; i < n; ++i) {
    ++stats_.messages_in;
    on_message(msgs_[i]);
  }
  return n > 0;
}

void Worker::on_message(const Message& m) {
  RpcHeader h;
  const uint8_t* p = nullptr;
  uint32_t plen = 0;
  if (m.src_node >= nodes_ || m.src_thread >= threads_ ||
      !parse_rpc(m.data, m.len, cfg_.max_rpc_bytes, &h, &p, &plen)) {
    ++stats_.malformed;
    return;
  }
  const uint32_t src = dest_index(m.src_node, m.src_thread);
  if (h.acks != 0) on_acks(src, h.acks);
  if (h.type == static_cast<uint8_t>(RpcType::kAck)) return;
  if (h.offset == 0 && plen == h.total) {
    dispatch(m.src_node, m.src_thread, h, p, plen);
    return;
  }
  Partial& pa = partial_[src];
  if (h.offset == 0) {
    if (pa.active) ++stats_.malformed;  // the previous one never completed
    pa.active = true;
    pa.first = h;
    pa.data.resize(h.total);
    pa.received = 0;
  } else if (!pa.active || pa.first.seq != h.seq || pa.first.type != h.type ||
             pa.first.total != h.total || pa.first.rpc_id != h.rpc_id || h.offset != pa.received) {
    ++stats_.malformed;
    pa.active = false;
    return;
  }
  std::memcpy(pa.data.data() + h.offset, p, plen);
  pa.received += plen;
  if (pa.received == pa.first.total) {
    pa.active = false;
    dispatch(m.src_node, m.src_thread, pa.first, pa.data.data(), pa.first.total);
  }
}

void Worker::dispatch(NodeId from_node, ThreadId from_thread, const RpcHeader& h,
                      const uint8_t* payload, uint32_t len) {
  if (h.type == static_cast<uint8_t>(RpcType::kReply)) {
    on_reply(from_node, from_thread, h, payload, len);
    return;
  }
  const bool one_way = h.type == static_cast<uint8_t>(RpcType::kOneWay);
  RpcRequest req;
  req.worker_ = this;
  req.token_ = {from_node, from_thread, h.cor, h.rpc_id, h.seq};
  req.payload_ = {payload, len};
  req.wants_reply_ = !one_way;
  if (h.rpc_id < handlers_.size() && handlers_[h.rpc_id]) {
    ++stats_.requests_served;
    handlers_[h.rpc_id](req);
    if (req.wants_reply_ && !req.answered_) send_reply(req.token_, 0, nullptr, 0);
  } else if (!one_way) {
    std::string why = std::string(1, static_cast<char>(Code::kNotFound)) + "no handler for RPC " +
                      std::to_string(h.rpc_id) + " on node " + std::to_string(self_) + " thread " +
                      std::to_string(thread());
    send_reply(req.token_, kRpcFlagError, why.data(), static_cast<uint32_t>(why.size()));
  } else {
    ++stats_.malformed;  // a one-way message nobody handles
  }
  if (one_way) {
    ++acks_owed_[dest_index(from_node, from_thread)];
    ++acks_owed_total_;
  }
}

void Worker::on_reply(NodeId from_node, ThreadId from_thread, const RpcHeader& h,
                      const uint8_t* payload, uint32_t len) {
  if (h.cor >= cos_.size()) {
    ++stats_.stale_replies;
    return;
  }
  CoState& c = *cos_[h.cor];
  if (c.state != State::kWaiting || c.wait != Wait::kRpc || c.rpc_seq != h.seq) {
    ++stats_.stale_replies;
    return;
  }
  size_t i = 0;
  while (i < c.targets.size() &&
         (c.got[i] || c.targets[i].node != from_node || c.targets[i].thread != from_thread)) {
    ++i;
  }
  if (i == c.targets.size()) {
    ++stats_.stale_replies;
    return;
  }
  if (take_reply(c, i, h.rpc_id, h.flags, payload, len)) {
    --rpc_waiters_;
    make_runnable(c);
  }
}

bool Worker::take_reply(CoState& c, size_t i, uint16_t rpc_id, uint8_t flags,
                        const uint8_t* payload, uint32_t len) {
  c.got[i] = 1;
  if (flags & kRpcFlagError) {
    if (c.rpc_status.is_ok()) {
      Code code = Code::kInternal;
      std::string text;
      if (len > 0) {
        code = static_cast<Code>(payload[0]);
        if (payload[0] > static_cast<uint8_t>(Code::kIoError)) code = Code::kInternal;
        text.assign(reinterpret_cast<const char*>(payload) + 1, len - 1);
      }
      c.rpc_status = Status(
          code, "RPC " + std::to_string(rpc_id) + " to node " + std::to_string(c.targets[i].node) +
                    " thread " + std::to_string(c.targets[i].thread) + " failed there: " + text);
    }
    c.replies[i].clear();
  } else {
    c.replies[i].assign(payload, payload + len);
  }
  return --c.pending == 0;
}

void Worker::call_local(CoState& c, size_t i, uint16_t rpc_id, std::span<const uint8_t> body) {
  RpcRequest req;
  req.worker_ = this;
  req.local_caller_ = &c;
  req.local_index_ = static_cast<uint32_t>(i);
  req.token_ = {self_, thread(), c.co.id_, rpc_id, c.rpc_seq};
  req.payload_ = body;
  req.wants_reply_ = true;
  ++stats_.inline_calls;
  if (rpc_id < handlers_.size() && handlers_[rpc_id]) {
    ++stats_.requests_served;
    handlers_[rpc_id](req);
    if (!req.answered_) reply_local(req, 0, nullptr, 0);
    return;
  }
  const std::string why = std::string(1, static_cast<char>(Code::kNotFound)) +
                          "no handler for RPC " + std::to_string(rpc_id) + " on node " +
                          std::to_string(self_) + " thread " + std::to_string(thread());
  take_reply(c, i, rpc_id, kRpcFlagError, reinterpret_cast<const uint8_t*>(why.data()),
             static_cast<uint32_t>(why.size()));
}

void Worker::reply_local(const RpcRequest& req, uint8_t flags, const void* data, uint32_t len) {
  CoState& c = *static_cast<CoState*>(req.local_caller_);
  if (len > cfg_.max_rpc_bytes) {
    const std::string why = std::string(1, static_cast<char>(Code::kOutOfRange)) + "reply of " +
                            std::to_string(len) + " bytes exceeds the limit of " +
                            std::to_string(cfg_.max_rpc_bytes) + " bytes (max_rpc_bytes)";
    take_reply(c, req.local_index_, req.token_.rpc_id, kRpcFlagError,
               reinterpret_cast<const uint8_t*>(why.data()), static_cast<uint32_t>(why.size()));
    return;
  }
  take_reply(c, req.local_index_, req.token_.rpc_id, flags, static_cast<const uint8_t*>(data), len);
}

void Worker::on_acks(uint32_t dest, uint16_t acks) {
  const uint32_t n = std::min<uint32_t>(acks, passive_unacked_[dest]);
  passive_unacked_[dest] -= n;
  passive_unacked_total_ -= n;
  if (waiting_ == 0) return;
  for (auto& cp : cos_) {
    CoState& c = *cp;
    if (c.state != State::kWaiting) continue;
    if ((c.wait == Wait::kPassiveWindow && c.wait_dest == dest &&
         passive_unacked_[dest] < cfg_.passive_window) ||
        (c.wait == Wait::kAllAcks && passive_unacked_total_ == 0)) {
      make_runnable(c);
    }
  }
}

}  // namespace drtmx::r2
