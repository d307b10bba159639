// One worker thread's endpoint on the shm fabric.
//
// One-sided ops: post() checks the request (RegionTable) and queues it on
// the channel; doorbell(peer) executes the queued requests in order with the
// issuing thread's CPU on the peer's mapped memory (READ = copy out, WRITE =
// copy in, CAS/FAA = 8-byte atomics) and queues a completion for each
// signaled one, visible `delay_ns` after the doorbell. Completions leave in
// FIFO order (one delay for all, so the endpoint's queue is time-ordered).
// A request that fails the check touches nothing and completes with its
// error at the next poll(), possibly ahead of earlier requests' completions.
//
// READs are asynchronous, as an RNIC's DMA is: the doorbell only prefetches
// the source lines and the copy happens at the next poll() (before any
// completion is reported), so the DRAM misses of one coroutine's READ
// overlap the work of the coroutines the worker runs in between. FIFO per
// channel is kept: a non-READ op doorbelled on a channel first copies that
// channel's pending READs. Consequences for callers are those of the RDMA
// contract anyway: a READ's buffer is filled only when its completion (or a
// later op's on the same channel) is polled; a READ and a message are not
// ordered with each other.
//
// Persistent regions (thesis §3.1, hint H9; the contract is in
// r2/fabric.h). A WRITE into a region whose persistence is kPmem or kMemFs
// copies and then flushes the written cache lines with the issuing
// thread's CPU (pmem_flush, no fence); into a kMsync region (a file on a
// disk) it copies and remembers the dirty pages on the channel. The next
// READ doorbelled on the same channel first makes them durable — one fence
// (pmem_drain) for flushed lines, pmem_msync of the remembered pages — and
// only then is its completion queued; an msync failure completes that READ
// with kTransportError. So "WRITE, then READ on one channel" is durable
// when the READ completes, exactly the H9 contract, and a WRITE whose
// completion alone was awaited is not (yet) fenced or msynced. What this
// does not model: the RNIC's buffers and DDIO (the issuer's CPU does the
// flushing), and a power loss (a file in /dev/shm survives a process crash,
// not a power cut; only kPmem and kMsync files survive that). CAS/FAA are
// not flushed.
//
// Ops on this node's own memory (execute_local, used by the Worker for
// every op whose target is its own node): executed at once after the same
// region check and fence check, behind this channel's queued ops and
// pending READs; a READ first makes the channel's earlier persistent
// WRITEs durable and is then asynchronous exactly as at a doorbell
// (prefetch now, copy at finish_local(), the next poll() or the channel's
// next non-READ op). Not delayed by `delay_ns`: a node reaches its own
// memory with its CPU, not through the network.
//
// Messaging: one RingWriter per destination (node, thread), in the
// destination's segment; one RingReader per source (node, thread), in this
// node's segment. send() appends, flush_sends() publishes (the doorbell),
// poll_messages() reads in place and releases at the next call.
//
// Fencing (Fabric::apply_membership; r2/README.md "Fencing"): every node's
// FenceWord sits at the start of its message segment. doorbell() checks,
// for every op just before executing it, that this node is still a member
// in its own view and in the target's (FenceCheck: two cached loads);
// otherwise the op touches nothing and completes with kFenced. send()
// checks the same; poll_messages() skips the rings of non-members.
#pragma once

#include <vector>

#include "r2/common/fence.h"
#include "r2/common/region_table.h"
#include "r2/common/send_queue.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"
#include "r2/shm/msg_ring.h"

namespace drtmx::r2::shm {

class ShmEndpoint final : public Endpoint {
 public:
  ShmEndpoint(const FabricConfig& cfg, ThreadId thread, const RegionTable* table,
              uint32_t max_op_bytes);

  // Wires the rings once every node's message segment is mapped:
  // msg_segments[n] is node n's message segment.
  void attach_rings(const std::vector<uint8_t*>& msg_segments);
  // Sets the membership check once every node's FenceWord is mapped.
  void attach_fence(FenceCheck fence) { fence_ = std::move(fence); }

  ThreadId thread() const override { return thread_; }
  PostResult post(const WorkRequest& wr) override;
  void doorbell(NodeId peer) override;
  int poll(Completion* out, int max) override;
  uint32_t outstanding(NodeId peer) const override;
  uint32_t send_queue_depth() const override { return depth_; }
  // WRITEs and atomics use their buffers at the doorbell; a READ's
  // destination is written when its copy is made (poll, or the channel's
  // next WRITE): retire_posted makes the channel's pending copies.
  uint64_t posted(NodeId peer) const override;
  uint64_t retired(NodeId peer) const override;
  void retire_posted(NodeId peer) override;

  uint32_t mtu() const override { return mtu_; }
  SendResult send(NodeId node, ThreadId thread, const void* msg, uint32_t len) override;
  void flush_sends() override;
  int poll_messages(Message* out, int max) override;
  bool execute_local(const WorkRequest& wr, OpStatus* st) override;
  void finish_local() override;
  bool executes_local() const override { return true; }

  bool is_registered(const void* p, size_t len) const override { return table_->is_local(p, len); }

  // What the persistence model did on this endpoint (tests, benchmarks).
  struct PersistStats {
    uint64_t flushed_writes = 0;  // WRITEs into kPmem/kMemFs regions, lines flushed after
    uint64_t flushed_lines = 0;   // cache lines flushed by them
    uint64_t fences = 0;          // READs that fenced earlier flushes (pmem_drain)
    uint64_t dirty_writes = 0;    // WRITEs into kMsync regions, pages remembered
    uint64_t msyncs = 0;          // pmem_msync calls made (one per remembered range)
    uint64_t msync_errors = 0;    // of which failed
  };
  const PersistStats& persist_stats() const { return pstats_; }

  // Index of the ring (receiver thread r, sender node n, sender thread s)
  // inside a node's message segment.
  static size_t ring_index(uint16_t nodes, uint16_t threads, ThreadId r, NodeId n, ThreadId s) {
    return (static_cast<size_t>(r) * nodes + n) * threads + s;
  }

 private:
  struct Queued {
    WorkRequest wr;
    bool signal;
    bool forced;
  };
  // Page range [begin, end) written into a kMsync region, not yet synced.
  struct DirtyRange {
    uintptr_t begin, end;
  };
  struct Channel {
    explicit Channel(uint32_t depth) : sq(depth) {}
    SendQueue sq;
    std::vector<Queued> queued;
    bool unfenced = false;          // flushed lines since the last fence
    bool persist_failed = false;    // an msync failed: every later flushing READ fails
    std::vector<DirtyRange> dirty;  // kMsync pages written since the last READ
    // Request numbers (Endpoint::posted/retired): accepted, executed at a
    // doorbell, and the last one before the channel's oldest READ whose
    // copy is still pending (a READ's destination is written at the copy).
    uint64_t posted = 0, executed = 0, clean = 0;
  };
  struct Cqe {
    Completion c;
    uint64_t visible_at;
    bool forced;
  };

  // A READ doorbelled but not copied yet (its source prefetched).
  struct PendingRead {
    NodeId peer;
    const uint8_t* from;
    void* to;
    uint32_t len;
  };

  void execute(NodeId peer, Channel& ch, const Queued& q);
  // A WRITE landed at [p, p + len) of a region with persistence `mode`.
  void after_persistent_write(Channel& ch, Persistence mode, uint8_t* p, uint32_t len);
  void write_persistent(Channel& ch, uint8_t* p, const uint8_t* from, uint32_t len);
  // Makes the channel's earlier WRITEs durable (the flushing READ); false
  // when an msync failed.
  bool make_durable(Channel& ch);
  bool sync_dirty(Channel& ch);
  void push_cqe(const Cqe& e);
  // Copies the pending READs of `peer` (all peers: kAnyPeer), in post order.
  void copy_pending(NodeId peer);
  // Prefetches a checked READ's source and queues its copy on pending_.
  void defer_read(NodeId peer, const WorkRequest& wr);
  static constexpr NodeId kAnyPeer = static_cast<NodeId>(~0u);

  const RegionTable* table_;
  RegionTable::LocalHint local_hint_;  // this endpoint's (thread's) buffers
  NodeId self_;
  ThreadId thread_;
  uint16_t nodes_, threads_;
  uint32_t depth_, mtu_, ring_bytes_, max_op_bytes_;
  uint64_t delay_ns_;

  std::vector<Channel> channels_;
  std::vector<Cqe> cq_;  // ring, capacity = nodes * depth
  size_t cq_head_ = 0, cq_count_ = 0;
  std::vector<PendingRead> pending_;        // post order, all peers
  std::vector<uint32_t> pending_per_peer_;  // pending_ entries per peer
  std::vector<Completion> errors_;          // locally rejected requests, failed unsignaled ops
  size_t errors_head_ = 0;

  std::vector<RingWriter> writers_;  // by node * threads + thread
  std::vector<uint32_t> dirty_writers_;
  std::vector<RingReader> readers_;  // by node * threads + thread
  std::vector<uint32_t> touched_readers_;
  uint32_t next_reader_ = 0;
  PersistStats pstats_;

  FenceCheck fence_;
  // poll_messages(): rings of these source nodes are read (recomputed when
  // this node's epoch moves).
  uint64_t msg_epoch_ = 0;
  std::vector<uint8_t> read_from_;  // [node]
};

}  // namespace drtmx::r2::shm
