// Messaging credits: a receiver's pre-posted UD receive buffers are never
// overrun, because a sender may only send to a receiver thread while it
// holds a credit for it.
//
// Scheme (per pair sender thread -> receiver thread, N nodes x T threads):
//   allotment A = recv_buffers / (N * T) receive buffers of each receiver
//   belong to each sender thread in the cluster (itself included). Of those,
//   C = A - kCreditReserve are data credits: the sender starts with C, and
//   each data message consumes one. The receiver counts a credit as "owed"
//   to the sender when it releases the message's buffer (re-posts it) and
//   returns owed credits in the header of ANY message it sends back to that
//   sender thread (piggyback), or, once owed reaches the threshold
//   ceil(C / 2), in an explicit credit-only message.
//
//   Credit-only messages consume no data credit (otherwise two threads that
//   each owe the other and have no credit left would deadlock). They still
//   land in a receive buffer, hence the reserve: each explicit return carries
//   at least ceil(C/2) credits and at most C credits are ever owed or in
//   flight, so at most 2 credit-only messages from one sender are ever
//   unprocessed at a receiver. kCreditReserve = 2 buffers cover them.
//
// Single-threaded: one CreditBook per endpoint, used by its worker thread.
// Peers are indexed by node * threads + thread.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace drtmx::r2::verbs {

inline constexpr uint32_t kCreditReserve = 2;
// Credits travel in a 16-bit header field; keep every count below it.
inline constexpr uint32_t kMaxDataCredits = 32767;

struct CreditPlan {
  uint32_t allotment = 0;     // A: receive buffers per sender thread
  uint32_t data_credits = 0;  // C: initial credits per receiver thread
  uint32_t threshold = 0;     // owed credits that trigger an explicit return
};

// Fails (naming recv_buffers) when A leaves no data credit after the reserve.
Result<CreditPlan> plan_credits(uint32_t recv_buffers, uint16_t num_nodes, uint16_t threads);

class CreditBook {
 public:
  CreditBook(uint32_t peers, const CreditPlan& plan);

  const CreditPlan& plan() const { return plan_; }
  uint32_t peers() const { return static_cast<uint32_t>(credits_.size()); }

  // --- sender side ----------------------------------------------------------
  uint32_t credits(uint32_t peer) const { return credits_[peer]; }
  // Takes one credit toward `peer`; false (nothing changes) at zero.
  bool try_consume(uint32_t peer);
  // Credits returned by `peer` in a message header.
  void on_returned(uint32_t peer, uint16_t n);

  // --- receiver side --------------------------------------------------------
  uint32_t owed(uint32_t peer) const { return owed_[peer]; }
  // A data message from `peer` was released (its buffer re-posted). Returns
  // true when owed(peer) has just reached the explicit-return threshold.
  bool on_consumed(uint32_t peer);
  // Owed credits to piggyback on a message to `peer` (cleared; <= 65535).
  uint16_t take_owed(uint32_t peer);
  // Owed credits taken by take_owed whose message never left (post failed).
  void restore_owed(uint32_t peer, uint16_t n) { owed_[peer] += n; }
  bool explicit_return_due(uint32_t peer) const { return owed_[peer] >= plan_.threshold; }

 private:
  CreditPlan plan_;
  std::vector<uint32_t> credits_;
  std::vector<uint32_t> owed_;
};

}  // namespace drtmx::r2::verbs
