// VerbsEndpoint: one worker thread's endpoint on an RDMA device.
//
// Resources (all its own — nothing is shared with other threads' endpoints,
// because a shared ibv_context falsely serializes threads):
//   * an ibv_context and a PD on the chosen device;
//   * an RC QP per node (index = node id, this node included) for one-sided
//     ops, all completing into one CQ; thread t's QP toward node B is
//     connected to thread t's QP toward this node on B;
//   * a UD QP for messaging with its own send and receive CQs,
//     `recv_buffers` pre-posted receive buffers (GRH + header + mtu each) and
//     a ring of registered send buffers;
//   * an MR per registered region in its PD (so every thread has its own
//     lkey/rkey for every region), plus MRs for the message buffers.
//
// Life cycle: open() and register_region()/describe()/connect() are called
// by the fabric's set-up thread; afterwards only the worker thread that owns
// the endpoint calls the Endpoint methods (one thread at a time).
//
// Error completions: a request that fails RegionTable::check never touches
// the wire and completes with its status at the next poll(), possibly ahead
// of completions of requests posted earlier on the same channel. A CQE with
// any error status completes its request with kTransportError (also when the
// request was unsignaled).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "r2/common/fence.h"
#include "r2/common/region_table.h"
#include "r2/common/send_queue.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"
#include "r2/verbs/credits.h"
#include "r2/verbs/descriptors.h"
#include "r2/verbs/keys.h"
#include "r2/verbs/msg_header.h"
#include "r2/verbs/rc_channel.h"
#include "r2/verbs/recv_ring.h"
#include "r2/verbs/verbs_device.h"
#include "r2/verbs/wr_chain.h"

namespace drtmx::r2::verbs {

inline constexpr uint32_t kUdQkey = 0x11111111;

// Read-only (after connect) state every endpoint of a fabric shares; owned
// by the fabric.
struct SharedTables {
  RegionTable regions;
  RkeyTable rkeys;
  uint32_t max_op_bytes = 0;
};

class VerbsEndpoint final : public Endpoint {
 public:
  static Result<std::unique_ptr<VerbsEndpoint>> open(ThreadId t, const std::string& device,
                                                     const FabricConfig& cfg,
                                                     const CreditPlan& plan,
                                                     const SharedTables* tables);
  ~VerbsEndpoint() override;

  // --- set-up thread --------------------------------------------------------
  const PortInfo& port() const { return port_; }
  // Largest payload this endpoint can receive (its port's MTU minus header).
  uint32_t local_msg_mtu() const { return local_msg_mtu_; }
  // Registers [base, base + size) in this thread's PD; returns the rkey.
  // on_demand: with on-demand paging (IBV_ACCESS_ON_DEMAND; a growable
  // region, whose pages mostly do not exist): nothing is pinned, the RNIC
  // faults pages in through the kernel. Check odp_support() first.
  Result<uint32_t> register_region(uint8_t* base, size_t size, bool on_demand = false);
  // Ok when the device does on-demand paging for RC READ, WRITE and
  // atomics (ibv_query_device_ex odp_caps); else kNotSupported saying so
  // and what to do.
  Status odp_support() const;
  // Any thread, after register_region(on_demand): asks the RNIC to map
  // [base, base + bytes) of an on-demand region now (ibv_advise_mr
  // PREFETCH_WRITE, synchronous), so its first one-sided op there does not
  // take a page fault. Advice: a failure only means the fault comes later.
  void prefetch(uint8_t* base, uint64_t bytes);
  ThreadDesc describe() const;
  // Connects RC QPs, creates address handles, posts the receive buffers.
  Status connect(const std::vector<NodeDesc>& nodes, uint32_t msg_mtu);

  // --- Endpoint (worker thread) --------------------------------------------
  ThreadId thread() const override { return thread_; }
  PostResult post(const WorkRequest& wr) override;
  void doorbell(NodeId peer) override;
  int poll(Completion* out, int max) override;
  uint32_t outstanding(NodeId peer) const override;
  uint32_t send_queue_depth() const override { return depth_; }
  uint64_t posted(NodeId peer) const override;
  uint64_t retired(NodeId peer) const override;
  void retire_posted(NodeId peer) override;
  uint32_t mtu() const override { return msg_mtu_; }
  SendResult send(NodeId node, ThreadId thread, const void* msg, uint32_t len) override;
  void flush_sends() override;
  int poll_messages(Message* out, int max) override;
  bool is_registered(const void* p, size_t len) const override;

  // --- membership (any thread; see Fabric::apply_membership) --------------
  // Sets the check of this node's own view (before the worker starts).
  void attach_fence(FenceCheck fence) { fence_ = std::move(fence); }
  // Moves the RC QPs to the nodes not in `live` to the error state: the
  // RNIC refuses their requests and flushes ours. Thread-safe in
  // rdma-core (ibv_modify_qp may run beside the worker's ibv_post_send).
  void fence_qps(const NodeSet& live);

 private:
  VerbsEndpoint(ThreadId t, const FabricConfig& cfg, const CreditPlan& plan,
                const SharedTables* tables);
  Status init(const std::string& device, const FabricConfig& cfg);

  uint32_t peer_index(NodeId n, ThreadId t) const { return uint32_t{n} * threads_ + t; }
  uint8_t* send_buf(uint32_t seq) {
    return send_mem_.data() + size_t{seq & ud_mask_} * send_buf_bytes_;
  }
  // Queues one UD message (header + payload); caller checked room/credits.
  void queue_ud(uint32_t peer, MsgType type, const void* payload, uint32_t len);
  int drain_unposted(Completion* out, int max);
  void reap_ud_sends();
  void post_receives();
  void return_credits();

  const ThreadId thread_;
  const NodeId node_;
  const uint16_t num_nodes_;
  const uint16_t threads_;
  const uint32_t depth_;
  const SharedTables* tables_;

  // Device objects; declaration order = reverse destruction order.
  ContextPtr ctx_;
  PdPtr pd_;
  CqPtr rc_cq_, ud_send_cq_, ud_recv_cq_;
  std::vector<MrPtr> mrs_;  // regions, then message buffers
  MrPtr send_mr_, recv_mr_;
  std::vector<AhPtr> ahs_;     // [node]
  std::vector<QpPtr> rc_qps_;  // [node]
  QpPtr ud_qp_;
  PortInfo port_;
  uint32_t rc_max_inline_ = 0;
  uint32_t ud_max_inline_ = 0;

  // One-sided.
  LocalKeys lkeys_;
  std::vector<RcChannel> channels_;     // [node]
  std::vector<Completion> local_done_;  // failed checks, delivered at poll()
  size_t local_head_ = 0;
  std::vector<uint32_t> local_pending_;  // [node] failed checks not yet polled
  bool any_unposted_ = false;
  std::vector<ibv_wc> wcs_;

  // Messaging.
  uint32_t local_msg_mtu_ = 0;
  uint32_t msg_mtu_ = 0;
  uint32_t send_buf_bytes_ = 0;
  std::vector<uint8_t> send_mem_;
  uint32_t ud_mask_ = 0;
  SendQueue ud_sq_;
  WrChain ud_chain_;
  uint32_t ud_next_seq_ = 0;
  std::vector<uint32_t> ud_dest_;   // [seq & mask] peer index of the message
  std::vector<uint16_t> ud_piggy_;  // [seq & mask] credits it returns
  std::vector<uint8_t> ud_data_;    // [seq & mask] 1 = data, 0 = credit-only
  std::vector<uint32_t> ud_qpns_;   // [peer index]
  std::unique_ptr<RecvRing> recv_;  // sized once the port MTU is known
  std::vector<ibv_recv_wr> recv_wrs_;
  std::vector<ibv_sge> recv_sges_;
  std::vector<RecvRing::Held> released_;
  CreditBook credits_;
  std::vector<uint32_t> credit_due_;
  std::vector<uint8_t> credit_due_flag_;  // [peer index]
  bool connected_ = false;
  FenceCheck fence_;
};

}  // namespace drtmx::r2::verbs
