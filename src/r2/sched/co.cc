// The coroutine side of Worker: everything a Co call does before and after
// it suspends.
#include "r2/sched/co.h"

#include "r2/common/clock.h"
#include "r2/sched/worker.h"
#include "r2/sched/wr_id.h"

namespace drtmx::r2 {

NodeId Co::node() const {
  return worker_->node();
}
ThreadId Co::thread() const {
  return worker_->thread();
}

bool Co::direct(NodeId n) const {
  return n == worker_->node() && worker_->direct_local_ && worker_->is_member(n);
}

OpStatus Co::run(OpBatch& batch) {
  return worker_->run_batch(worker_->current(), batch);
}

void Co::post(OpBatch& batch) {
  Worker::CoState& c = worker_->current();
  worker_->post_batch(c, batch);
  posted_ = true;
}

OpStatus Co::wait_posted() {
  Worker::CoState& c = worker_->current();
  if (!posted_ || c.batch == nullptr) {
    posted_ = false;
    return OpStatus::kOk;
  }
  posted_ = false;
  return worker_->wait_batch(c, *c.batch);
}

OpStatus Co::read(RemoteAddr from, void* to, uint32_t len) {
  single_.clear();
  single_.read(from, to, len);
  return run(single_);
}

OpStatus Co::write(RemoteAddr to, const void* from, uint32_t len) {
  single_.clear();
  single_.write(to, from, len);
  return run(single_);
}

OpStatus Co::cas(RemoteAddr at, uint64_t expected, uint64_t desired, uint64_t* old) {
  single_.clear();
  single_.cas(at, expected, desired, old);
  return run(single_);
}

OpStatus Co::faa(RemoteAddr at, uint64_t add, uint64_t* old) {
  single_.clear();
  single_.faa(at, add, old);
  return run(single_);
}

Status Co::call(std::span<const Target> targets, uint16_t rpc_id, const void* req, uint32_t len,
                std::span<RpcBuffer> replies) {
  // The same body for every target.
  const std::span<const uint8_t> body(static_cast<const uint8_t*>(req), len);
  constexpr size_t kInline = 16;
  if (targets.size() <= kInline) {
    std::span<const uint8_t> bodies[kInline];
    for (size_t i = 0; i < targets.size(); ++i) bodies[i] = body;
    return worker_->call(worker_->current(), targets, rpc_id,
                         std::span<const std::span<const uint8_t>>(bodies, targets.size()),
                         replies);
  }
  std::vector<std::span<const uint8_t>> bodies(targets.size(), body);
  return worker_->call(worker_->current(), targets, rpc_id, bodies, replies);
}

Status Co::call(std::span<const Target> targets, uint16_t rpc_id,
                std::span<const std::span<const uint8_t>> bodies, std::span<RpcBuffer> replies) {
  return worker_->call(worker_->current(), targets, rpc_id, bodies, replies);
}

Status Co::call(Target target, uint16_t rpc_id, const void* req, uint32_t len, RpcBuffer& reply) {
  return call(std::span<const Target>(&target, 1), rpc_id, req, len,
              std::span<RpcBuffer>(&reply, 1));
}

Status Co::send_passive(Target target, uint16_t rpc_id, const void* msg, uint32_t len) {
  return worker_->send_passive(worker_->current(), target, rpc_id, msg, len);
}

Status Co::wait_passive_acks() {
  return worker_->wait_passive_acks(worker_->current());
}

OpStatus Co::settle_unsignaled() {
  return worker_->settle_unsignaled(worker_->current());
}

void Co::yield() {
  worker_->yield_now(worker_->current());
}

void Co::yield_at_boundary() {
  // A quarter of the periodic yield's streak: a transaction that ran that
  // much without suspending yields before the next one, so the periodic
  // yield rarely falls inside one; one that suspended recently (remote ops)
  // does not pay a turn of the loop for a few local ops.
  if (worker_->inline_streak_ >= Worker::kInlineStreak / 4) {
    worker_->yield_now(worker_->current());
  }
}

void Co::charge(uint32_t ops) {
  Worker::CoState& c = worker_->current();
  worker_->inline_streak_ += ops;
  if (worker_->inline_streak_ >= Worker::kInlineStreak && !c.urgent) worker_->streak_yield(c);
}

void Co::yield_idle() {
  Worker::CoState& c = worker_->current();
  c.idle_yield = true;
  worker_->yield_now(c);
}

bool Co::park_until(uint64_t deadline_ns) {
  Worker::CoState& c = worker_->current();
  c.wait = Worker::Wait::kParked;
  c.deadline_ns = deadline_ns;
  c.state = Worker::State::kWaiting;
  ++worker_->waiting_;
  ++worker_->parked_;
  worker_->suspend();
  // Unparked: unpark() cleared the deadline; expired: wake_parked() did not.
  const bool woken = c.deadline_ns == 0;
  c.wait = Worker::Wait::kNone;
  c.deadline_ns = 0;
  return woken;
}

void Co::unpark(uint16_t co) {
  if (co >= worker_->cos_.size()) return;
  Worker::CoState& c = *worker_->cos_[co];
  if (c.state != Worker::State::kWaiting || c.wait != Worker::Wait::kParked) return;
  c.deadline_ns = 0;
  --worker_->parked_;
  worker_->make_runnable(c);
}

void Co::set_urgent(bool urgent) {
  worker_->current().urgent = urgent;
}

void Co::set_leading(bool leading) {
  worker_->current().leading = leading;
}

// --- Worker, coroutine side ---------------------------------------------------

void Worker::yield_now(CoState& c) {
  // A yield lets the others run first, urgent or not.
  runq_[(runq_head_ + runq_count_) % runq_.size()] = c.co.id_;
  ++runq_count_;
  suspend();
}

void Worker::streak_yield(CoState& c) {
  // The periodic yield of a run of inline work. A leading coroutine only
  // lets the loop poll: it is queued at the front and run_until ends the
  // iteration after it. Explicit yields (Co::yield, spin-waits for a
  // condition another coroutine sets) always let the others in.
  if (!c.leading) return yield_now(c);
  enqueue(c);  // at the front: it is leading
  lead_yielded_ = true;
  suspend();
}

OpStatus Worker::run_batch(CoState& c, OpBatch& b) {
  if (b.ops_.empty()) return OpStatus::kOk;
  post_batch(c, b);
  return wait_batch(c, b);
}

OpStatus Worker::wait_batch(CoState& c, OpBatch& b) {
  // Completions that arrived while the coroutine ran on were counted down
  // by poll_completions (c.wait stayed kOps for this epoch). An urgent
  // coroutine (one holding locks others wait for) polls once more before
  // suspending: a fabric that executes ops at the doorbell (shm without a
  // delay) has them all by now, and a suspension would cost a turn of every
  // other coroutine while the locks are held. The poll makes other waiting
  // coroutines runnable (queued, not resumed); this one is running, so its
  // own completions only count down. When it then runs on, it first does
  // what the loop would have done while it was suspended here, except
  // resuming coroutines: it serves the messages that came in, runs the
  // pollers and sends what is queued. Other nodes' coroutines wait for
  // those replies, and the pollers include the version store's GC and the
  // snapshot floor: a lock holder running through Log and Commit without
  // them kept replies waiting and starved GC (docs/design-notes.md). The
  // handlers and pollers run on this coroutine's stack, as an inline
  // self-call's handlers do; a wait for ops is a suspension point, so
  // nothing they see is half-done.
  if (c.urgent && c.pending > 0 && c.batch == &b) {
    poll_completions();
    if (c.pending == 0) {
      serve();
      ep_->flush_sends();
    }
  }
  if (c.pending > 0 && c.batch == &b) {
    c.state = State::kWaiting;
    ++waiting_;
    suspend();
  } else if (++inline_streak_ >= kInlineStreak && !c.urgent) {
    streak_yield(c);  // done without waiting (local ops) many times in a row
  }
  if (c.local_reads) {
    c.local_reads = false;
    ep_->finish_local();
  }
  c.wait = Wait::kNone;
  c.batch = nullptr;
  return b.first_error();
}

void Worker::post_batch(CoState& c, OpBatch& b) {
  c.batch = nullptr;
  c.pending = 0;
  if (b.ops_.empty()) return;
  if (b.ops_.size() > kMaxBatchOps) {
    for (auto& s : b.status_) s = OpStatus::kBadLength;
    return;
  }
  ++c.epoch;
  c.batch = &b;
  c.pending = 0;
  c.wait = Wait::kOps;
  // Peers with posted but not yet doorbelled requests, in first-use order.
  NodeId touched[64];
  size_t ntouched = 0;
  uint64_t touched_mask[4] = {0, 0, 0, 0};  // nodes < 256
  auto ring_all = [&] {
    for (size_t i = 0; i < ntouched; ++i) ep_->doorbell(touched[i]);
    ntouched = 0;
    touched_mask[0] = touched_mask[1] = touched_mask[2] = touched_mask[3] = 0;
  };
  const bool direct = cfg_.direct_local_ops;
  for (size_t i = 0; i < b.ops_.size(); ++i) {
    WorkRequest& wr = b.ops_[i];
    b.status_[i] = OpStatus::kOk;
    if (direct && wr.remote.node == self_ && ep_->execute_local(wr, &b.status_[i])) {
      ++stats_.direct_ops;
      if (wr.verb == Verb::kRead) c.local_reads = true;
      continue;
    }
    wr.wr_id = encode_wr_id({c.co.id_, static_cast<uint16_t>(i), c.epoch});
    ++stats_.ops_posted;
    while (ep_->post(wr) == PostResult::kQueueFull) {
      // The channel is full: send what is queued and let the loop poll.
      ring_all();
      yield_now(c);
    }
    if (wr.signaled) {
      ++c.pending;
    } else {
      note_unsignaled(c, wr.remote.node);
    }
    const NodeId p = wr.remote.node;
    if (p < 256 && !(touched_mask[p >> 6] & (1ull << (p & 63)))) {
      touched_mask[p >> 6] |= 1ull << (p & 63);
      touched[ntouched++] = p;
      if (ntouched == 64) ring_all();
    } else if (p >= 256) {
      ep_->doorbell(p);  // an invalid node: its error completes at once
    }
  }
  ring_all();
}

Status Worker::call(CoState& c, std::span<const Target> targets, uint16_t rpc_id,
                    std::span<const std::span<const uint8_t>> bodies,
                    std::span<RpcBuffer> replies) {
  if (targets.size() != replies.size() || targets.size() != bodies.size()) {
    return invalid_argument("call(): " + std::to_string(targets.size()) + " targets, " +
                            std::to_string(bodies.size()) + " bodies and " +
                            std::to_string(replies.size()) + " reply buffers");
  }
  if (targets.empty()) return Status::ok();
  for (const auto& b : bodies) {
    if (b.size() > cfg_.max_rpc_bytes) {
      return out_of_range("RPC " + std::to_string(rpc_id) + " request of " +
                          std::to_string(b.size()) + " bytes exceeds the limit of " +
                          std::to_string(cfg_.max_rpc_bytes) + " bytes (max_rpc_bytes)");
    }
  }
  for (const Target& t : targets) {
    if (t.node >= nodes_ || t.thread >= threads_) {
      return invalid_argument("RPC target node " + std::to_string(t.node) + " thread " +
                              std::to_string(t.thread) + " is outside the cluster (" +
                              std::to_string(nodes_) + " nodes x " + std::to_string(threads_) +
                              " threads)");
    }
  }
  ++c.rpc_seq;
  c.got.assign(targets.size(), 0);
  c.targets = targets;
  c.replies = replies;
  c.rpc_status = Status::ok();
  c.pending = static_cast<uint32_t>(targets.size());
  c.wait = Wait::kRpc;
  RpcHeader h;
  h.type = static_cast<uint8_t>(RpcType::kRequest);
  h.rpc_id = rpc_id;
  h.cor = c.co.id_;
  h.seq = c.rpc_seq;
  const bool inline_self = cfg_.inline_self_calls;
  bool any_self = false;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!is_member(targets[i].node)) {
      // Removed: not sent; the call fails, once the members answered (a
      // caller that releases after a failed call must find them handled).
      c.got[i] = 1;
      --c.pending;
      if (c.rpc_status.is_ok()) {
        c.rpc_status = aborted("node " + std::to_string(targets[i].node) +
                               " was removed from the cluster at epoch " +
                               std::to_string(view_->epoch()) + " (no reply will come)");
      }
      continue;
    }
    if (inline_self && targets[i].node == self_ && targets[i].thread == thread()) {
      any_self = true;  // served below, after the messages to others are out
      continue;
    }
    send_logical(targets[i].node, targets[i].thread, h, bodies[i].data(),
                 static_cast<uint32_t>(bodies[i].size()));
  }
  if (any_self) {
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].node == self_ && targets[i].thread == thread() && !c.got[i]) {
        call_local(c, i, rpc_id, bodies[i]);
      }
    }
    if (c.pending == 0) {
      // Every reply was immediate. Yield now and then, so a coroutine
      // whose calls are all local still lets messages and pollers run.
      c.wait = Wait::kNone;
      c.targets = {};
      c.replies = {};
      Status st = std::move(c.rpc_status);
      if (++inline_streak_ >= kInlineStreak && !c.urgent) streak_yield(c);
      return st;
    }
  }
  if (c.pending == 0) {  // every target removed
    c.wait = Wait::kNone;
    c.targets = {};
    c.replies = {};
    return std::move(c.rpc_status);
  }
  c.deadline_ns = cfg_.rpc_timeout_ms ? now_ns() + uint64_t{cfg_.rpc_timeout_ms} * 1000000 : 0;
  c.state = State::kWaiting;
  ++waiting_;
  ++rpc_waiters_;
  suspend();
  c.wait = Wait::kNone;
  c.targets = {};
  c.replies = {};
  return std::move(c.rpc_status);
}

Status Worker::send_passive(CoState& c, Target t, uint16_t rpc_id, const void* msg, uint32_t len) {
  if (len > cfg_.max_rpc_bytes) {
    return out_of_range("passive RPC " + std::to_string(rpc_id) + " of " + std::to_string(len) +
                        " bytes exceeds the limit of " + std::to_string(cfg_.max_rpc_bytes) +
                        " bytes (max_rpc_bytes)");
  }
  if (t.node >= nodes_ || t.thread >= threads_) {
    return invalid_argument("passive RPC target node " + std::to_string(t.node) + " thread " +
                            std::to_string(t.thread) + " is outside the cluster");
  }
  if (!is_member(t.node)) {
    return aborted("passive RPC target node " + std::to_string(t.node) +
                   " was removed from the cluster at epoch " + std::to_string(view_->epoch()));
  }
  const uint32_t dest = dest_index(t.node, t.thread);
  while (passive_unacked_[dest] >= cfg_.passive_window) {
    c.wait = Wait::kPassiveWindow;
    c.wait_dest = dest;
    c.state = State::kWaiting;
    ++waiting_;
    suspend();
    c.wait = Wait::kNone;
  }
  if (!is_member(t.node)) {
    return aborted("passive RPC target node " + std::to_string(t.node) +
                   " was removed from the cluster at epoch " + std::to_string(view_->epoch()));
  }
  RpcHeader h;
  h.type = static_cast<uint8_t>(RpcType::kOneWay);
  h.rpc_id = rpc_id;
  h.cor = c.co.id_;
  send_logical(t.node, t.thread, h, static_cast<const uint8_t*>(msg), len);
  ++passive_unacked_[dest];
  ++passive_unacked_total_;
  return Status::ok();
}

Status Worker::post_oneway(Target t, uint16_t rpc_id, const void* msg, uint32_t len) {
  if (len > cfg_.max_rpc_bytes) {
    return out_of_range("one-way RPC " + std::to_string(rpc_id) + " of " + std::to_string(len) +
                        " bytes exceeds the limit of " + std::to_string(cfg_.max_rpc_bytes) +
                        " bytes (max_rpc_bytes)");
  }
  if (t.node >= nodes_ || t.thread >= threads_) {
    return invalid_argument("one-way RPC target node " + std::to_string(t.node) + " thread " +
                            std::to_string(t.thread) + " is outside the cluster");
  }
  if (!is_member(t.node)) {
    return aborted("one-way RPC target node " + std::to_string(t.node) +
                   " was removed from the cluster at epoch " + std::to_string(view_->epoch()));
  }
  RpcHeader h;
  h.type = static_cast<uint8_t>(RpcType::kOneWay);
  h.rpc_id = rpc_id;
  send_logical(t.node, t.thread, h, static_cast<const uint8_t*>(msg), len);
  ++passive_unacked_[dest_index(t.node, t.thread)];
  ++passive_unacked_total_;
  return Status::ok();
}

void Worker::note_unsignaled(CoState& c, NodeId peer) {
  const uint64_t n = ep_->posted(peer);  // this op's number (or an earlier one if refused)
  for (auto& [p, last] : c.unsignaled) {
    if (p == peer) {
      last = n;
      return;
    }
  }
  c.unsignaled.emplace_back(peer, n);
}

OpStatus Worker::settle_unsignaled(CoState& c) {
  uint64_t deadline = 0;
  bool asked = false;
  for (;;) {  // bounded by the deadline
    // Drop what has retired, and peers gone from the membership.
    size_t keep = 0;
    for (const auto& u : c.unsignaled) {
      if (ep_->retired(u.first) < u.second && is_member(u.first)) c.unsignaled[keep++] = u;
    }
    c.unsignaled.resize(keep);
    if (keep == 0) return OpStatus::kOk;
    if (!asked) {
      for (const auto& u : c.unsignaled) ep_->retire_posted(u.first);
      asked = true;
      deadline =
          now_ns() + uint64_t{cfg_.rpc_timeout_ms == 0 ? 10000 : cfg_.rpc_timeout_ms} * 1'000'000;
    } else if (now_ns() > deadline) {
      c.unsignaled.clear();
      return OpStatus::kTransportError;
    }
    // The loop polls the endpoint, which moves retired().
    yield_now(c);
  }
}

Status Worker::wait_passive_acks(CoState& c) {
  while (passive_unacked_total_ > 0) {
    c.wait = Wait::kAllAcks;
    c.state = State::kWaiting;
    ++waiting_;
    suspend();
    c.wait = Wait::kNone;
  }
  return Status::ok();
}

}  // namespace drtmx::r2
