// RPC types seen by handlers and callers. See worker.h for the event loop
// that runs handlers and co.h for how a coroutine calls.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "r2/fabric.h"

namespace drtmx::r2 {

class Worker;

// Where a request goes: a worker thread of a node.
struct Target {
  NodeId node = 0;
  ThreadId thread = 0;
};

// Identifies a request to reply to later (a deferred reply).
struct ReplyToken {
  NodeId node = 0;
  ThreadId thread = 0;
  uint16_t cor = 0;
  uint16_t rpc_id = 0;
  uint32_t seq = 0;
};

// One incoming request or one-way message, valid during the handler call.
class RpcRequest {
 public:
  NodeId from_node() const { return token_.node; }
  ThreadId from_thread() const { return token_.thread; }
  std::span<const uint8_t> payload() const { return payload_; }
  // One-way messages (send_passive) take no reply.
  bool wants_reply() const { return wants_reply_; }

  // Sends the reply now (at most once). Larger than MTU is fragmented;
  // larger than max_rpc_bytes is replaced by an error reply.
  void reply(const void* data, uint32_t len);
  // Replies with an error: the caller's call() returns it as a Status.
  void reply_error(const std::string& why);
  // Keeps the caller waiting; reply later with Worker::reply(token).
  ReplyToken defer();

 private:
  friend class Worker;
  Worker* worker_ = nullptr;
  // Set when the caller is a coroutine of the same worker and the handler
  // runs inline inside its call() (Worker::call_local): an immediate reply
  // goes straight into the caller's buffer, no message.
  void* local_caller_ = nullptr;
  uint32_t local_index_ = 0;
  ReplyToken token_;
  std::span<const uint8_t> payload_;
  bool wants_reply_ = false;
  bool answered_ = false;
};

// Runs on the worker's event loop thread; must not block or yield. A request
// the handler neither answers nor defers gets an empty reply.
using RpcHandler = std::function<void(RpcRequest&)>;

// A reply's bytes (capacity reused across calls).
using RpcBuffer = std::vector<uint8_t>;

}  // namespace drtmx::r2
