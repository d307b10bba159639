// RcChannel: the device-independent half of one one-sided channel
// (this worker thread -> one peer node, i.e. one RC QP).
//
// It owns the channel's SendQueue accounting, the WrChain of requests posted
// but not yet doorbelled, and the slot array that remembers the user's
// wr_id, verb and signal choice of every request until it retires. The ibv
// wr_id of a request is an encoded WrTag {kRc, flags, peer, seq}; the slot is
// slots[seq % capacity] (capacity = depth rounded up to a power of two; the
// SendQueue never lets more than `depth` requests be unretired, so a slot is
// never reused while its request may still complete).
//
// Who calls what (all from the endpoint's worker thread):
//   post()           — Endpoint::post, after RegionTable::check passed.
//   chain()/on_posted() — Endpoint::doorbell: link, ibv_post_send, clear.
//   on_post_failed() — ibv_post_send refused the chain from some entry on.
//   on_completion()  — for every CQE of this channel (success or error) and
//                      for every entry that never reached the wire.
//
// Completion rules (the RDMA contract of fabric.h):
//   * success CQE of a signaled request retires it and every earlier
//     request (FIFO): SendQueue::on_signaled_completion.
//   * it is reported iff the user asked for a signal; forced signals are
//     consumed here.
//   * an error CQE (or an unposted entry) is ALWAYS reported, with
//     kTransportError, even for unsignaled requests, exactly as an RNIC
//     generates error CQEs for unsignaled work requests.
#pragma once

#include <cstdint>
#include <vector>

#include "r2/common/region_table.h"
#include "r2/common/send_queue.h"
#include "r2/fabric.h"
#include "r2/verbs/keys.h"
#include "r2/verbs/wr_chain.h"

namespace drtmx::r2::verbs {

// Read-only tables a channel needs to translate a request.
struct ChannelTables {
  const RegionTable* regions = nullptr;  // base VA (and size) of remote regions
  const RkeyTable* rkeys = nullptr;
  const LocalKeys* lkeys = nullptr;  // this thread's PD
  ThreadId thread = 0;               // selects the rkey of the peer's thread
  uint32_t max_inline = 0;           // the QP's max_inline_data
};

struct PostOutcome {
  PostResult result = PostResult::kOk;
  // Not kOk: the request was not queued and must complete locally with
  // this status (a key is missing although the region check passed).
  OpStatus local_error = OpStatus::kOk;
};

class RcChannel {
 public:
  RcChannel(NodeId peer, uint32_t depth);

  NodeId peer() const { return peer_; }

  // Appends `wr` (already checked) to the chain. kQueueFull when the send
  // queue has no room; nothing is changed then.
  PostOutcome post(const WorkRequest& wr, const ChannelTables& t);

  WrChain& chain() { return chain_; }
  // The whole chain went to ibv_post_send successfully.
  void on_posted() { chain_.clear(); }
  // ibv_post_send failed at chain entry `first_bad`: that entry and all
  // later ones never reached the wire. They complete with kTransportError
  // through drain_unposted().
  void on_post_failed(uint32_t first_bad);
  bool has_unposted() const { return !unposted_.empty(); }
  // Completes up to `max` unposted requests into `out`, in order, once
  // every signaled request posted before them has completed (so FIFO and
  // the SendQueue accounting hold). Returns how many it wrote.
  int drain_unposted(Completion* out, int max);

  // A completion (or local failure when !ok) for the request with `seq`.
  // Returns true and fills `*out` when the user must see it.
  bool on_completion(uint32_t seq, bool ok, Completion* out);

  // Requests posted (queued or on the wire) and not yet retired.
  uint32_t outstanding() const { return sq_.used(); }
  // Endpoint::posted / retired: requests accepted by post(), and how many
  // of them (in order) the RNIC is done with — through a signaled success
  // CQE (FIFO), or an error CQE (the QP flushes everything before it).
  uint64_t posted() const { return posted_; }
  uint64_t retired() const { return retired_; }
  // Endpoint::retire_posted: when requests are unretired, appends a
  // signaled zero-length RDMA WRITE to the last posted request's remote
  // address (no local buffer; the responder checks no R_Key for zero
  // bytes), whose completion retires them and is consumed here. kQueueFull
  // when the send queue has no room (the requests then retire by the
  // signals already due).
  PostResult post_retire_marker();
  const SendQueue& send_queue() const { return sq_; }
  // Completions that matched no live slot (a bug or a corrupted wr_id).
  uint64_t stale_completions() const { return stale_; }

 private:
  struct Slot {
    uint64_t user_wr_id = 0;
    uint32_t seq = 0;
    Verb verb = Verb::kRead;
    bool live = false;
    bool user_signaled = false;
    bool sq_signaled = false;  // user-signaled or forced
    bool reported = false;     // an error was already reported for it
  };

  void retire_through(uint32_t seq);
  void note_retired(uint32_t seq);  // requests up to `seq` are done

  NodeId peer_;
  SendQueue sq_;
  std::vector<Slot> slots_;
  uint32_t mask_;
  uint32_t next_seq_ = 0;  // seq of the next post
  uint32_t tail_seq_ = 0;  // oldest seq not yet retired
  uint64_t posted_ = 0, retired_ = 0;
  // The last posted request's remote address and key (post_retire_marker).
  uint64_t last_remote_addr_ = 0;
  uint32_t last_rkey_ = 0;
  WrChain chain_;
  std::vector<uint32_t> unposted_;
  uint64_t stale_ = 0;
};

// Smallest power of two >= n (n >= 1).
uint32_t round_up_pow2(uint32_t n);

}  // namespace drtmx::r2::verbs
