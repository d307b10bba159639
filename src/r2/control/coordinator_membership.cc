// ControlServer: leases, removals and epochs (see coordinator.h and the
// "survive failures" contract in control.h).
#include <poll.h>

#include "r2/control/coordinator.h"

namespace drtmx::r2::control {
namespace {

int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

}  // namespace

uint64_t Coordinator::epoch() const {
  std::lock_guard<std::mutex> lk(mu_);
  return epoch_;
}

NodeSet Coordinator::live() const {
  std::lock_guard<std::mutex> lk(mu_);
  return live_;
}

std::vector<LeaseStats> Coordinator::lease_stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

Conn* Coordinator::conn_of(uint16_t node) {
  for (auto& c : conns_) {
    if (c.fd >= 0 && c.node == node) return &c;
  }
  return nullptr;
}

void Coordinator::start_leases() {
  leases_started_ = true;
  const auto now = Clock::now();
  for (auto& t : last_renewal_) t = now;
  for (Conn& c : conns_) c.next_heartbeat = now + c.lease / 4;
}

void Coordinator::send_heartbeats() {
  if (!leases_started_) return;
  const auto now = Clock::now();
  Envelope hb;
  hb.mutable_heartbeat();
  for (Conn& c : conns_) {
    if (c.fd < 0 || c.node < 0 || c.removed || c.left || c.lease.count() == 0) continue;
    if (now < c.next_heartbeat) continue;
    // As a node does: the next one a period after this one, not after it
    // was due.
    c.next_heartbeat = now + c.lease / 4;
    // Only into a socket with room (a frame is 6 bytes; POLLOUT means a
    // third of the buffer is free): a stopped node that reads nothing
    // neither stalls this thread nor gets half a frame.
    pollfd p{c.fd, POLLOUT, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT)) (void)send_frame(c.fd, hb, now);
  }
}

void Coordinator::renew(uint16_t node) {
  if (!leases_started_) return;
  const auto now = Clock::now();
  const auto gap = std::chrono::duration_cast<std::chrono::microseconds>(now - last_renewal_[node]);
  last_renewal_[node] = now;
  std::lock_guard<std::mutex> lk(mu_);
  LeaseStats& s = stats_[node];
  ++s.renewals;
  if (gap > s.max_gap) s.max_gap = gap;
}

void Coordinator::check_leases() {
  if (!cfg_.survive_failures || !leases_started_) return;
  for (uint16_t n = 0; n < cfg_.num_nodes && !failed_; ++n) {
    if (!is_live_[n] || has_left_[n]) continue;
    if (Clock::now() - last_renewal_[n] <= cfg_.lease) continue;
    // Before blaming the node: read what its socket holds. If this thread
    // was descheduled, the renewals are there and merely unread.
    Conn* c = conn_of(n);
    if (c != nullptr) {
      pollfd p{c->fd, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) on_readable(*c);
      if (!is_live_[n] || has_left_[n]) continue;  // it closed or left meanwhile
      if (Clock::now() - last_renewal_[n] <= cfg_.lease) continue;
    }
    const int64_t silent = ms_between(last_renewal_[n], Clock::now());
    remove_node(n, conn_of(n),
                "lease expired: no renewal from node " + std::to_string(n) + " for " +
                    std::to_string(silent) + " ms (lease " + std::to_string(cfg_.lease.count()) +
                    " ms)");
  }
}

void Coordinator::node_failed(uint16_t node, Conn* conn, const std::string& reason) {
  // Before every node joined, the cluster has no configuration to survive in.
  if (!cfg_.survive_failures || !leases_started_) return fail(reason);
  remove_node(node, conn, reason);
}

void Coordinator::remove_node(uint16_t node, Conn* conn, const std::string& reason) {
  if (!is_live_[node]) return;
  is_live_[node] = false;
  --live_count_;
  removed_reason_[node] = reason;
  r2::MembershipChange change;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++epoch_;
    live_.reset(node);
    change.epoch = epoch_;
  }
  for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
    if (is_live_[n]) change.live.push_back(n);
  }
  change.removed.push_back({node, reason});
  if (conn != nullptr) send_removed(*conn, node);
  if (cfg_.on_membership) cfg_.on_membership(change);

  Envelope e;
  auto* m = e.mutable_membership_change();
  m->set_epoch(change.epoch);
  for (uint16_t n : change.live) m->add_live(n);
  auto* r = m->add_removed();
  r->set_node(node);
  r->set_reason(reason);
  broadcast(e);

  interrupt_rounds("a membership change: epoch " + std::to_string(change.epoch) + ", node " +
                   std::to_string(node) + " removed (" + reason + ")");
  if (live_count_ == 0) {
    failed_ = true;
    finish(aborted("every node was removed; the last: " + reason));
    return;
  }
  maybe_all_left();
}

void Coordinator::send_removed(Conn& c, uint16_t node) {
  c.removed = true;
  if (c.fd < 0) return;
  Envelope e;
  e.mutable_removed()->set_epoch(epoch());
  e.mutable_removed()->set_reason(removed_reason_[node]);
  // A stopped node does not read: a short deadline, the frame is small and
  // usually fits the socket buffer. It reads it when it resumes.
  (void)send_frame(c.fd, e, Clock::now() + std::chrono::milliseconds(100));
}

void Coordinator::refuse_removed(Conn& c, uint16_t node) {
  c.node = node;
  Envelope e;
  e.mutable_removed()->set_epoch(epoch());
  e.mutable_removed()->set_reason(removed_reason_[node] + "; a removed node cannot join again");
  c.removed = true;
  (void)send_frame(c.fd, e, Clock::now() + std::chrono::milliseconds(100));
}

void Coordinator::interrupt_rounds(const std::string& why) {
  for (auto& [name, round] : rounds_) {
    Interrupted& it = interrupted_[name];
    it.reason = "collective '" + name + "' was interrupted by " + why;
    Envelope e;
    e.mutable_exchange_failed()->set_name(name);
    e.mutable_exchange_failed()->set_reason(it.reason);
    for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
      if (!is_live_[n]) continue;
      if (round.have[n]) {
        if (Conn* c = conn_of(n); c != nullptr && !c->left) send_to(*c, e);
      } else {
        it.untold.insert(n);
      }
    }
    if (it.untold.empty()) interrupted_.erase(name);
  }
  rounds_.clear();
  // Nodes removed now will never enter the collectives they were owed.
  for (auto it = interrupted_.begin(); it != interrupted_.end();) {
    for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
      if (!is_live_[n]) it->second.untold.erase(n);
    }
    it = it->second.untold.empty() ? interrupted_.erase(it) : std::next(it);
  }
}

bool Coordinator::answer_interrupted(Conn& c, const std::string& name) {
  auto it = interrupted_.find(name);
  if (it == interrupted_.end() || !it->second.untold.count(static_cast<uint16_t>(c.node))) {
    return false;
  }
  Envelope e;
  e.mutable_exchange_failed()->set_name(name);
  e.mutable_exchange_failed()->set_reason(it->second.reason);
  send_to(c, e);
  it->second.untold.erase(static_cast<uint16_t>(c.node));
  if (it->second.untold.empty()) interrupted_.erase(it);
  return true;
}

void Coordinator::maybe_all_left() {
  for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
    if (is_live_[n] && !has_left_[n]) return;
  }
  finish(Status::ok());
}

}  // namespace drtmx::r2::control
