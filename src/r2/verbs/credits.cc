#include "r2/verbs/credits.h"

#include <algorithm>
#include <string>

namespace drtmx::r2::verbs {

Result<CreditPlan> plan_credits(uint32_t recv_buffers, uint16_t num_nodes, uint16_t threads) {
  const uint32_t senders = uint32_t{num_nodes} * threads;
  if (senders == 0) return invalid_argument("verbs credits: no nodes or threads");
  CreditPlan p;
  p.allotment = recv_buffers / senders;
  if (p.allotment < kCreditReserve + 1) {
    return invalid_argument(
        "verbs: " + std::to_string(recv_buffers) + " receive buffers per thread give each of the " +
        std::to_string(senders) + " sender threads (nodes x threads) only " +
        std::to_string(p.allotment) + "; at least " + std::to_string(kCreditReserve + 1) +
        " are needed: raise the receive buffers to at least " +
        std::to_string((kCreditReserve + 1) * senders));
  }
  p.data_credits = std::min(p.allotment - kCreditReserve, kMaxDataCredits);
  p.threshold = (p.data_credits + 1) / 2;
  return p;
}

CreditBook::CreditBook(uint32_t peers, const CreditPlan& plan)
    : plan_(plan), credits_(peers, plan.data_credits), owed_(peers, 0) {}

bool CreditBook::try_consume(uint32_t peer) {
  if (credits_[peer] == 0) return false;
  --credits_[peer];
  return true;
}

void CreditBook::on_returned(uint32_t peer, uint16_t n) {
  // A well-behaved peer never returns more than it was given; clamp so a
  // confused one cannot make us overrun its buffers.
  credits_[peer] = std::min<uint32_t>(credits_[peer] + n, plan_.data_credits);
}

bool CreditBook::on_consumed(uint32_t peer) {
  ++owed_[peer];
  return owed_[peer] == plan_.threshold;
}

uint16_t CreditBook::take_owed(uint32_t peer) {
  const uint32_t n = std::min<uint32_t>(owed_[peer], 65535);
  owed_[peer] -= n;
  return static_cast<uint16_t>(n);
}

}  // namespace drtmx::r2::verbs
