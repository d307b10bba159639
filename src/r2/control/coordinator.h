// The ControlServer implementation (internal to the control plane).
//
// One background thread runs a poll() loop over the listening socket and
// every node's connection; everything below is touched only by that thread,
// except what is guarded by `mu_` (the result for wait_done(), the epoch and
// live set for epoch()/live(), the lease statistics).
//
// coordinator.cc: sockets, join, collectives, the loop.
// coordinator_membership.cc: leases, removals (survive mode), epochs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "r2/control/control.h"
#include "r2/control/framing.h"

namespace drtmx::r2::control {

struct Conn {
  int fd = -1;
  FrameReader reader;
  int node = -1;  // after a valid SignedJoin and Join
  std::string peer;
  // The nonce of the Challenge this connection was sent (the key
  // handshake; cluster_key.h), and whether the peer proved the key.
  std::string nonce;
  bool proven = false;
  bool left = false;
  // Survive mode: this node was removed (or refused as removed). It was
  // sent Removed; its frames are ignored and it gets nothing more. The
  // connection stays open until the node closes it, so that Removed is
  // not lost to a reset when the node resumes and sends again.
  bool removed = false;
  // Before the join: when this connection must have completed the key
  // handshake by (else it is turned away). After: the lease the node renews (0: none), and when the
  // coordinator renews its own lease to the node next (a Heartbeat every
  // lease/4).
  Clock::time_point join_by;
  std::chrono::milliseconds lease{0};
  Clock::time_point next_heartbeat;
};

// A connection refused (the cluster is full): told why, then read and
// discarded until the peer closes or `until` passes, so that the reason is
// not lost to a reset by the peer's unread frames.
struct Refused {
  int fd = -1;
  Clock::time_point until;
};

class Coordinator final : public ControlServer {
 public:
  explicit Coordinator(const ControlServerConfig& cfg);
  ~Coordinator() override;

  Status listen_on(const std::string& addr);

  uint16_t port() const override { return port_; }
  Status wait_done(std::chrono::milliseconds timeout) override;
  uint64_t epoch() const override;
  NodeSet live() const override;
  std::vector<LeaseStats> lease_stats() const override;

 private:
  struct Round {
    std::vector<std::string> blobs;
    std::vector<bool> have;
    uint16_t count = 0;
  };
  // A collective a removal interrupted: the survivors that still have to
  // be told when they enter it.
  struct Interrupted {
    std::string reason;
    std::set<uint16_t> untold;
  };

  // coordinator.cc
  void finish(Status s);
  void send_to(Conn& c, const Envelope& e);
  void broadcast(const Envelope& e);
  void fail(const std::string& reason);
  std::string name_of(const Conn& c) const;
  // The key handshake (coordinator_handshake.cc): a SignedJoin checked,
  // then on_join; a connection turned away says why on both sides.
  void on_signed_join(Conn& c, const SignedJoin& sj);
  void on_unjoined_frame(Conn& c, const Envelope& e);
  void turn_away(Conn& c, const std::string& reason);
  // Sends a new connection its Challenge (false: it was turned away).
  bool challenge(Conn& c);
  void on_join(Conn& c, const Join& j);
  Status check_join_settings(const Join& j) const;
  void on_exchange(Conn& c, const Exchange& x);
  void on_leave(Conn& c);
  void on_frame(Conn& c, const Envelope& e);
  void on_readable(Conn& c);
  void drop(Conn& c);
  void accept_all();
  // The reason a new connection is refused at once, or "" when it may
  // begin the handshake.
  std::string refusal() const;
  void refuse(int fd, const std::string& reason);
  // Sends `e` and closes `fd` after a short linger (see refuse()).
  void send_and_linger(int fd, const Envelope& e);
  void serve_refused();
  // Turns away connections that did not complete the handshake within
  // handshake_grace() of connecting.
  void check_unjoined();
  std::chrono::milliseconds handshake_grace() const;
  std::string result_message();
  void check_join_deadline();
  void loop();
  int poll_timeout_ms() const;

  // coordinator_membership.cc
  // Every node joined: leases start now.
  void start_leases();
  // A frame from joined node `node` arrived: its lease is renewed.
  void renew(uint16_t node);
  // The coordinator's side of the lease: a Heartbeat to every joined node
  // whose period is up (never blocking: a node that does not read gets
  // none while its socket is full).
  void send_heartbeats();
  // Survive mode: removes every node whose lease expired (after reading
  // whatever its socket holds, so a coordinator that was itself descheduled
  // does not mistake its own delay for the node's).
  void check_leases();
  // A joined node failed (`reason`): fails the cluster (default mode) or
  // removes it (survive mode). `conn` is its connection when still open.
  void node_failed(uint16_t node, Conn* conn, const std::string& reason);
  void remove_node(uint16_t node, Conn* conn, const std::string& reason);
  void interrupt_rounds(const std::string& why);
  // Survive mode: `c` entered `name` after it was interrupted; true when c
  // was told (the call is answered).
  bool answer_interrupted(Conn& c, const std::string& name);
  // Survive mode: a node that was removed tries to join again.
  void refuse_removed(Conn& c, uint16_t node);
  void send_removed(Conn& c, uint16_t node);
  // Ends the cluster ok once every live node has left.
  void maybe_all_left();
  Conn* conn_of(uint16_t node);

  ControlServerConfig cfg_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  Clock::time_point start_;
  std::vector<Conn> conns_;
  std::vector<Refused> refused_;
  std::vector<int> joined_;
  std::vector<std::string> hosts_;
  uint16_t joined_count_ = 0;
  int first_node_ = -1;
  std::map<std::string, std::string> fingerprint_;
  std::map<std::string, Round> rounds_;
  std::map<std::string, Interrupted> interrupted_;
  bool failed_ = false;

  // Membership (loop thread; copies under mu_ for the accessors).
  bool leases_started_ = false;
  std::vector<bool> is_live_;
  std::vector<bool> has_left_;
  std::vector<Clock::time_point> last_renewal_;
  std::vector<std::string> removed_reason_;  // "" while a member
  uint16_t live_count_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  Status result_;
  uint64_t epoch_ = 0;
  NodeSet live_;
  std::vector<LeaseStats> stats_;
};

}  // namespace drtmx::r2::control
