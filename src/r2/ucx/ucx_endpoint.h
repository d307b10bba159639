// One worker thread's endpoint on the ucx fabric: its own UCP worker (thread
// mode single), UCP endpoints to every worker of every node (this one
// included), the rkeys of every region as unpacked on the endpoint toward
// thread `thread` of each node, and the per-channel machinery that keeps
// the contract of r2/fabric.h on top of UCX (README.md says why and what
// it costs):
//   * a channel (this thread, peer node) passes its ops to UCX in post
//     order and retires their completions strictly in that order (a ring of
//     slots), so a reported completion implies every earlier op of the
//     channel completed (passive ACK);
//   * on tcp (no RMA or amo lane) every op is an active message of the
//     backend's own (kAmRma) that the target's worker executes in channel
//     order and answers (README.md, "One-sided ops"); otherwise UCX's RMA:
//   * ordering of execution at the target (UCX promises none between
//     operations): READs pipeline behind READs and, when UCX uses one lane
//     for RMA, atomics and active messages (lanes.h), WRITEs and atomics
//     pipeline behind each other; at any other boundary (a READ after a
//     WRITE or atomic, a WRITE or atomic after a READ; with several lanes,
//     also between WRITEs and atomics) the op waits until everything
//     before it on the channel completed at the target — after WRITEs,
//     through ucp_ep_flush_nbx, whose completion is their remote
//     completion. Measured: UCX 1.13 over tcp let GETs overtake PUTs and
//     atomics issued after them (tests/r2/ucx_fabric_test.cc,
//     OpsOfAChannelTakeEffectInPostOrder, caught it);
//   * a signaled WRITE completes when it completed at the target (a flush
//     issued right behind it reports it), as an RC WRITE's completion;
//   * WRITEs up to kStageBytes are copied at post() into the channel's
//     staging ring, so the caller's buffer is free at once (the
//     passive-ACK buffer-reuse hazard cannot arise); longer ones use the
//     caller's buffer, which must stay untouched until the WRITE completes;
//   * the flushing READ (H9): a READ after WRITEs into a persistent region
//     of the peer first sends the peer a persist request (an active
//     message naming the written ranges; its worker flushes and fences
//     them, or msyncs them, and answers); the READ's completion is retired
//     only after that answer;
//   * messages are active messages (kAmMessage, eager) copied at send() and
//     at arrival; per (sender thread, receiver thread) sequence numbers
//     keep them FIFO even if UCX delivered out of order;
//   * fencing: ops and sends to a non-member complete kFenced / return
//     kFenced, messages from one are dropped; when this node's epoch moves,
//     the worker (at its next poll, before it progresses UCX again) fences
//     the channels to removed nodes and sends each removed node's threads
//     a notice (kAmFenced), after which they issue and send nothing at all.
//     UCP endpoints are not closed: UCX 1.13 accepts a new connection from
//     the peer right away (so it would fence nothing) and asserts at worker
//     destruction over the wireup it leaves pending. What this does not
//     stop: ops of a removed node that has not yet received the notice
//     (README.md, "Fencing").
#pragma once

#include <ucp/api/ucp.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/common/fence.h"
#include "r2/common/region_table.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"
#include "r2/ucx/descriptors.h"
#include "r2/ucx/lanes.h"
#include "r2/ucx/wire.h"

namespace drtmx::r2::ucx {

class UcxEndpoint final : public Endpoint {
 public:
  // WRITEs up to this many bytes are copied into the channel's staging
  // ring at post(); the ring holds kStageRingBytes.
  static constexpr uint32_t kStageBytes = 16 * 1024;
  static constexpr uint32_t kStageRingBytes = 512 * 1024;
  // Messages sent but not yet completed locally before send() says kNoSpace.
  static constexpr uint32_t kMaxSendsInFlight = 4096;

  static Result<std::unique_ptr<UcxEndpoint>> open(ucp_context_h ctx, const FabricConfig& cfg,
                                                   ThreadId thread, const RegionTable* table);
  ~UcxEndpoint() override;
  UcxEndpoint(const UcxEndpoint&) = delete;
  UcxEndpoint& operator=(const UcxEndpoint&) = delete;

  const std::string& address() const { return address_; }
  // Creates the UCP endpoints to every worker of every node and unpacks
  // every node's rkeys (nodes[n] is node n's descriptor).
  Status connect(const std::vector<NodeDesc>& nodes, uint32_t max_op_bytes);
  void attach_fence(FenceCheck f) { fence_ = std::move(f); }
  // What UCX chose toward thread `thread()` of node `peer`.
  const LaneInfo& lanes(NodeId peer) const { return lanes_[peer]; }
  // Closes every UCP endpoint and destroys the worker (before the fabric
  // unmaps its memory). Idempotent.
  void close();
  // Epoch of the last membership change this endpoint applied (closed the
  // removed nodes' UCP endpoints for); read by any thread.
  uint64_t applied_epoch() const { return applied_epoch_.load(std::memory_order_acquire); }

  ThreadId thread() const override { return thread_; }
  PostResult post(const WorkRequest& wr) override;
  void doorbell(NodeId peer) override;
  int poll(Completion* out, int max) override;
  uint32_t outstanding(NodeId peer) const override;
  uint32_t send_queue_depth() const override { return depth_; }
  uint64_t posted(NodeId peer) const override;
  uint64_t retired(NodeId peer) const override;
  // Nothing to add: every op completes by itself as the worker progresses
  // (poll), signaled or not (README.md, "Ordering": completions).
  void retire_posted(NodeId) override {}
  uint32_t mtu() const override { return mtu_; }
  SendResult send(NodeId node, ThreadId thread, const void* msg, uint32_t len) override;
  void flush_sends() override;
  int poll_messages(Message* out, int max) override;
  bool is_registered(const void* p, size_t len) const override { return table_->is_local(p, len); }
  // Ops on this node's own memory with the thread's CPU (see README.md,
  // "Own memory"): only where UCX's atomics toward every node are emulated
  // by the target's worker with CPU atomics (no amo lane), so the CPU's
  // atomics here are atomic with them.
  bool execute_local(const WorkRequest& wr, OpStatus* st) override;
  bool executes_local() const override { return local_ops_; }
  // Blocks on the worker's event descriptor (ucp_worker_arm + ppoll) for up
  // to `ns`: a peer's request wakes it at once, where a sleep would let the
  // request wait out the sleep (on tcp this worker executes it).
  bool wait_idle(long ns) override;

  // What the channel machinery did (tests, benchmarks).
  struct Stats {
    uint64_t staged_writes = 0;       // WRITEs copied into the staging ring
    uint64_t flushes = 0;             // ucp_ep_flush_nbx before an op that waits for WRITEs
    uint64_t waits = 0;               // times an op was held until the channel drained
    uint64_t persist_requests = 0;    // flushing READs that asked the peer to persist
    uint64_t persist_served = 0;      // persist requests this worker served as a target
    uint64_t persisted_bytes = 0;     // bytes it flushed or msynced for them
    uint64_t messages_dropped = 0;    // from non-members, or malformed
    uint64_t messages_reordered = 0;  // arrived ahead of an earlier one
    uint64_t endpoint_errors = 0;     // UCP endpoints UCX reported failed
    uint64_t fenced_notices = 0;      // "you were removed" notices obeyed
    uint64_t am_ops_served = 0;       // one-sided ops this worker executed for peers (kAmRma)
    uint64_t idle_waits = 0;          // waits on the event descriptor
    uint64_t idle_wakeups = 0;        // of which ended by an event before the timeout
  };
  const Stats& stats() const { return stats_; }

 private:
  enum class Kind : uint8_t { kUser, kFlush, kPersist };
  struct Channel;
  struct Slot {
    UcxEndpoint* owner = nullptr;
    Channel* ch = nullptr;
    uint64_t wr_id = 0;
    uint64_t operand = 0;  // an atomic's source value (UCX reads it until completion)
    uint32_t stage_bytes = 0;
    Verb verb = Verb::kRead;
    Kind kind = Kind::kUser;
    bool report = false;
    bool flushing = false;     // a READ that must fail if the channel's persist failed
    bool paired = false;       // a signaled WRITE whose completion its flush reports
    bool am = false;           // executed by the target's worker from an active message
    uint32_t am_seq = 0;       // its number on the channel
    void* am_local = nullptr;  // where its reply's bytes go (READ, atomics)
    uint32_t am_len = 0;
    bool done = false;
    OpStatus status = OpStatus::kOk;
  };
  struct Op {
    WorkRequest wr;
    uint32_t stage_bytes = 0;
  };
  struct Channel {
    NodeId peer = 0;
    bool strict = false;
    bool closed = false;
    // UCX would emulate RMA and atomics with active messages (no rma or amo
    // lane): the endpoint sends its own (kAmRma), executed by the target's
    // worker in channel order (README.md, "One-sided ops over active
    // messages").
    bool am_rma = false;
    bool failed = false;  // UCX reported the endpoint failed
    uint32_t am_next = 0;
    std::vector<Op> queued;  // posted, not doorbelled
    std::deque<Op> ready;    // doorbelled, not issued
    std::vector<Slot> slots;
    size_t head = 0, count = 0;
    uint32_t user_slots = 0;  // user ops among the slots
    // Endpoint::posted / retired: ops accepted by post(), and user slots
    // retired (in order: the slot ring retires from its head).
    uint64_t posted = 0, retired = 0;
    uint32_t busy = 0;               // issued slots not done
    uint32_t busy_writes = 0;        // of which not READs
    bool last_read = true;           // the last op issued was a READ
    bool unflushed = false;          // WRITEs issued since the last flush
    bool skip_flush_report = false;  // the WRITE before the next flush failed
    std::vector<PersistRange> dirty;
    bool persist_failed = false;
    uint32_t next_persist = 0;
    std::deque<std::pair<uint32_t, Slot*>> persists;  // in flight, by request id
    std::unique_ptr<uint8_t[]> stage;
    uint64_t stage_alloc = 0, stage_free = 0;
    uint32_t used() const {
      return static_cast<uint32_t>(queued.size() + ready.size()) + user_slots;
    }
  };
  struct Rx {
    NodeId node = 0;
    ThreadId thread = 0;
    std::vector<uint8_t> data;
  };
  struct SendBuf {
    UcxEndpoint* owner = nullptr;
    std::vector<uint8_t> bytes;
  };
  struct Reply {
    NodeId node;
    ThreadId thread;
    uint32_t id;
    PersistStatus status;
  };

  UcxEndpoint(const FabricConfig& cfg, ThreadId thread, const RegionTable* table);
  ucp_ep_h ep(NodeId n, ThreadId t) const { return eps_[size_t{n} * threads_ + t]; }
  Slot* push_slot(Channel& ch, Kind kind);
  void finish_now(Slot* s, OpStatus st);
  void track(Slot* s, ucs_status_ptr_t r);
  void issue(Channel& ch);
  bool issue_one(Channel& ch, Op& op);
  bool drained(Channel& ch);
  void send_persist(Channel& ch, Slot* s, uint32_t id);
  int retire(Channel& ch, Completion* out, int max);
  void progress();
  void apply_epoch();
  void close_peer(NodeId n);
  void send_replies();
  uint8_t* stage_alloc(Channel& ch, uint32_t len, uint32_t* consumed);
  SendBuf* take_send_buf();
  void give_send_buf(SendBuf* b);
  OpStatus map_error(const Channel& ch) const;

  static void on_done(void* request, ucs_status_t status, void* user_data);
  static void on_sent(void* request, ucs_status_t status, void* user_data);
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  static ucs_status_t on_rma_request(void* arg, const void* header, size_t header_length,
                                     void* data, size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_rma_reply(void* arg, const void* header, size_t header_length, void* data,
                                   size_t length, const ucp_am_recv_param_t* param);
  void issue_am(Channel& ch, const WorkRequest& wr, Slot* s);
  // Executes one kAmRma request of (node, thread) and queues its reply.
  void execute_am(NodeId node, ThreadId thread, uint32_t seq, const RmaRequest& rq,
                  const uint8_t* bytes);
  void fail_channel(Channel& ch, OpStatus st);
  void send_queued(SendBuf* b, NodeId node, ThreadId thread, unsigned id);
  // b's bytes as eager active message `id` on `e`; the buffer goes back to
  // the pool once UCX copied it (at once, or in on_sent) or the send
  // failed (UCS_PTR_IS_ERR of the result).
  ucs_status_ptr_t send_eager(ucp_ep_h e, unsigned id, SendBuf* b);
  struct EpArg {
    UcxEndpoint* owner;
    NodeId node;
    ThreadId thread;
  };
  std::vector<EpArg> ep_args_;  // [node * threads + thread], the error handler's argument
  struct PendingRma {
    NodeId node;
    ThreadId thread;
    uint32_t seq;
    RmaRequest rq;
    std::vector<uint8_t> bytes;
  };
  std::vector<uint32_t> rma_expect_;          // [node * threads + thread] next op number
  std::map<uint64_t, PendingRma> rma_early_;  // ops that arrived ahead of an earlier one
  struct OutAm {
    SendBuf* b;
    NodeId node;
    ThreadId thread;
    unsigned id;
  };
  std::vector<OutAm> out_am_;  // replies built in handlers, sent after progress
  static ucs_status_t on_message(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_persist_request(void* arg, const void* header, size_t header_length,
                                         void* data, size_t length,
                                         const ucp_am_recv_param_t* param);
  static ucs_status_t on_fenced_notice(void* arg, const void* header, size_t header_length,
                                       void* data, size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_persist_reply(void* arg, const void* header, size_t header_length,
                                       void* data, size_t length, const ucp_am_recv_param_t* param);

  const RegionTable* table_;
  RegionTable::LocalHint local_hint_;
  NodeId self_;
  ThreadId thread_;
  uint16_t nodes_, threads_;
  uint32_t depth_, mtu_, max_op_bytes_ = 1u << 30;
  bool force_strict_;
  bool local_ops_ = false;  // execute_local runs ops (set at connect)
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;  // the worker's (ucp_worker_get_efd); -1: sleep instead
  std::string address_;
  std::vector<ucp_ep_h> eps_;                   // [node * threads + thread]
  std::vector<std::vector<ucp_rkey_h>> rkeys_;  // [node][region id]
  std::vector<LaneInfo> lanes_;                 // [node]
  std::vector<Channel> channels_;               // [node]
  std::vector<void*> closing_;                  // ep close requests in flight
  std::vector<Completion> errors_;              // rejected at post
  size_t errors_head_ = 0;
  size_t next_channel_ = 0;

  // Messages.
  std::vector<uint32_t> send_seq_;    // [node * threads + thread]
  std::vector<uint32_t> expect_seq_;  // [node * threads + thread]
  std::map<uint64_t, Rx> early_;      // (source << 32 | seq) -> message
  std::deque<Rx> inbox_;
  std::vector<Rx> delivered_;
  std::vector<std::vector<uint8_t>> spare_;  // receive buffers to reuse
  std::vector<SendBuf*> free_sends_;
  std::vector<std::unique_ptr<SendBuf>> all_sends_;
  uint32_t sends_in_flight_ = 0;
  std::vector<Reply> replies_;

  FenceCheck fence_;
  uint64_t seen_epoch_ = 0;
  std::atomic<uint64_t> applied_epoch_{0};
  std::vector<uint8_t> peer_closed_;  // [node] fenced: no op, no send, no message
  bool cut_off_ = false;              // a member told this node it was removed
  Stats stats_;
};

}  // namespace drtmx::r2::ucx
