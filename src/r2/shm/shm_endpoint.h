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
// Messaging: one RingWriter per destination (node, thread), in the
// destination's segment; one RingReader per source (node, thread), in this
// node's segment. send() appends, flush_sends() publishes (the doorbell),
// poll_messages() reads in place and releases at the next call.
#pragma once

#include <vector>

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

  ThreadId thread() const override { return thread_; }
  PostResult post(const WorkRequest& wr) override;
  void doorbell(NodeId peer) override;
  int poll(Completion* out, int max) override;
  uint32_t outstanding(NodeId peer) const override;
  uint32_t send_queue_depth() const override { return depth_; }

  uint32_t mtu() const override { return mtu_; }
  SendResult send(NodeId node, ThreadId thread, const void* msg, uint32_t len) override;
  void flush_sends() override;
  int poll_messages(Message* out, int max) override;

  bool is_registered(const void* p, size_t len) const override { return table_->is_local(p, len); }

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
  struct Channel {
    explicit Channel(uint32_t depth) : sq(depth) {}
    SendQueue sq;
    std::vector<Queued> queued;
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

  void execute(NodeId peer, const Queued& q);
  void push_cqe(const Cqe& e);
  // Copies the pending READs of `peer` (all peers: kAnyPeer), in post order.
  void copy_pending(NodeId peer);
  static constexpr NodeId kAnyPeer = static_cast<NodeId>(~0u);

  const RegionTable* table_;
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
  std::vector<Completion> errors_;          // locally rejected requests
  size_t errors_head_ = 0;

  std::vector<RingWriter> writers_;  // by node * threads + thread
  std::vector<uint32_t> dirty_writers_;
  std::vector<RingReader> readers_;  // by node * threads + thread
  std::vector<uint32_t> touched_readers_;
  uint32_t next_reader_ = 0;
};

}  // namespace drtmx::r2::shm
