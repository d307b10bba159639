// Worker's outgoing RPC path: fragmentation, piggybacked acknowledgements,
// the backlog for full rings, replies.
#include <algorithm>
#include <cstring>

#include "r2/sched/worker.h"

namespace drtmx::r2 {

bool Worker::send_logical(NodeId n, ThreadId t, RpcHeader h, const uint8_t* payload, uint32_t len) {
  if (len > cfg_.max_rpc_bytes) return false;
  const uint32_t dest = dest_index(n, t);
  const uint32_t chunk_max = ep_->mtu() - static_cast<uint32_t>(sizeof(RpcHeader));
  h.total = len;
  uint32_t off = 0;
  do {
    const uint32_t chunk = std::min(len - off, chunk_max);
    h.offset = off;
    // Piggyback what we owe this destination.
    const uint32_t acks = std::min<uint32_t>(acks_owed_[dest], 65535);
    h.acks = static_cast<uint16_t>(acks);
    acks_owed_[dest] -= acks;
    acks_owed_total_ -= acks;
    std::memcpy(scratch_.data(), &h, sizeof(RpcHeader));
    if (chunk > 0) std::memcpy(scratch_.data() + sizeof(RpcHeader), payload + off, chunk);
    send_fragment(dest, scratch_.data(), static_cast<uint32_t>(sizeof(RpcHeader)) + chunk);
    off += chunk;
  } while (off < len);
  return true;
}

void Worker::send_fragment(uint32_t dest, const uint8_t* msg, uint32_t len) {
  auto& q = backlog_[dest];
  if (q.empty()) {
    const SendResult r = ep_->send(static_cast<NodeId>(dest / threads_),
                                   static_cast<ThreadId>(dest % threads_), msg, len);
    if (r == SendResult::kOk) {
      ++stats_.messages_out;
      return;
    }
    // A non-member (or this node, removed): dropped like a lost message;
    // the caller's RPC times out.
    if (r == SendResult::kFenced) return;
    if (r != SendResult::kNoSpace) {
      // Targets were checked and fragments fit the MTU: a broken invariant.
      if (failure_.is_ok()) failure_ = internal_error("fabric refused an RPC fragment");
      return;
    }
  }
  // Keep FIFO order behind earlier fragments waiting for ring space.
  q.emplace_back(msg, msg + len);
  ++backlog_count_;
  stats_.backlog_peak = std::max(stats_.backlog_peak, backlog_count_);
}

bool Worker::drain_backlog() {
  bool sent = false;
  for (uint32_t dest = 0; dest < backlog_.size() && backlog_count_ > 0; ++dest) {
    auto& q = backlog_[dest];
    while (!q.empty()) {
      const auto& m = q.front();
      const SendResult r =
          ep_->send(static_cast<NodeId>(dest / threads_), static_cast<ThreadId>(dest % threads_),
                    m.data(), static_cast<uint32_t>(m.size()));
      if (r != SendResult::kOk && r != SendResult::kFenced) break;
      q.pop_front();
      --backlog_count_;
      if (r == SendResult::kOk) ++stats_.messages_out;
      sent = true;
    }
  }
  return sent;
}

void Worker::flush_acks(bool all_owed) {
  for (uint32_t dest = 0; dest < acks_owed_.size() && acks_owed_total_ > 0; ++dest) {
    const uint32_t owed = acks_owed_[dest];
    if (owed == 0 || (!all_owed && owed < cfg_.ack_batch)) continue;
    RpcHeader h;
    h.type = static_cast<uint8_t>(RpcType::kAck);
    send_logical(static_cast<NodeId>(dest / threads_), static_cast<ThreadId>(dest % threads_), h,
                 nullptr, 0);
    ++stats_.acks_sent;
  }
}

void Worker::send_reply(const ReplyToken& tok, uint8_t flags, const void* data, uint32_t len) {
  RpcHeader h;
  h.type = static_cast<uint8_t>(RpcType::kReply);
  h.flags = flags;
  h.rpc_id = tok.rpc_id;
  h.cor = tok.cor;
  h.seq = tok.seq;
  if (len > cfg_.max_rpc_bytes) {
    std::string why = std::string(1, static_cast<char>(Code::kOutOfRange)) + "reply of " +
                      std::to_string(len) + " bytes exceeds the limit of " +
                      std::to_string(cfg_.max_rpc_bytes) + " bytes (max_rpc_bytes)";
    h.flags = kRpcFlagError;
    send_logical(tok.node, tok.thread, h, reinterpret_cast<const uint8_t*>(why.data()),
                 static_cast<uint32_t>(why.size()));
    return;
  }
  send_logical(tok.node, tok.thread, h, static_cast<const uint8_t*>(data), len);
}

void Worker::reply(const ReplyToken& token, const void* data, uint32_t len) {
  send_reply(token, 0, data, len);
}

void Worker::reply_error(const ReplyToken& token, const std::string& why) {
  std::string msg = std::string(1, static_cast<char>(Code::kAborted)) + why;
  send_reply(token, kRpcFlagError, msg.data(), static_cast<uint32_t>(msg.size()));
}

void RpcRequest::reply(const void* data, uint32_t len) {
  if (answered_ || !wants_reply_) return;
  answered_ = true;
  if (local_caller_ != nullptr) {
    worker_->reply_local(*this, 0, data, len);
    return;
  }
  worker_->reply(token_, data, len);
}

void RpcRequest::reply_error(const std::string& why) {
  if (answered_ || !wants_reply_) return;
  answered_ = true;
  if (local_caller_ != nullptr) {
    const std::string msg = std::string(1, static_cast<char>(Code::kAborted)) + why;
    worker_->reply_local(*this, kRpcFlagError, msg.data(), static_cast<uint32_t>(msg.size()));
    return;
  }
  worker_->reply_error(token_, why);
}

ReplyToken RpcRequest::defer() {
  answered_ = true;
  return token_;
}

}  // namespace drtmx::r2
