#include "r2/verbs/verbs_endpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "r2/verbs/msg_header.h"
#include "r2/verbs/wr_id.h"

namespace drtmx::r2::verbs {

namespace {
constexpr int kPollBatch = 32;
constexpr uint32_t kMaxInline = kInlineBelow;
}  // namespace

VerbsEndpoint::VerbsEndpoint(ThreadId t, const FabricConfig& cfg, const CreditPlan& plan,
                             const SharedTables* tables)
    : thread_(t),
      node_(cfg.node),
      num_nodes_(cfg.num_nodes),
      threads_(cfg.threads),
      depth_(cfg.send_queue_depth),
      tables_(tables),
      local_pending_(cfg.num_nodes, 0),
      wcs_(kPollBatch),
      ud_sq_(cfg.send_queue_depth),
      ud_chain_(ud_sq_.depth()),
      credits_(uint32_t{cfg.num_nodes} * cfg.threads, plan),
      credit_due_flag_(size_t{cfg.num_nodes} * cfg.threads, 0) {
  channels_.reserve(num_nodes_);
  for (NodeId n = 0; n < num_nodes_; ++n) channels_.emplace_back(n, depth_);
  const uint32_t slots = round_up_pow2(ud_sq_.depth());
  ud_mask_ = slots - 1;
  ud_dest_.assign(slots, 0);
  ud_piggy_.assign(slots, 0);
  ud_data_.assign(slots, 0);
}

VerbsEndpoint::~VerbsEndpoint() = default;

Result<std::unique_ptr<VerbsEndpoint>> VerbsEndpoint::open(ThreadId t, const std::string& device,
                                                           const FabricConfig& cfg,
                                                           const CreditPlan& plan,
                                                           const SharedTables* tables) {
  std::unique_ptr<VerbsEndpoint> ep(new VerbsEndpoint(t, cfg, plan, tables));
  Status st = ep->init(device, cfg);
  if (!st.is_ok()) return st.with_context("thread " + std::to_string(t));
  return ep;
}

Status VerbsEndpoint::init(const std::string& device, const FabricConfig& cfg) {
  auto ctx = open_device(device);
  if (!ctx.is_ok()) return ctx.status();
  ctx_ = std::move(ctx).value();
  auto port = query_port(ctx_.get(), device, cfg.ib_port, cfg.gid_index);
  if (!port.is_ok()) return port.status();
  port_ = std::move(port).value();

  const uint32_t port_mtu = mtu_bytes(port_.active_mtu);
  local_msg_mtu_ = std::min(cfg.mtu, port_mtu - kMsgHeaderBytes);
  msg_mtu_ = local_msg_mtu_;

  auto too_big = [&](const std::string& what, uint64_t want, int limit) {
    return invalid_argument("verbs: " + what + " needs " + std::to_string(want) + " entries but " +
                            device + " allows " + std::to_string(limit));
  };
  const uint64_t rc_cqe = uint64_t{depth_} * num_nodes_ + 16;
  if (rc_cqe > static_cast<uint64_t>(port_.max_cqe)) {
    return too_big("the one-sided CQ (send queue depth x nodes)", rc_cqe, port_.max_cqe);
  }
  if (cfg.recv_buffers + 16 > static_cast<uint64_t>(port_.max_cqe) ||
      cfg.recv_buffers > static_cast<uint64_t>(port_.max_qp_wr)) {
    return too_big("the UD receive queue (receive buffers)", cfg.recv_buffers,
                   std::min(port_.max_cqe, port_.max_qp_wr));
  }
  if (depth_ > static_cast<uint32_t>(port_.max_qp_wr)) {
    return too_big("a send queue (send queue depth)", depth_, port_.max_qp_wr);
  }

  errno = 0;
  pd_.reset(ibv_alloc_pd(ctx_.get()));
  if (!pd_) return unavailable("verbs: ibv_alloc_pd on " + device + " failed");
  auto make_cq = [&](int cqe, CqPtr* out) -> Status {
    out->reset(ibv_create_cq(ctx_.get(), cqe, nullptr, nullptr, 0));
    if (!*out) {
      return unavailable("verbs: ibv_create_cq(" + std::to_string(cqe) + ") on " + device +
                         " failed");
    }
    return Status::ok();
  };
  DRTMX_RETURN_IF_ERROR(make_cq(static_cast<int>(rc_cqe), &rc_cq_));
  DRTMX_RETURN_IF_ERROR(make_cq(static_cast<int>(ud_sq_.depth() + 16), &ud_send_cq_));
  DRTMX_RETURN_IF_ERROR(make_cq(static_cast<int>(cfg.recv_buffers + 16), &ud_recv_cq_));

  for (NodeId n = 0; n < num_nodes_; ++n) {
    auto qp = create_rc_qp(pd_.get(), rc_cq_.get(), port_, depth_, kMaxInline);
    if (!qp.is_ok()) return qp.status();
    rc_qps_.push_back(std::move(qp).value());
  }
  {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(rc_qps_[0].get(), &a, IBV_QP_CAP, &ia) == 0) {
      rc_max_inline_ = ia.cap.max_inline_data;
    }
  }
  auto ud = create_ud_qp(pd_.get(), ud_send_cq_.get(), ud_recv_cq_.get(), port_, ud_sq_.depth(),
                         cfg.recv_buffers, kUdQkey, kMaxInline);
  if (!ud.is_ok()) return ud.status();
  ud_qp_ = std::move(ud).value();
  {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(ud_qp_.get(), &a, IBV_QP_CAP, &ia) == 0) {
      ud_max_inline_ = ia.cap.max_inline_data;
    }
  }

  // Message buffers.
  send_buf_bytes_ = kMsgHeaderBytes + local_msg_mtu_;
  send_mem_.assign(size_t{ud_mask_ + 1} * send_buf_bytes_, 0);
  recv_ =
      std::make_unique<RecvRing>(cfg.recv_buffers, kGrhBytes + kMsgHeaderBytes + local_msg_mtu_);
  send_mr_.reset(ibv_reg_mr(pd_.get(), send_mem_.data(), send_mem_.size(), IBV_ACCESS_LOCAL_WRITE));
  recv_mr_.reset(
      ibv_reg_mr(pd_.get(), recv_->memory(), recv_->memory_bytes(), IBV_ACCESS_LOCAL_WRITE));
  if (!send_mr_ || !recv_mr_) {
    return unavailable("verbs: ibv_reg_mr of the message buffers on " + device +
                       " failed (raise the locked-memory limit: `ulimit -l unlimited`)");
  }
  recv_wrs_.resize(cfg.recv_buffers);
  recv_sges_.resize(cfg.recv_buffers);
  return Status::ok();
}

Status VerbsEndpoint::odp_support() const {
  ibv_device_attr_ex attr{};
  if (int rc = ibv_query_device_ex(ctx_.get(), nullptr, &attr); rc != 0) {
    return not_supported("verbs: ibv_query_device_ex on " + port_.device + " failed (" +
                         std::strerror(rc) +
                         "), so on-demand paging cannot be checked; growable regions need it");
  }
  const uint32_t need = IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_ATOMIC;
  if ((attr.odp_caps.general_caps & IBV_ODP_SUPPORT) == 0 ||
      (attr.odp_caps.per_transport_caps.rc_odp_caps & need) != need) {
    return not_supported(
        "verbs: device " + port_.device +
        " has no on-demand paging (ODP) for RC READ/WRITE/atomics, which growable regions need "
        "(their pages do not exist until committed, so they cannot be pinned); use an RNIC "
        "with ODP (e.g. mlx5), or register the tables whole (register_region) with their "
        "maximum size");
  }
  return Status::ok();
}

void VerbsEndpoint::prefetch(uint8_t* base, uint64_t bytes) {
  auto lkey = lkeys_.find(base, bytes);
  if (!lkey) return;
  // One SGE carries at most 4 GiB - 1: 1 GiB at a time.
  constexpr uint64_t kChunk = uint64_t{1} << 30;
  for (uint64_t at = 0; at < bytes; at += kChunk) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(base + at);
    sge.length = static_cast<uint32_t>(std::min(kChunk, bytes - at));
    sge.lkey = *lkey;
    (void)ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
                        &sge, 1);
  }
}

Result<uint32_t> VerbsEndpoint::register_region(uint8_t* base, size_t size, bool on_demand) {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
               IBV_ACCESS_REMOTE_ATOMIC;
  if (on_demand) access |= IBV_ACCESS_ON_DEMAND;
  errno = 0;
  MrPtr mr(ibv_reg_mr(pd_.get(), base, size, access));
  if (!mr) {
    const int err = errno;
    return unavailable("verbs: ibv_reg_mr of " + std::to_string(size) + " bytes on " +
                       port_.device + " (thread " + std::to_string(thread_) +
                       ") failed: " + std::strerror(err ? err : EINVAL) +
                       " (raise the locked-memory limit: `ulimit -l unlimited`)");
  }
  lkeys_.add(base, size, mr->lkey);
  const uint32_t rkey = mr->rkey;
  mrs_.push_back(std::move(mr));
  return rkey;
}

ThreadDesc VerbsEndpoint::describe() const {
  ThreadDesc d;
  d.ud_qpn = ud_qp_->qp_num;
  d.qkey = kUdQkey;
  d.lid = port_.lid;
  d.port = port_.port;
  d.active_mtu = static_cast<uint8_t>(port_.active_mtu);
  std::memcpy(d.gid.data(), port_.gid.raw, 16);
  for (const QpPtr& qp : rc_qps_) d.rc_qpn.push_back(qp->qp_num);
  return d;
}

Status VerbsEndpoint::connect(const std::vector<NodeDesc>& nodes, uint32_t msg_mtu) {
  msg_mtu_ = std::min(msg_mtu, local_msg_mtu_);
  ud_qpns_.assign(size_t{num_nodes_} * threads_, 0);
  for (NodeId n = 0; n < num_nodes_; ++n) {
    const ThreadDesc& peer = nodes[n].thread_descs[thread_];
    // Our QP toward n <-> thread `thread_` of n's QP toward us.
    Status st = connect_rc_qp(rc_qps_[n].get(), port_, peer, peer.rc_qpn[node_]);
    if (!st.is_ok()) return st.with_context("connecting to node " + std::to_string(n));
    auto ah = create_ah(pd_.get(), port_, peer);
    if (!ah.is_ok()) return ah.status().with_context("address of node " + std::to_string(n));
    ahs_.push_back(std::move(ah).value());
    for (ThreadId t = 0; t < threads_; ++t) {
      ud_qpns_[peer_index(n, t)] = nodes[n].thread_descs[t].ud_qpn;
    }
  }
  post_receives();
  if (recv_->posted() != recv_->count()) {
    return unavailable("verbs: could only post " + std::to_string(recv_->posted()) + " of " +
                       std::to_string(recv_->count()) + " receive buffers on " + port_.device);
  }
  connected_ = true;
  return Status::ok();
}

// --- one-sided ---------------------------------------------------------------

PostResult VerbsEndpoint::post(const WorkRequest& wr) {
  OpStatus st = tables_->regions.check(wr, tables_->max_op_bytes);
  if (st == OpStatus::kOk && !fence_.allowed(wr.remote.node)) st = OpStatus::kFenced;
  if (st == OpStatus::kOk) {
    ChannelTables t{&tables_->regions, &tables_->rkeys, &lkeys_, thread_, rc_max_inline_};
    PostOutcome o = channels_[wr.remote.node].post(wr, t);
    if (o.local_error == OpStatus::kOk) return o.result;
    st = o.local_error;
  }
  local_done_.push_back({wr.wr_id, st, wr.verb, wr.remote.node});
  if (wr.remote.node < num_nodes_) ++local_pending_[wr.remote.node];
  return PostResult::kOk;
}

void VerbsEndpoint::doorbell(NodeId peer) {
  if (peer >= num_nodes_) return;
  RcChannel& ch = channels_[peer];
  ibv_send_wr* head = ch.chain().link();
  if (head == nullptr) return;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(rc_qps_[peer].get(), head, &bad) == 0) {
    ch.on_posted();
    return;
  }
  ch.on_post_failed(bad != nullptr ? ch.chain().index_of(bad) : 0);
  any_unposted_ = true;
}

int VerbsEndpoint::poll(Completion* out, int max) {
  int n = 0;
  while (n < max && local_head_ < local_done_.size()) {
    const Completion& c = local_done_[local_head_++];
    if (c.peer < num_nodes_) --local_pending_[c.peer];
    out[n++] = c;
  }
  if (local_head_ == local_done_.size()) {
    local_done_.clear();
    local_head_ = 0;
  }
  while (n < max) {
    const int want = std::min(max - n, kPollBatch);
    const int got = ibv_poll_cq(rc_cq_.get(), want, wcs_.data());
    if (got <= 0) break;
    for (int i = 0; i < got; ++i) {
      WrTag tag;
      if (!decode_wr_id(wcs_[i].wr_id, &tag) || tag.kind != WrKind::kRc ||
          tag.channel >= num_nodes_) {
        continue;
      }
      if (channels_[tag.channel].on_completion(tag.seq, wcs_[i].status == IBV_WC_SUCCESS,
                                               &out[n])) {
        ++n;
      }
    }
    if (got < want) break;
  }
  if (any_unposted_) {
    // After the CQ, so earlier requests of a channel complete first.
    n += drain_unposted(out + n, max - n);
  }
  return n;
}

int VerbsEndpoint::drain_unposted(Completion* out, int max) {
  int n = 0;
  bool left = false;
  for (RcChannel& ch : channels_) {
    if (n < max) n += ch.drain_unposted(out + n, max - n);
    left = left || ch.has_unposted();
  }
  any_unposted_ = left;
  return n;
}

uint64_t VerbsEndpoint::posted(NodeId peer) const {
  return peer < num_nodes_ ? channels_[peer].posted() : 0;
}

uint64_t VerbsEndpoint::retired(NodeId peer) const {
  return peer < num_nodes_ ? channels_[peer].retired() : 0;
}

void VerbsEndpoint::retire_posted(NodeId peer) {
  if (peer >= num_nodes_ || !fence_.allowed(peer)) return;
  if (channels_[peer].post_retire_marker() == PostResult::kOk) doorbell(peer);
}

uint32_t VerbsEndpoint::outstanding(NodeId peer) const {
  if (peer >= num_nodes_) return 0;
  return channels_[peer].outstanding() + local_pending_[peer];
}

bool VerbsEndpoint::is_registered(const void* p, size_t len) const {
  return tables_->regions.is_local(p, len);
}

// --- messaging ---------------------------------------------------------------

void VerbsEndpoint::queue_ud(uint32_t peer, MsgType type, const void* payload, uint32_t len) {
  const uint32_t seq = ud_next_seq_++;
  uint8_t* buf = send_buf(seq);
  MsgHeader h;
  h.type = type;
  h.src_node = node_;
  h.src_thread = thread_;
  h.credits = credits_.take_owed(peer);
  encode_msg_header(h, buf);
  if (len > 0) std::memcpy(buf + kMsgHeaderBytes, payload, len);
  ud_dest_[seq & ud_mask_] = peer;
  ud_data_[seq & ud_mask_] = type == MsgType::kData;
  ud_piggy_[seq & ud_mask_] = h.credits;
  bool forced = false;
  const bool signaled = ud_sq_.on_post(false, &forced);
  UdWrParams p;
  p.ah = ahs_[peer / threads_].get();
  p.remote_qpn = ud_qpns_[peer];
  p.remote_qkey = kUdQkey;
  p.buf = reinterpret_cast<uintptr_t>(buf);
  p.len = kMsgHeaderBytes + len;
  p.lkey = send_mr_->lkey;
  p.signaled = signaled;
  p.ibv_wr_id = encode_wr_id({WrKind::kUdSend, forced ? kWrFlagForced : uint8_t{0}, 0, seq});
  p.max_inline = ud_max_inline_;
  ibv_send_wr* w = ud_chain_.next_wr();
  fill_ud_wr(p, w, ud_chain_.next_sge());
  ud_chain_.commit();
}

SendResult VerbsEndpoint::send(NodeId node, ThreadId thread, const void* msg, uint32_t len) {
  if (node >= num_nodes_ || thread >= threads_) return SendResult::kBadPeer;
  if (len > msg_mtu_) return SendResult::kTooLarge;
  if (!connected_) return SendResult::kNoSpace;
  if (!fence_.allowed(node)) return SendResult::kFenced;
  if (!ud_sq_.has_room()) reap_ud_sends();
  if (!ud_sq_.has_room() || ud_chain_.full()) return SendResult::kNoSpace;
  const uint32_t peer = peer_index(node, thread);
  if (!credits_.try_consume(peer)) return SendResult::kNoSpace;
  queue_ud(peer, MsgType::kData, msg, len);
  return SendResult::kOk;
}

void VerbsEndpoint::flush_sends() {
  ibv_send_wr* head = ud_chain_.link();
  if (head == nullptr) return;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(ud_qp_.get(), head, &bad) != 0) {
    // The entries from `bad` on never left: give their credits back (data
    // credit taken, owed credits piggybacked) and free their slots.
    for (uint32_t i = bad ? ud_chain_.index_of(bad) : 0; i < ud_chain_.size(); ++i) {
      const ibv_send_wr& w = ud_chain_.at(i);
      WrTag tag;
      if (!decode_wr_id(w.wr_id, &tag)) continue;
      const uint32_t slot = tag.seq & ud_mask_;
      const uint32_t dest = ud_dest_[slot];
      if (ud_data_[slot]) credits_.on_returned(dest, 1);
      credits_.restore_owed(dest, ud_piggy_[slot]);
      if (w.send_flags & IBV_SEND_SIGNALED) ud_sq_.on_signaled_completion();
    }
  }
  ud_chain_.clear();
}

void VerbsEndpoint::reap_ud_sends() {
  for (;;) {
    const int got = ibv_poll_cq(ud_send_cq_.get(), kPollBatch, wcs_.data());
    if (got <= 0) return;
    for (int i = 0; i < got; ++i) {
      WrTag tag;
      if (!decode_wr_id(wcs_[i].wr_id, &tag) || tag.kind != WrKind::kUdSend) continue;
      // UD is unreliable: a failed send is a lost message. Only signaled
      // sends (the forced ones) free slots; error CQEs of unsignaled ones
      // are covered by the next signaled one.
      if (tag.forced()) ud_sq_.on_signaled_completion();
    }
    if (got < kPollBatch) return;
  }
}

void VerbsEndpoint::post_receives() {
  const auto& todo = recv_->to_post();
  const uint32_t n = static_cast<uint32_t>(todo.size());
  if (n == 0) return;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t idx = todo[i];
    recv_sges_[i].addr = reinterpret_cast<uintptr_t>(recv_->buffer(idx));
    recv_sges_[i].length = recv_->buf_bytes();
    recv_sges_[i].lkey = recv_mr_->lkey;
    recv_wrs_[i].wr_id = encode_wr_id({WrKind::kUdRecv, 0, 0, idx});
    recv_wrs_[i].sg_list = &recv_sges_[i];
    recv_wrs_[i].num_sge = 1;
    recv_wrs_[i].next = i + 1 < n ? &recv_wrs_[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(ud_qp_.get(), recv_wrs_.data(), &bad) == 0) {
    recv_->on_posted(n);
  } else {
    recv_->on_posted(bad ? static_cast<uint32_t>(bad - recv_wrs_.data()) : 0);
  }
}

void VerbsEndpoint::return_credits() {
  bool queued = false;
  size_t keep = 0;
  for (size_t i = 0; i < credit_due_.size(); ++i) {
    const uint32_t peer = credit_due_[i];
    if (!credits_.explicit_return_due(peer)) {  // piggybacked meanwhile
      credit_due_flag_[peer] = 0;
      continue;
    }
    if (!ud_sq_.has_room()) reap_ud_sends();
    if (!ud_sq_.has_room() || ud_chain_.full()) {
      credit_due_[keep++] = peer;  // retry at the next poll_messages
      continue;
    }
    queue_ud(peer, MsgType::kCredit, nullptr, 0);
    credit_due_flag_[peer] = 0;
    queued = true;
  }
  credit_due_.resize(keep);
  if (queued) flush_sends();
}

int VerbsEndpoint::poll_messages(Message* out, int max) {
  if (!connected_) return 0;
  recv_->release_held(&released_);
  for (const RecvRing::Held& h : released_) {
    if (credits_.on_consumed(h.peer) && !credit_due_flag_[h.peer]) {
      credit_due_flag_[h.peer] = 1;
      credit_due_.push_back(h.peer);
    }
  }
  post_receives();
  reap_ud_sends();

  int n = 0;
  while (n < max) {
    const int want = std::min(max - n, kPollBatch);
    const int got = ibv_poll_cq(ud_recv_cq_.get(), want, wcs_.data());
    if (got <= 0) break;
    for (int i = 0; i < got; ++i) {
      const ibv_wc& wc = wcs_[i];
      WrTag tag;
      if (!decode_wr_id(wc.wr_id, &tag) || tag.kind != WrKind::kUdRecv ||
          tag.seq >= recv_->count()) {
        continue;
      }
      const uint32_t idx = tag.seq;
      MsgHeader h;
      const uint8_t* body = recv_->buffer(idx) + kGrhBytes;
      if (wc.status != IBV_WC_SUCCESS || wc.byte_len < kGrhBytes ||
          !decode_msg_header(body, wc.byte_len - kGrhBytes, &h) || h.src_node >= num_nodes_ ||
          h.src_thread >= threads_) {
        recv_->on_received(idx, false, 0);
        continue;
      }
      if (!fence_.member(h.src_node) || !fence_.member(node_)) {
        recv_->on_received(idx, false, 0);  // a non-member's (or we were removed): dropped
        continue;
      }
      const uint32_t peer = peer_index(h.src_node, h.src_thread);
      if (h.credits != 0) credits_.on_returned(peer, h.credits);
      if (h.type == MsgType::kCredit) {
        recv_->on_received(idx, false, 0);
        continue;
      }
      out[n++] = Message{h.src_node, h.src_thread, wc.byte_len - kGrhBytes - kMsgHeaderBytes,
                         body + kMsgHeaderBytes};
      recv_->on_received(idx, true, peer);
    }
    if (got < want) break;
  }
  post_receives();  // buffers of credit-only and dropped messages
  if (!credit_due_.empty()) return_credits();
  return n;
}

void VerbsEndpoint::fence_qps(const NodeSet& live) {
  for (NodeId n = 0; n < num_nodes_ && n < rc_qps_.size(); ++n) {
    if (live.test(n) || n == node_ || !rc_qps_[n]) continue;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)ibv_modify_qp(rc_qps_[n].get(), &a, IBV_QP_STATE);
  }
}

}  // namespace drtmx::r2::verbs
