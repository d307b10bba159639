// Worker: one worker thread's event loop — N coroutines, the RPC server and
// the fabric poller of one Endpoint.
//
// Each iteration of the loop (run_until):
//   1. polls one-sided completions and routes each to the coroutine whose
//      op it is (wr_id = coroutine | op slot | wait epoch); a coroutine whose
//      last awaited completion arrived becomes runnable;
//   2. polls messages: requests and one-way messages run their handler
//      inline; replies are copied to the waiting coroutine; acknowledgements
//      of passive messages are counted;
//   3. resumes every runnable coroutine once (each runs until it waits);
//   4. flushes queued messages (one doorbell for all coroutines' and
//      handlers' messages of the iteration) and the send backlog;
//   5. every few iterations checks RPC deadlines;
//   6. when nothing happened, backs off (pause, then sched_yield, then
//      short sleeps when no coroutine waits), so that more busy threads than
//      cores share the machine instead of starving each other.
//
// Threading: everything here runs on the worker's thread. register_handler
// and spawn are called before run_until. A Worker is not copyable.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/control/membership.h"
#include "r2/fabric.h"
#include "r2/sched/co.h"
#include "r2/sched/fiber_sanitizer.h"
#include "r2/sched/idle_backoff.h"
#include "r2/sched/rpc.h"
#include "r2/sched/rpc_wire.h"

namespace drtmx::r2 {

struct WorkerConfig {
  uint16_t coroutines = 8;  // at most this many spawn() calls
  size_t stack_bytes = 128 * 1024;
  // A call() without every reply after this long fails with kTimeout; 0 waits forever.
  uint32_t rpc_timeout_ms = 10000;
  // Largest logical request or reply; larger ones are refused with an error.
  uint32_t max_rpc_bytes = 1u << 20;
  // Passive messages to one destination that may be unacknowledged before
  // send_passive() waits.
  uint32_t passive_window = 512;
  // A receiver owing this many acknowledgements to one sender sends them in
  // a standalone ACK when no other traffic has carried them.
  uint32_t ack_batch = 64;
  // A call() to this worker's own (node, thread) runs the handler inline in
  // the calling coroutine and takes an immediate reply without messages
  // (a deferred reply still comes as a message). Off: every call goes
  // through the fabric's message rings, as to any other thread.
  bool inline_self_calls = true;
  // One-sided ops whose target is this node run at once on its own memory
  // when the endpoint can (Endpoint::execute_local; shm): no queue, no
  // completion, no suspension. Off: posted like ops to any other node.
  bool direct_local_ops = true;

  Status validate() const;
};

struct WorkerStats {
  uint64_t completions = 0;      // one-sided completions routed
  uint64_t messages_in = 0;      // fabric messages received
  uint64_t messages_out = 0;     // fabric messages sent
  uint64_t requests_served = 0;  // handler invocations
  uint64_t acks_sent = 0;        // standalone ACK messages
  uint64_t async_errors = 0;     // failed ops nobody waited for (passive)
  uint64_t malformed = 0;        // messages dropped as malformed
  uint64_t stale_replies = 0;    // replies for calls that already ended
  uint64_t timeouts = 0;         // calls that timed out
  uint64_t backlog_peak = 0;     // most messages waiting for ring space
  uint64_t idle_sleeps = 0;      // back-off sleeps taken
  uint64_t inline_calls = 0;     // calls to this worker served inline (no messages)
  uint64_t direct_ops = 0;       // one-sided ops on this node's memory run at once
  uint64_t ops_posted = 0;       // one-sided ops posted to the fabric (the others)
};

class Worker {
 public:
  Worker(Endpoint* ep, NodeId self, uint16_t num_nodes, uint16_t threads_per_node,
         const WorkerConfig& cfg);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Handlers run on this worker for requests addressed to its thread.
  Status register_handler(uint16_t rpc_id, RpcHandler handler);
  // Adds a coroutine; it starts at the first loop iteration.
  Status spawn(std::function<void(Co&)> body);

  // Runs the loop until `done()` returns true (checked every iteration).
  void run_until(const std::function<bool()>& done);
  // True when every spawned coroutine has returned.
  bool coroutines_finished() const { return finished_ == cos_.size(); }
  // The first failure of a coroutine body (an escaped exception), if any.
  const Status& failure() const { return failure_; }

  // Adds a poller the loop calls every iteration (after messages, before
  // coroutines); it returns true when it did work. Pollers run on the
  // worker's thread, must not block, and may send with post_oneway().
  void add_poller(std::function<bool()> poller) { pollers_.push_back(std::move(poller)); }
  // Sends a one-way message from a handler or poller (outside coroutines):
  // like Co::send_passive, but it never waits; the message is acknowledged
  // on later traffic. Fails only for a bad target or size.
  Status post_oneway(Target target, uint16_t rpc_id, const void* msg, uint32_t len);

  // Replies to a deferred request (RpcRequest::defer).
  void reply(const ReplyToken& token, const void* data, uint32_t len);
  void reply_error(const ReplyToken& token, const std::string& why);

  Endpoint* endpoint() { return ep_; }
  NodeId node() const { return self_; }
  ThreadId thread() const { return ep_->thread(); }
  uint16_t num_nodes() const { return nodes_; }
  uint16_t threads_per_node() const { return threads_; }
  const WorkerStats& stats() const { return stats_; }
  const WorkerConfig& config() const { return cfg_; }
  // Passive messages sent by this worker not yet acknowledged (all peers).
  uint64_t passive_unacked() const { return passive_unacked_total_; }

  // Survive-failures mode: the node's membership view (NodeRuntime sets it
  // before launch). The loop compares its epoch with the last one it saw at
  // every iteration (one acquire load); when it moved, calls still waiting
  // for a removed node end at once with kAborted ("node N was removed from
  // the cluster at epoch E"), passive messages to removed nodes stop being
  // owed acknowledgements, and fragments queued for them are dropped. A
  // call to a node that is no longer a member fails the same way without
  // being sent. Null (the default): fail-stop, nothing changes.
  void set_membership(const MembershipView* view) { view_ = view; }
  const MembershipView* membership() const { return view_; }
  // Whether node n is a member (always true without a view).
  // (False for every node once this node itself was removed: nobody
  // answers it any more.)
  bool is_member(NodeId n) const {
    return view_ == nullptr || (view_->is_member(n) && view_->is_member(self_));
  }
  // The epoch this worker's loop last applied (worker thread).
  uint64_t membership_epoch() const { return seen_epoch_; }

 private:
  friend class Co;
  friend class RpcRequest;

  enum class State : uint8_t { kRunnable, kWaiting, kFinished };
  enum class Wait : uint8_t { kNone, kOps, kRpc, kPassiveWindow, kAllAcks, kParked };

  struct CoState {
    Co co;
    std::function<void(Co&)> body;
    boost::context::fiber fiber;  // the coroutine, while suspended
    boost::context::fiber sched;  // the scheduler, while the coroutine runs
    bool cancelled = false;       // being destroyed: unwind at the next switch
    bool idle_yield = false;      // queued by yield_idle(): not work
    bool urgent = false;          // Co::set_urgent: queued at the front
    bool leading = false;         // Co::set_leading: queued at the front, yields too
    FiberStack stack;             // for the sanitizer's stack bookkeeping
    void* fake_stack = nullptr;
    State state = State::kRunnable;
    Wait wait = Wait::kNone;
    uint32_t pending = 0;  // completions or replies still awaited
    uint32_t epoch = 0;    // bumped per wait; stale completions are ignored
    OpBatch* batch = nullptr;
    bool local_reads = false;  // execute_local READs to finish before the wait returns
    // RPC wait
    uint32_t rpc_seq = 0;
    std::span<const Target> targets;
    std::span<RpcBuffer> replies;
    std::vector<uint8_t> got;  // per target: reply received
    Status rpc_status;
    uint64_t deadline_ns = 0;
    uint32_t wait_dest = 0;  // kPassiveWindow: destination index
    // Per peer, the number (Endpoint::posted) of the last unsignaled op
    // this coroutine posted there that may not have retired yet
    // (Co::settle_unsignaled). A handful of peers: a vector.
    std::vector<std::pair<NodeId, uint64_t>> unsignaled;
  };

  // Reassembly of a fragmented logical message from one source.
  struct Partial {
    RpcHeader first;
    std::vector<uint8_t> data;
    uint32_t received = 0;
    bool active = false;
  };

  // --- coroutine side (called from Co) ---
  CoState& current() { return *cos_[current_]; }
  void suspend();  // switch to the scheduler
  void make_runnable(CoState& c);
  void enqueue(CoState& c);  // into the run queue: the back, or the front if urgent/leading
  OpStatus run_batch(CoState& c, OpBatch& b);
  // run_batch in two halves: post (returns whether any op is signaled) and
  // wait (suspends until the pending completions are in).
  void post_batch(CoState& c, OpBatch& b);
  OpStatus wait_batch(CoState& c, OpBatch& b);
  Status call(CoState& c, std::span<const Target> targets, uint16_t rpc_id,
              std::span<const std::span<const uint8_t>> bodies, std::span<RpcBuffer> replies);
  Status send_passive(CoState& c, Target t, uint16_t rpc_id, const void* msg, uint32_t len);
  Status wait_passive_acks(CoState& c);
  OpStatus settle_unsignaled(CoState& c);
  void note_unsignaled(CoState& c, NodeId peer);
  void yield_now(CoState& c);
  void streak_yield(CoState& c);  // the periodic yield: yield_now, or a leader's

  // --- loop side ---
  void resume(uint16_t index);
  bool poll_completions();
  bool poll_messages();
  // The incoming messages, then the pollers; true when either did work.
  // The loop's step between completions and coroutines, also run by an
  // urgent coroutine that does not suspend (wait_batch).
  bool serve();
  void on_message(const Message& m);
  void dispatch(NodeId from_node, ThreadId from_thread, const RpcHeader& h, const uint8_t* payload,
                uint32_t len);
  void on_reply(NodeId from_node, ThreadId from_thread, const RpcHeader& h, const uint8_t* payload,
                uint32_t len);
  // Records reply i of c's call (an error reply when kRpcFlagError is set);
  // returns true when it was the last one awaited.
  bool take_reply(CoState& c, size_t i, uint16_t rpc_id, uint8_t flags, const uint8_t* payload,
                  uint32_t len);
  // Runs the handler of a call to this worker itself inside c's call().
  void call_local(CoState& c, size_t i, uint16_t rpc_id, std::span<const uint8_t> body);
  // An inline handler's reply (RpcRequest::reply / reply_error).
  void reply_local(const RpcRequest& req, uint8_t flags, const void* data, uint32_t len);
  void on_acks(uint32_t dest, uint16_t acks);
  void check_deadlines(uint64_t now);
  void wake_parked(uint64_t now);  // the parked whose deadline passed
  // The view's epoch moved: ends what waits on removed nodes.
  void on_membership();
  void flush_acks(bool all_owed);

  // --- sending ---
  uint32_t dest_index(NodeId n, ThreadId t) const { return n * threads_ + t; }
  // Sends one logical message, fragmenting it; refuses (false) only when
  // it exceeds max_rpc_bytes.
  bool send_logical(NodeId n, ThreadId t, RpcHeader h, const uint8_t* payload, uint32_t len);
  void send_fragment(uint32_t dest, const uint8_t* msg, uint32_t len);
  bool drain_backlog();
  void send_reply(const ReplyToken& tok, uint8_t flags, const void* data, uint32_t len);

  Endpoint* ep_;
  NodeId self_;
  uint16_t nodes_, threads_;
  WorkerConfig cfg_;
  WorkerStats stats_;
  Status failure_;

  std::vector<std::unique_ptr<CoState>> cos_;
  size_t finished_ = 0;
  uint16_t current_ = 0;
  std::vector<uint16_t> runq_;  // ring of runnable coroutine indices
  size_t runq_head_ = 0, runq_count_ = 0;
  size_t waiting_ = 0;  // coroutines in State::kWaiting

  std::vector<RpcHandler> handlers_;
  std::vector<std::function<bool()>> pollers_;

  // Per destination (node * threads + thread).
  std::vector<uint32_t> acks_owed_;        // one-way messages we received
  std::vector<uint32_t> passive_unacked_;  // one-way messages we sent
  uint64_t passive_unacked_total_ = 0;
  uint32_t acks_owed_total_ = 0;
  std::vector<std::deque<std::vector<uint8_t>>> backlog_;
  uint64_t backlog_count_ = 0;
  std::vector<Partial> partial_;  // per source

  std::vector<uint8_t> scratch_;  // one outgoing fragment
  std::vector<Completion> comps_;
  std::vector<Message> msgs_;
  IdleBackoff backoff_;
  FiberStack sched_stack_;  // the worker thread's own stack (sanitizer)
  void* sched_fake_stack_ = nullptr;
  uint64_t iteration_ = 0;
  uint32_t rpc_waiters_ = 0;
  uint32_t parked_ = 0;  // coroutines in Wait::kParked
  const MembershipView* view_ = nullptr;
  uint64_t seen_epoch_ = 0;
  // Inline calls since this worker's coroutines last suspended: after
  // kInlineStreak of them a call yields, so pollers and messages still run
  // (not an urgent coroutine: it yields when it is done being urgent).
  uint32_t inline_streak_ = 0;
  // A leading coroutine yielded in this iteration (and is queued at the
  // front): the iteration ends, so the loop polls before resuming it.
  bool lead_yielded_ = false;
  // cfg_.direct_local_ops and the endpoint executes local ops (Co::direct).
  bool direct_local_ = false;
  static constexpr uint32_t kInlineStreak = 64;
};

}  // namespace drtmx::r2
