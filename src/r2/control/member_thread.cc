// ControlClient: the client's own thread (see member.h). It reads every
// frame from the coordinator and renews the lease.
#include <poll.h>
#include <unistd.h>

#include <algorithm>

#include "base/thread_priority.h"
#include "r2/control/member.h"

namespace drtmx::r2::control {

void MemberClient::lost(Status why) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    first = failed_.is_ok();
    if (first) failed_ = why;
    cv_.notify_all();
  }
  // Only when the loss is the client's end (not the aftermath of an
  // earlier failure) and nobody is leaving.
  if (first && cfg_.on_lost && !stop_.load()) cfg_.on_lost(why);
}

void MemberClient::run() {
  // Ahead of the node's busy workers (base/thread_priority.h): a lease
  // thread left waiting longer than the lease makes a healthy node look
  // lost. It blocks in poll() between short bursts.
  (void)raise_lease_thread();
  const auto period = cfg_.lease / 4;
  auto next_heartbeat = Clock::now() + period;
  // The coordinator's lease: any bytes from it renew it (it sends a
  // Heartbeat every lease/4 at least). It starts with the JoinOk just read.
  auto last_heard = Clock::now();
  uint64_t heard = reader_.received();
  auto note_heard = [&] {
    if (reader_.received() == heard) return false;
    heard = reader_.received();
    last_heard = Clock::now();
    return true;
  };
  // Frames that came with JoinOk in the join's last read (a Failure right
  // after the join, say) are already buffered: handle them before polling.
  bool open = true;
  Status err;
  for (;;) {
    Envelope e;
    Status perr;
    while (reader_.next(&e, &perr)) {
      if (!dispatch(e)) return;
    }
    if (!perr.is_ok())
      return lost(internal_error("lost the coordinator: it sent a " + perr.message()));
    if (!open) return lost(unavailable("lost the coordinator: " + err.message()));
    int wait_ms = 50;
    if (cfg_.lease.count() > 0) {
      const auto silent = Clock::now() - last_heard;
      if (silent > cfg_.lease) {
        // Before blaming the coordinator: read what the socket holds (this
        // thread may itself have been descheduled or stopped).
        open = reader_.fill(fd_, &err);
        if (note_heard() || !open) continue;
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(silent).count();
        return lost(unavailable("lost the coordinator at " + cfg_.coordinator +
                                ": nothing from it for " + std::to_string(ms) + " ms (lease " +
                                std::to_string(cfg_.lease.count()) +
                                " ms): its process is stopped or its host unreachable"));
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_heartbeat - Clock::now());
      const auto expiry = std::chrono::duration_cast<std::chrono::milliseconds>(
          last_heard + cfg_.lease - Clock::now());
      wait_ms = static_cast<int>(std::clamp<int64_t>(std::min(left, expiry).count() + 1, 0, 50));
    }
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    poll(p, 2, wait_ms);
    if (stop_.load()) return;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      open = reader_.fill(fd_, &err);
      note_heard();
    }
    if (open && cfg_.lease.count() > 0 && Clock::now() >= next_heartbeat) {
      // Renew: the next one is due a period after this one was sent, not
      // after it was due (a late thread does not send a burst).
      next_heartbeat = Clock::now() + period;
      Envelope hb;
      hb.mutable_heartbeat();
      if (!send(hb, Clock::now() + period).is_ok()) return;
    }
  }
}

bool MemberClient::dispatch(const Envelope& e) {
  switch (e.body_case()) {
    case Envelope::kExchangeDone: {
      const auto& d = e.exchange_done();
      if (d.blobs_size() != cfg_.num_nodes) {
        (void)fail_locally(internal_error("collective '" + d.name() + "' returned " +
                                          std::to_string(d.blobs_size()) + " blobs"));
        return false;
      }
      std::lock_guard<std::mutex> lk(mu_);
      done_[d.name()] = std::vector<std::string>(d.blobs().begin(), d.blobs().end());
      cv_.notify_all();
      return true;
    }
    case Envelope::kExchangeFailed: {
      std::lock_guard<std::mutex> lk(mu_);
      interrupted_[e.exchange_failed().name()] = e.exchange_failed().reason();
      cv_.notify_all();
      return true;
    }
    case Envelope::kMembershipChange:
      on_membership_change(e.membership_change());
      return true;
    case Envelope::kHeartbeat:
      return true;  // the coordinator renewed its lease (the caller noted it)
    case Envelope::kRemoved:
      on_removed(e.removed().epoch(), e.removed().reason());
      return false;
    case Envelope::kFailure:
      (void)fail_locally(aborted("cluster failed: " + e.failure().reason()));
      return false;
    default:
      lost(internal_error("lost the coordinator: it sent a message only a node may send"));
      return false;
  }
}

void MemberClient::on_membership_change(const MembershipChange& m) {
  r2::MembershipChange c;
  c.epoch = m.epoch();
  NodeSet live;
  for (uint32_t n : m.live()) {
    if (n < cfg_.num_nodes) {
      live.set(n);
      c.live.push_back(static_cast<uint16_t>(n));
    }
  }
  for (const auto& r : m.removed()) {
    c.removed.push_back({static_cast<uint16_t>(r.node()), r.reason()});
  }
  if (c.epoch <= view_.epoch()) return;  // not newer: ignore
  // The callback first (the node runtime fences the fabric there), then the
  // view: whoever sees the new epoch in view() knows the fabric is fenced.
  if (cfg_.on_change) cfg_.on_change(c);
  {
    std::lock_guard<std::mutex> lk(mu_);
    changes_.push_back(c);
    cv_.notify_all();
  }
  (void)view_.apply(c.epoch, live);
}

void MemberClient::on_removed(uint64_t epoch, const std::string& reason) {
  const std::string why = "node " + std::to_string(cfg_.node) +
                          " was removed from the cluster at epoch " + std::to_string(epoch) + " (" +
                          reason + ")";
  r2::MembershipChange c;
  c.epoch = epoch;
  NodeSet live = view_.snapshot().live;
  live.reset(cfg_.node);
  for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
    if (live.test(n)) c.live.push_back(n);
  }
  c.removed.push_back({cfg_.node, reason});
  // This node's own view: it is no longer a member (workers that look at
  // view().is_member(node()) stop issuing).
  (void)view_.apply(std::max(epoch, view_.epoch() + 1), live);
  {
    std::lock_guard<std::mutex> lk(mu_);
    changes_.push_back(c);
  }
  (void)fail_locally(aborted(why));
  if (cfg_.on_change) cfg_.on_change(c);
}

}  // namespace drtmx::r2::control
