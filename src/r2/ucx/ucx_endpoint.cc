#include "r2/ucx/ucx_endpoint.h"

#include <libpmem.h>
#include <poll.h>
#include <stdio.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "r2/common/clock.h"

namespace drtmx::r2::ucx {
namespace {

constexpr int kProgressRounds = 16;  // ucp_worker_progress calls per poll at most
constexpr uintptr_t kPage = 4096;

std::string ucs_text(ucs_status_t s) {
  return ucs_status_string(s);
}

// The text ucp_ep_print_info writes for `ep`.
std::string ep_info_text(ucp_ep_h ep) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (f == nullptr) return {};
  ucp_ep_print_info(ep, f);
  fclose(f);
  std::string s(buf, len);
  free(buf);
  return s;
}

}  // namespace

UcxEndpoint::UcxEndpoint(const FabricConfig& cfg, ThreadId thread, const RegionTable* table)
    : table_(table),
      self_(cfg.node),
      thread_(thread),
      nodes_(cfg.num_nodes),
      threads_(cfg.threads),
      depth_(cfg.send_queue_depth),
      mtu_(cfg.mtu),
      force_strict_(cfg.ucx_strict_order) {
  channels_.resize(nodes_);
  for (NodeId n = 0; n < nodes_; ++n) {
    Channel& ch = channels_[n];
    ch.peer = n;
    ch.slots.resize(2 * size_t{depth_} + 4);
    ch.stage.reset(new uint8_t[kStageRingBytes]);
  }
  send_seq_.assign(size_t{nodes_} * threads_, 0);
  expect_seq_.assign(size_t{nodes_} * threads_, 0);
  rma_expect_.assign(size_t{nodes_} * threads_, 0);
  peer_closed_.assign(nodes_, 0);
  lanes_.resize(nodes_);
}

Result<std::unique_ptr<UcxEndpoint>> UcxEndpoint::open(ucp_context_h ctx, const FabricConfig& cfg,
                                                       ThreadId thread, const RegionTable* table) {
  std::unique_ptr<UcxEndpoint> e(new UcxEndpoint(cfg, thread, table));
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (ucs_status_t s = ucp_worker_create(ctx, &wp, &e->worker_); s != UCS_OK) {
    return unavailable("ucp_worker_create for thread " + std::to_string(thread) + ": " +
                       ucs_text(s));
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucs_status_t s = ucp_worker_get_address(e->worker_, &addr, &len); s != UCS_OK) {
    return unavailable("ucp_worker_get_address: " + ucs_text(s));
  }
  e->address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(e->worker_, addr);
  if (ucp_worker_get_efd(e->worker_, &e->event_fd_) != UCS_OK) e->event_fd_ = -1;
  struct Handler {
    unsigned id;
    ucp_am_recv_callback_t cb;
  } handlers[] = {{kAmMessage, &UcxEndpoint::on_message},
                  {kAmPersistRequest, &UcxEndpoint::on_persist_request},
                  {kAmPersistReply, &UcxEndpoint::on_persist_reply},
                  {kAmFenced, &UcxEndpoint::on_fenced_notice},
                  {kAmRma, &UcxEndpoint::on_rma_request},
                  {kAmRmaReply, &UcxEndpoint::on_rma_reply}};
  for (const Handler& h : handlers) {
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = h.id;
    hp.cb = h.cb;
    hp.arg = e.get();
    if (ucs_status_t s = ucp_worker_set_am_recv_handler(e->worker_, &hp); s != UCS_OK) {
      return unavailable("ucp_worker_set_am_recv_handler: " + ucs_text(s));
    }
  }
  return e;
}

UcxEndpoint::~UcxEndpoint() {
  close();
}

Status UcxEndpoint::connect(const std::vector<NodeDesc>& nodes, uint32_t max_op_bytes) {
  max_op_bytes_ = max_op_bytes;
  eps_.assign(size_t{nodes_} * threads_, nullptr);
  rkeys_.assign(nodes_, {});
  ep_args_.clear();
  for (NodeId n = 0; n < nodes_; ++n) {
    for (ThreadId t = 0; t < threads_; ++t) ep_args_.push_back({this, n, t});
  }
  for (NodeId n = 0; n < nodes_; ++n) {
    for (ThreadId t = 0; t < threads_; ++t) {
      ucp_ep_params_t p{};
      p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                     UCP_EP_PARAM_FIELD_ERR_HANDLER;
      p.err_handler.cb = &UcxEndpoint::on_ep_error;
      p.err_handler.arg = &ep_args_[size_t{n} * threads_ + t];
      p.address = reinterpret_cast<const ucp_address_t*>(nodes[n].workers[t].data());
      // Peer failures complete the ops with an error instead of hanging
      // them (and allow closing an endpoint by force when fencing).
      p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ucp_ep_h ep = nullptr;
      if (ucs_status_t s = ucp_ep_create(worker_, &p, &ep); s != UCS_OK) {
        return unavailable("ucp_ep_create toward node " + std::to_string(n) + " thread " +
                           std::to_string(t) + ": " + ucs_text(s));
      }
      eps_[size_t{n} * threads_ + t] = ep;
    }
    ucp_ep_h mine = ep(n, thread_);
    for (const RegionDesc& r : nodes[n].regions) {
      if (rkeys_[n].size() <= r.id) rkeys_[n].resize(size_t{r.id} + 1, nullptr);
      ucp_rkey_h k = nullptr;
      if (ucs_status_t s = ucp_ep_rkey_unpack(mine, r.rkey.data(), &k); s != UCS_OK) {
        return invalid_argument("rkey of region " + std::to_string(r.id) + " of node " +
                                std::to_string(n) + " cannot be unpacked: " + ucs_text(s));
      }
      rkeys_[n][r.id] = k;
    }
    lanes_[n] = parse_ep_info(ep_info_text(mine));
    channels_[n].strict = force_strict_ || !lanes_[n].single_lane;
    // No lane for RMA or atomics: UCX would emulate them with active
    // messages its target executes; the endpoint does so itself, in
    // channel order and with its own error handling (README.md).
    bool emulated = true;
    for (const Lane& l : lanes_[n].lanes) {
      emulated = emulated && !l.has("rma") && !l.has("rma_bw") && !l.has("amo");
    }
    channels_[n].am_rma = emulated && !force_strict_;
  }
  // Own-memory ops with the CPU only where no atomic is a NIC's: every
  // node's atomics on this node's memory are then this node's workers' CPU
  // atomics (UCX's software emulation), atomic with the CPU's.
  local_ops_ = true;
  for (const LaneInfo& l : lanes_) {
    for (const Lane& lane : l.lanes) local_ops_ = local_ops_ && !lane.has("amo");
  }
  return Status::ok();
}

bool UcxEndpoint::execute_local(const WorkRequest& wr, OpStatus* st) {
  if (!local_ops_ || wr.remote.node != self_) return false;
  Channel& ch = channels_[self_];
  // Behind the channel's ops in UCX, in order: post those.
  if (!ch.queued.empty() || !ch.ready.empty() || ch.count != 0) return false;
  *st = table_->check(wr, max_op_bytes_, &local_hint_);
  if (*st != OpStatus::kOk) return true;
  if (ch.closed || !fence_.allowed(self_)) {
    *st = OpStatus::kFenced;
    return true;
  }
  const RegionEntry* r = table_->find(self_, wr.remote.region);
  auto* at = reinterpret_cast<uint8_t*>(r->base + wr.remote.offset);
  std::atomic_thread_fence(std::memory_order_acquire);
  switch (wr.verb) {
    case Verb::kRead:
      std::memcpy(wr.local, at, wr.len);
      break;
    case Verb::kWrite:
      std::memcpy(at, wr.local, wr.len);
      // Durable at once (the contract asks it by the next READ).
      if (r->persistence == Persistence::kMsync) {
        const uintptr_t b = reinterpret_cast<uintptr_t>(at) & ~(kPage - 1);
        const uintptr_t e = (reinterpret_cast<uintptr_t>(at) + wr.len + kPage - 1) & ~(kPage - 1);
        if (pmem_msync(reinterpret_cast<void*>(b), e - b) != 0) *st = OpStatus::kTransportError;
      } else if (r->persistence != Persistence::kNone) {
        pmem_persist(at, wr.len);
      }
      break;
    case Verb::kCas: {
      uint64_t expected = wr.compare;
      __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(at), &expected, wr.operand, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      std::memcpy(wr.local, &expected, 8);
      break;
    }
    case Verb::kFaa: {
      const uint64_t old =
          __atomic_fetch_add(reinterpret_cast<uint64_t*>(at), wr.operand, __ATOMIC_SEQ_CST);
      std::memcpy(wr.local, &old, 8);
      break;
    }
  }
  std::atomic_thread_fence(std::memory_order_release);
  return true;
}

// A peer's worker went away or its connection failed: the ops on the
// endpoint complete with errors by themselves (kTransportError, or kFenced
// once the peer is fenced); counted only.
void UcxEndpoint::on_ep_error(void* arg, ucp_ep_h, ucs_status_t) {
  const auto* a = static_cast<const EpArg*>(arg);
  UcxEndpoint* self = a->owner;
  ++self->stats_.endpoint_errors;
  // The channel's ops waiting for the target's answer get none now.
  if (a->thread == self->thread_) {
    Channel& ch = self->channels_[a->node];
    ch.failed = true;
    self->fail_channel(ch, ch.closed ? OpStatus::kFenced : OpStatus::kTransportError);
  }
}

void UcxEndpoint::fail_channel(Channel& ch, OpStatus st) {
  for (size_t i = 0; i < ch.count; ++i) {
    Slot& s = ch.slots[(ch.head + i) % ch.slots.size()];
    if (!s.done && (s.am || s.kind == Kind::kPersist)) finish_now(&s, st);
  }
  ch.persists.clear();
}

void UcxEndpoint::close() {
  if (worker_ == nullptr) return;
  // Let UCX send what it still queues (wireup replies included: UCX 1.13
  // asserts when it must purge a pending wireup reply at destruction).
  // Bounded: until the worker was idle for a while, or 50 ms.
  const uint64_t until = now_ns() + 50'000'000;
  for (int idle = 0; idle < 256 && now_ns() < until;) {
    idle = ucp_worker_progress(worker_) != 0 ? 0 : idle + 1;
  }
  for (ucp_ep_h& e : eps_) {
    if (e == nullptr) continue;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(e, &p);
    if (UCS_PTR_IS_PTR(r)) closing_.push_back(r);
    e = nullptr;
  }
  // Bounded: a forced close completes locally.
  for (int i = 0; i < 100000 && !closing_.empty(); ++i) {
    ucp_worker_progress(worker_);
    size_t keep = 0;
    for (void* r : closing_) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) {
        closing_[keep++] = r;
      } else {
        ucp_request_free(r);
      }
    }
    closing_.resize(keep);
  }
  for (auto& per_node : rkeys_) {
    for (ucp_rkey_h k : per_node) {
      if (k != nullptr) ucp_rkey_destroy(k);
    }
    per_node.clear();
  }
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
}

// --- one-sided ---------------------------------------------------------------

uint8_t* UcxEndpoint::stage_alloc(Channel& ch, uint32_t len, uint32_t* consumed) {
  const uint64_t used = ch.stage_alloc - ch.stage_free;
  const uint64_t pos = ch.stage_alloc % kStageRingBytes;
  uint64_t waste = pos + len > kStageRingBytes ? kStageRingBytes - pos : 0;
  if (used + waste + len > kStageRingBytes) return nullptr;
  ch.stage_alloc += waste + len;
  *consumed = static_cast<uint32_t>(waste + len);
  return ch.stage.get() + (waste != 0 ? 0 : pos);
}

PostResult UcxEndpoint::post(const WorkRequest& wr) {
  const OpStatus st = table_->check(wr, max_op_bytes_, &local_hint_);
  if (st != OpStatus::kOk) {
    errors_.push_back({wr.wr_id, st, wr.verb, wr.remote.node});
    return PostResult::kOk;
  }
  Channel& ch = channels_[wr.remote.node];
  if (ch.used() >= depth_) return PostResult::kQueueFull;
  Op op{wr, 0};
  if (wr.verb == Verb::kWrite && wr.len <= kStageBytes) {
    uint8_t* at = stage_alloc(ch, wr.len, &op.stage_bytes);
    if (at == nullptr) return PostResult::kQueueFull;
    std::memcpy(at, wr.local, wr.len);
    op.wr.local = at;
    ++stats_.staged_writes;
  }
  ch.queued.push_back(op);
  ++ch.posted;
  return PostResult::kOk;
}

void UcxEndpoint::doorbell(NodeId peer) {
  if (peer >= nodes_) return;
  Channel& ch = channels_[peer];
  if (ch.queued.empty()) return;
  for (Op& op : ch.queued) ch.ready.push_back(op);
  ch.queued.clear();
  issue(ch);
}

UcxEndpoint::Slot* UcxEndpoint::push_slot(Channel& ch, Kind kind) {
  Slot* s = &ch.slots[(ch.head + ch.count) % ch.slots.size()];
  ++ch.count;
  *s = Slot();
  s->owner = this;
  s->ch = &ch;
  s->kind = kind;
  return s;
}

void UcxEndpoint::finish_now(Slot* s, OpStatus st) {
  s->done = true;
  s->status = st;
}

OpStatus UcxEndpoint::map_error(const Channel& ch) const {
  return ch.closed ? OpStatus::kFenced : OpStatus::kTransportError;
}

// A request UCX returned: done now (NULL or an error) or later (on_done).
void UcxEndpoint::track(Slot* s, ucs_status_ptr_t r) {
  Channel& ch = *s->ch;
  if (r == nullptr) {
    finish_now(s, OpStatus::kOk);
  } else if (UCS_PTR_IS_ERR(r)) {
    finish_now(s, map_error(ch));
  } else {
    ++ch.busy;
    if (s->verb != Verb::kRead || s->kind != Kind::kUser) ++ch.busy_writes;
  }
}

void UcxEndpoint::on_done(void* request, ucs_status_t status, void* user_data) {
  auto* s = static_cast<Slot*>(user_data);
  Channel& ch = *s->ch;
  s->done = true;
  s->status = status == UCS_OK ? OpStatus::kOk : s->owner->map_error(ch);
  --ch.busy;
  if (s->verb != Verb::kRead || s->kind != Kind::kUser) --ch.busy_writes;
  ucp_request_free(request);
}

// Whether every op issued on the channel completed at the target. A PUT's
// own completion is local (its source may be reused; the bytes may still
// be on their way), so after WRITEs a flush is issued first and waited for.
bool UcxEndpoint::drained(Channel& ch) {
  if (ch.busy > 0) return false;
  if (!ch.unflushed) return true;
  ch.unflushed = false;
  Slot* f = push_slot(ch, Kind::kFlush);
  f->verb = Verb::kWrite;
  ucp_request_param_t fp{};
  fp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  fp.cb.send = &UcxEndpoint::on_done;
  fp.user_data = f;
  track(f, ucp_ep_flush_nbx(ep(ch.peer, thread_), &fp));
  ++stats_.flushes;
  return f->done;
}

void UcxEndpoint::issue(Channel& ch) {
  while (!ch.ready.empty()) {
    if (!issue_one(ch, ch.ready.front())) return;
    ch.ready.pop_front();
  }
}

// Issues `op` (the channel's next), or returns false when it must wait for
// the channel to drain (strict ordering).
bool UcxEndpoint::issue_one(Channel& ch, Op& op) {
  const WorkRequest& wr = op.wr;
  const bool read = wr.verb == Verb::kRead;
  if (ch.closed || !fence_.allowed(ch.peer)) {
    Slot* s = push_slot(ch, Kind::kUser);
    s->wr_id = wr.wr_id;
    s->verb = wr.verb;
    s->report = true;  // errors complete even when unsignaled
    s->stage_bytes = op.stage_bytes;
    ++ch.user_slots;
    finish_now(s, OpStatus::kFenced);
    return true;
  }
  // Order (README.md, "Ordering"): READs pipeline behind READs; on one
  // lane, WRITEs and atomics pipeline behind each other; at any other
  // boundary the op waits until everything before it on the channel
  // completed at the target.
  if (ch.failed) {
    Slot* s = push_slot(ch, Kind::kUser);
    s->wr_id = wr.wr_id;
    s->verb = wr.verb;
    s->report = true;
    s->stage_bytes = op.stage_bytes;
    ++ch.user_slots;
    finish_now(s, OpStatus::kTransportError);
    return true;
  }
  // Over active messages the target executes the channel's ops in order.
  const bool pipelines = ch.am_rma || (ch.last_read ? read : (!read && !ch.strict));
  if (!pipelines && !drained(ch)) {
    ++stats_.waits;
    return false;
  }
  const RegionEntry* r = table_->find(ch.peer, wr.remote.region);
  const bool flushing = read && (!ch.dirty.empty() || ch.persist_failed);
  if (read && !ch.dirty.empty()) {
    Slot* p = push_slot(ch, Kind::kPersist);
    const uint32_t id = ch.next_persist++;
    ch.persists.emplace_back(id, p);
    send_persist(ch, p, id);
  }
  ucp_ep_h e = ep(ch.peer, thread_);
  ucp_rkey_h key = rkeys_[ch.peer][wr.remote.region];
  const uint64_t addr = r->base + wr.remote.offset;
  Slot* s = push_slot(ch, Kind::kUser);
  s->wr_id = wr.wr_id;
  s->verb = wr.verb;
  s->report = wr.signaled;
  s->flushing = flushing;
  s->stage_bytes = op.stage_bytes;
  ++ch.user_slots;
  if (ch.am_rma) {
    if (wr.verb == Verb::kWrite && r->persistence != Persistence::kNone) {
      PersistRange pr;
      pr.offset = wr.remote.offset;
      pr.len = wr.len;
      pr.region = wr.remote.region;
      if (!ch.dirty.empty() && ch.dirty.back().region == pr.region &&
          ch.dirty.back().offset + ch.dirty.back().len == pr.offset) {
        ch.dirty.back().len += pr.len;
      } else {
        ch.dirty.push_back(pr);
      }
    }
    issue_am(ch, wr, s);
    ch.last_read = read;
    return true;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &UcxEndpoint::on_done;
  p.user_data = s;
  ucs_status_ptr_t req = nullptr;
  switch (wr.verb) {
    case Verb::kRead:
      req = ucp_get_nbx(e, wr.local, wr.len, addr, key, &p);
      break;
    case Verb::kWrite:
      req = ucp_put_nbx(e, wr.local, wr.len, addr, key, &p);
      if (r->persistence != Persistence::kNone) {
        PersistRange pr;
        pr.offset = wr.remote.offset;
        pr.len = wr.len;
        pr.region = wr.remote.region;
        if (!ch.dirty.empty() && ch.dirty.back().region == pr.region &&
            ch.dirty.back().offset + ch.dirty.back().len == pr.offset) {
          ch.dirty.back().len += pr.len;
        } else {
          ch.dirty.push_back(pr);
        }
      }
      break;
    case Verb::kCas:
    case Verb::kFaa:
      // CSWAP (UCX: result = Y; if (X == Y) Y = Z): X, the buffer, is the
      // expected value; Z goes out in the reply buffer, which brings the old
      // value back. ADD: the buffer is the addend.
      s->operand = wr.verb == Verb::kCas ? wr.compare : wr.operand;
      if (wr.verb == Verb::kCas) std::memcpy(wr.local, &wr.operand, 8);
      p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
      p.datatype = ucp_dt_make_contig(8);
      p.reply_buffer = wr.local;
      req = ucp_atomic_op_nbx(e, wr.verb == Verb::kCas ? UCP_ATOMIC_OP_CSWAP : UCP_ATOMIC_OP_ADD,
                              &s->operand, 1, addr, key, &p);
      break;
  }
  track(s, req);
  ch.last_read = read;
  if (wr.verb == Verb::kWrite) {
    ch.unflushed = true;
    // A signaled WRITE completes when it completed at the target, as an RC
    // WRITE's completion does (a PUT's own is local): its completion is
    // reported by a flush issued right behind it (pipelined, no wait).
    if (s->report && !(s->done && s->status != OpStatus::kOk)) {
      s->report = false;
      s->paired = true;
      Slot* f = push_slot(ch, Kind::kFlush);
      f->verb = Verb::kWrite;
      f->wr_id = wr.wr_id;
      f->report = true;
      ucp_request_param_t fp{};
      fp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      fp.cb.send = &UcxEndpoint::on_done;
      fp.user_data = f;
      track(f, ucp_ep_flush_nbx(e, &fp));
      ch.unflushed = false;
    }
  }
  return true;
}

int UcxEndpoint::retire(Channel& ch, Completion* out, int max) {
  int n = 0;
  while (ch.count > 0 && n < max) {
    Slot& s = ch.slots[ch.head];
    if (!s.done) break;
    ch.stage_free += s.stage_bytes;
    if (s.kind == Kind::kPersist) {
      if (s.status != OpStatus::kOk) ch.persist_failed = true;
    } else if (s.kind == Kind::kUser) {
      --ch.user_slots;
      ++ch.retired;
      OpStatus st = s.status;
      // Sticky, as an RNIC's queue pair in the error state: every flushing
      // READ after a failed persist fails.
      if (st == OpStatus::kOk && s.flushing && ch.persist_failed) st = OpStatus::kTransportError;
      if (s.report || st != OpStatus::kOk) out[n++] = {s.wr_id, st, s.verb, ch.peer};
      // A failed WRITE's error was its completion: not its flush's too.
      ch.skip_flush_report = s.paired && st != OpStatus::kOk;
    } else if (s.report) {  // the flush that completes a signaled WRITE
      if (!ch.skip_flush_report) out[n++] = {s.wr_id, s.status, s.verb, ch.peer};
      ch.skip_flush_report = false;
    }
    ch.head = (ch.head + 1) % ch.slots.size();
    --ch.count;
  }
  return n;
}

void UcxEndpoint::progress() {
  for (int i = 0; i < kProgressRounds && ucp_worker_progress(worker_) != 0; ++i) {
  }
  if (!out_am_.empty()) {
    std::vector<OutAm> todo;
    todo.swap(out_am_);
    for (const OutAm& o : todo) send_queued(o.b, o.node, o.thread, o.id);
  }
  if (!replies_.empty()) send_replies();
}

int UcxEndpoint::poll(Completion* out, int max) {
  apply_epoch();
  progress();
  int n = 0;
  while (errors_head_ < errors_.size() && n < max) out[n++] = errors_[errors_head_++];
  if (errors_head_ == errors_.size() && errors_head_ != 0) {
    errors_.clear();
    errors_head_ = 0;
  }
  for (size_t i = 0; i < channels_.size() && n < max; ++i) {
    Channel& ch = channels_[(next_channel_ + i) % channels_.size()];
    if (ch.count == 0 && ch.ready.empty()) continue;
    n += retire(ch, out + n, max - n);
    if (!ch.ready.empty()) issue(ch);
  }
  if (++next_channel_ >= channels_.size()) next_channel_ = 0;
  return n;
}

uint64_t UcxEndpoint::posted(NodeId peer) const {
  return peer < nodes_ ? channels_[peer].posted : 0;
}

uint64_t UcxEndpoint::retired(NodeId peer) const {
  return peer < nodes_ ? channels_[peer].retired : 0;
}

uint32_t UcxEndpoint::outstanding(NodeId peer) const {
  return peer < nodes_ ? channels_[peer].used() : 0;
}

bool UcxEndpoint::wait_idle(long ns) {
  if (!inbox_.empty()) return false;  // messages to hand out
  timespec ts{0, ns};
  if (event_fd_ < 0 || worker_ == nullptr) {
    nanosleep(&ts, nullptr);
    return true;
  }
  // Arming fails (BUSY) while UCX still has events to progress.
  const ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_ERR_BUSY) return false;
  if (s != UCS_OK) {
    nanosleep(&ts, nullptr);
    return true;
  }
  pollfd p{event_fd_, POLLIN, 0};
  ++stats_.idle_waits;
  if (ppoll(&p, 1, &ts, nullptr) > 0) ++stats_.idle_wakeups;
  return true;
}

// --- membership ----------------------------------------------------------------

void UcxEndpoint::apply_epoch() {
  const uint64_t e = fence_.own_epoch();
  if (e == seen_epoch_) return;
  seen_epoch_ = e;
  for (NodeId n = 0; n < nodes_; ++n) {
    if (peer_closed_[n]) continue;
    if (!fence_.member(self_) || !fence_.member(n)) close_peer(n);
  }
  applied_epoch_.store(e, std::memory_order_release);
}

void UcxEndpoint::close_peer(NodeId n) {
  peer_closed_[n] = 1;
  Channel& ch = channels_[n];
  ch.closed = true;
  // Persist requests nobody will answer now, and the ops still waiting to
  // be issued, complete kFenced; ops UCX already carries complete as UCX
  // reports them.
  fail_channel(ch, OpStatus::kFenced);
  issue(ch);
  // Tell the removed node's threads (it may not know yet): from then on
  // they issue and send nothing (on_fenced_notice).
  if (cut_off_ || !fence_.member(self_) || n == self_ || eps_.empty()) return;
  for (ThreadId t = 0; t < threads_; ++t) {
    SendBuf* b = take_send_buf();
    b->bytes.resize(sizeof(AmHeader));
    AmHeader h{self_, thread_, static_cast<uint32_t>(seen_epoch_)};
    std::memcpy(b->bytes.data(), &h, sizeof h);
    (void)send_eager(ep(n, t), kAmFenced, b);
  }
}

ucs_status_t UcxEndpoint::on_fenced_notice(void* arg, const void*, size_t, void* data,
                                           size_t length, const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  AmHeader h;
  if (length != sizeof h) return UCS_OK;
  std::memcpy(&h, data, sizeof h);
  // Only a member (in this node's view) can remove this node.
  if (h.src_node >= self->nodes_ || h.src_node == self->self_ || !self->fence_.member(h.src_node)) {
    return UCS_OK;
  }
  if (!self->cut_off_) {
    self->cut_off_ = true;
    ++self->stats_.fenced_notices;
    for (NodeId n = 0; n < self->nodes_; ++n) {
      if (!self->peer_closed_[n]) self->close_peer(n);
    }
  }
  return UCS_OK;
}

}  // namespace drtmx::r2::ucx
