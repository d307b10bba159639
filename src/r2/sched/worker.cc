// The event loop and the coroutine machinery of Worker. The RPC paths live
// in rpc_recv.cc and rpc_send.cc, the coroutine-side waits in co.cc.
#include "r2/sched/worker.h"

#include <exception>

#include "r2/common/clock.h"
#include "r2/sched/wr_id.h"

namespace drtmx::r2 {

namespace {
// Thrown at a suspended coroutine's switch point when its worker is
// destroyed, so its stack unwinds (destructors run) through our own,
// sanitizer-annotated switches.
struct CoroutineCancelled {};
}  // namespace

Status WorkerConfig::validate() const {
  if (coroutines == 0 || coroutines > kMaxCoroutines) {
    return invalid_argument("--coroutines=" + std::to_string(coroutines) + ": expected 1.." +
                            std::to_string(kMaxCoroutines));
  }
  if (stack_bytes < 16 * 1024) {
    return invalid_argument("coroutine stack of " + std::to_string(stack_bytes) +
                            " bytes: expected at least 16384");
  }
  if (max_rpc_bytes == 0 || max_rpc_bytes > (1u << 30)) {
    return invalid_argument("max RPC bytes " + std::to_string(max_rpc_bytes) +
                            ": expected 1..1073741824");
  }
  if (passive_window == 0 || ack_batch == 0 || ack_batch > 65535) {
    return invalid_argument("passive window and ACK batch must be positive (ACK batch <= 65535)");
  }
  return Status::ok();
}

Worker::Worker(Endpoint* ep, NodeId self, uint16_t num_nodes, uint16_t threads_per_node,
               const WorkerConfig& cfg)
    : ep_(ep), self_(self), nodes_(num_nodes), threads_(threads_per_node), cfg_(cfg) {
  const size_t dests = static_cast<size_t>(nodes_) * threads_;
  acks_owed_.assign(dests, 0);
  passive_unacked_.assign(dests, 0);
  backlog_.resize(dests);
  partial_.resize(dests);
  runq_.assign(cfg_.coroutines, 0);
  comps_.resize(64);
  msgs_.resize(64);
  scratch_.resize(ep_->mtu());
  direct_local_ = cfg_.direct_local_ops && ep_->executes_local();
  backoff_.set_waiter([ep = ep_](long ns) { return ep->wait_idle(ns); });
}

Worker::~Worker() {
  for (uint16_t i = 0; i < cos_.size(); ++i) {
    CoState& c = *cos_[i];
    // Bounded: a body that swallows the cancellation and suspends again is
    // cancelled again; after that boost's own unwinding takes over.
    for (int tries = 0; tries < 16 && c.state != State::kFinished; ++tries) {
      c.cancelled = true;
      resume(i);
    }
  }
}

Status Worker::register_handler(uint16_t rpc_id, RpcHandler handler) {
  if (rpc_id >= handlers_.size()) handlers_.resize(rpc_id + 1u);
  if (handlers_[rpc_id]) {
    return already_exists("RPC handler " + std::to_string(rpc_id) + " registered twice");
  }
  handlers_[rpc_id] = std::move(handler);
  return Status::ok();
}

Status Worker::spawn(std::function<void(Co&)> body) {
  if (cos_.size() >= cfg_.coroutines) {
    return exhausted("worker already has its " + std::to_string(cfg_.coroutines) +
                     " coroutines; raise --coroutines");
  }
  auto c = std::make_unique<CoState>();
  const auto index = static_cast<uint16_t>(cos_.size());
  c->co.worker_ = this;
  c->co.id_ = index;
  c->body = std::move(body);
  CoState* cs = c.get();
  c->fiber = boost::context::fiber(
      std::allocator_arg, RecordingStack(cfg_.stack_bytes, &cs->stack),
      [this, cs](boost::context::fiber&& sched) {
        fiber_switch_end(nullptr, &sched_stack_);
        cs->sched = std::move(sched);
        try {
          if (!cs->cancelled) cs->body(cs->co);
        } catch (const CoroutineCancelled&) {
          // unwound on purpose by ~Worker
        } catch (const boost::context::detail::forced_unwind&) {
          throw;  // a suspended coroutine being destroyed: let it unwind
        } catch (const std::exception& e) {
          if (failure_.is_ok())
            failure_ = internal_error(std::string("coroutine threw: ") + e.what());
        } catch (...) {
          if (failure_.is_ok())
            failure_ = internal_error("coroutine threw a non-standard exception");
        }
        cs->state = State::kFinished;
        fiber_switch_begin(nullptr, sched_stack_);  // this stack goes away
        return std::move(cs->sched);
      });
  cos_.push_back(std::move(c));
  runq_[(runq_head_ + runq_count_) % runq_.size()] = index;
  ++runq_count_;
  return Status::ok();
}

void Worker::make_runnable(CoState& c) {
  if (c.state == State::kWaiting) --waiting_;
  c.state = State::kRunnable;
  enqueue(c);
}

void Worker::enqueue(CoState& c) {
  // Each coroutine is queued at most once (runnable, not running), so the
  // ring of `coroutines` entries never overflows.
  if (c.urgent || c.leading) {
    runq_head_ = (runq_head_ + runq_.size() - 1) % runq_.size();
    runq_[runq_head_] = c.co.id_;
  } else {
    runq_[(runq_head_ + runq_count_) % runq_.size()] = c.co.id_;
  }
  ++runq_count_;
}

void Worker::suspend() {
  CoState& c = *cos_[current_];
  inline_streak_ = 0;
  fiber_switch_begin(&c.fake_stack, sched_stack_);
  c.sched = std::move(c.sched).resume();
  fiber_switch_end(c.fake_stack, nullptr);
  if (c.cancelled) throw CoroutineCancelled();
}

void Worker::resume(uint16_t index) {
  CoState& c = *cos_[index];
  current_ = index;
  fiber_switch_begin(&sched_fake_stack_, c.stack);
  c.fiber = std::move(c.fiber).resume();
  fiber_switch_end(sched_fake_stack_, nullptr);
  if (c.state == State::kFinished) {
    ++finished_;
    c.fiber = {};
  }
}

bool Worker::poll_completions() {
  const int n = ep_->poll(comps_.data(), static_cast<int>(comps_.size()));
  for (int i = 0; i < n; ++i) {
    const Completion& cp = comps_[i];
    const WrId id = decode_wr_id(cp.wr_id);
    ++stats_.completions;
    if (id.cor >= cos_.size()) {
      if (cp.status != OpStatus::kOk) ++stats_.async_errors;
      continue;
    }
    CoState& c = *cos_[id.cor];
    if (c.wait != Wait::kOps || c.epoch != id.epoch || c.batch == nullptr ||
        id.slot >= c.batch->size()) {
      // A passive op's error, reported after its coroutine moved on.
      if (cp.status != OpStatus::kOk) ++stats_.async_errors;
      continue;
    }
    c.batch->status_[id.slot] = cp.status;
    // Unsignaled ops report only errors and were never counted as pending.
    if (!c.batch->ops_[id.slot].signaled) continue;
    if (--c.pending == 0 && c.state == State::kWaiting) make_runnable(c);
  }
  return n > 0;
}

void Worker::check_deadlines(uint64_t now) {
  for (auto& cp : cos_) {
    CoState& c = *cp;
    if (c.state != State::kWaiting || c.wait != Wait::kRpc || c.deadline_ns == 0) continue;
    if (now < c.deadline_ns) continue;
    std::string missing;
    for (size_t i = 0; i < c.targets.size(); ++i) {
      if (c.got[i]) continue;
      if (!missing.empty()) missing += ", ";
      missing += "node " + std::to_string(c.targets[i].node) + " thread " +
                 std::to_string(c.targets[i].thread);
    }
    c.rpc_status = timeout_error("no reply from " + missing + " within " +
                                 std::to_string(cfg_.rpc_timeout_ms) +
                                 " ms (is that node alive and serving?)");
    ++stats_.timeouts;
    --rpc_waiters_;
    make_runnable(c);
  }
}

void Worker::wake_parked(uint64_t now) {
  for (auto& cp : cos_) {
    CoState& c = *cp;
    if (c.state != State::kWaiting || c.wait != Wait::kParked || now < c.deadline_ns) continue;
    --parked_;
    make_runnable(c);  // deadline_ns stays set: park_until() returns false
  }
}

void Worker::on_membership() {
  const MembershipView::Snapshot v = view_->snapshot();
  seen_epoch_ = v.epoch;
  // This node itself removed: nobody answers it any more.
  const bool self_gone = !v.live.test(self_);
  auto removed = [&](NodeId n) { return self_gone || !v.live.test(n); };
  const std::string why = " was removed from the cluster at epoch " + std::to_string(v.epoch);
  for (uint32_t dest = 0; dest < passive_unacked_.size(); ++dest) {
    if (!removed(static_cast<NodeId>(dest / threads_))) continue;
    passive_unacked_total_ -= passive_unacked_[dest];
    passive_unacked_[dest] = 0;
    acks_owed_total_ -= acks_owed_[dest];
    acks_owed_[dest] = 0;
    backlog_count_ -= backlog_[dest].size();
    backlog_[dest].clear();
    partial_[dest].active = false;
  }
  for (auto& cp : cos_) {
    CoState& c = *cp;
    if (c.state != State::kWaiting) continue;
    if (c.wait == Wait::kRpc) {
      // The removed targets count as answered with an error; the call ends
      // when the members answered too (they handled the request).
      for (size_t i = 0; i < c.targets.size() && c.pending > 0; ++i) {
        if (c.got[i] || !removed(c.targets[i].node)) continue;
        c.got[i] = 1;
        --c.pending;
        if (c.rpc_status.is_ok()) {
          c.rpc_status =
              aborted("node " + std::to_string(c.targets[i].node) + why + " (no reply will come)");
        }
      }
      if (c.pending > 0) continue;
      --rpc_waiters_;
      make_runnable(c);
    } else if ((c.wait == Wait::kPassiveWindow &&
                passive_unacked_[c.wait_dest] < cfg_.passive_window) ||
               (c.wait == Wait::kAllAcks && passive_unacked_total_ == 0)) {
      make_runnable(c);
    }
  }
}

bool Worker::serve() {
  bool work = poll_messages();
  for (auto& p : pollers_) work |= p();
  return work;
}

void Worker::run_until(const std::function<bool()>& done) {
  while (!done()) {
    ++iteration_;
    if (view_ != nullptr && view_->epoch() != seen_epoch_) on_membership();
    bool work = poll_completions();
    work |= serve();
    size_t n = runq_count_;
    bool pollers_only = n > 0;
    while (n-- > 0) {
      uint16_t index = runq_[runq_head_];
      runq_head_ = (runq_head_ + 1) % runq_.size();
      --runq_count_;
      CoState& c = *cos_[index];
      if (!c.idle_yield) {
        work = true;
        pollers_only = false;
      }
      c.idle_yield = false;
      resume(index);
      if (lead_yielded_) {
        lead_yielded_ = false;
        break;  // it is at the front again: poll first, then resume it
      }
    }
    if (backlog_count_ > 0) work |= drain_backlog();
    if (acks_owed_total_ > 0) flush_acks(!work);
    ep_->flush_sends();
    if (rpc_waiters_ > 0 && (iteration_ & 255) == 0) check_deadlines(now_ns());
    if (parked_ > 0 && (iteration_ & 15) == 0) wake_parked(now_ns());
    if (work) {
      backoff_.on_work();
    } else if (backoff_.on_idle(waiting_ > 0 || pollers_only)) {
      ++stats_.idle_sleeps;
    }
  }
  ep_->flush_sends();
}

}  // namespace drtmx::r2
