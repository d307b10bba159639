// ControlServer: the key handshake (see coordinator.h and "The cluster key"
// in README.md). A connection is sent a Challenge when accepted; it becomes
// a node only by answering with a SignedJoin whose MAC proves the cluster
// key over this connection's nonce, its own nonce and its join. Whatever
// else happens before that turns the connection away: one line here, the
// reason to the peer, and nothing else changes.
#include <iostream>

#include "r2/control/cluster_key.h"
#include "r2/control/coordinator.h"

namespace drtmx::r2::control {

void Coordinator::turn_away(Conn& c, const std::string& reason) {
  std::cerr << "coordinator of cluster '" << cfg_.cluster << "': turned away " << name_of(c) << ": "
            << reason << "\n";
  // refuse() lingers on the socket, so that the reason is not lost to a
  // reset by what the peer still sends.
  refuse(c.fd, "the coordinator of cluster '" + cfg_.cluster +
                   "' turned this connection away: " + reason);
  c.fd = -1;
}

bool Coordinator::challenge(Conn& c) {
  // At most kMaxHandshakes connections wait in the handshake: a flood of
  // strangers makes the oldest give way, and a real node (which answers
  // within a round trip) still gets in.
  size_t waiting = 0;
  Conn* oldest = nullptr;
  for (Conn& o : conns_) {
    if (o.fd < 0 || o.node >= 0) continue;
    ++waiting;
    if (oldest == nullptr || o.join_by < oldest->join_by) oldest = &o;
  }
  if (waiting >= kMaxHandshakes && oldest != nullptr) {
    turn_away(*oldest, "more than " + std::to_string(kMaxHandshakes) +
                           " connections were in the key handshake at once; the oldest gave "
                           "way (something else connecting to this port?)");
  }
  auto nonce = random_nonce();
  if (!nonce) {
    turn_away(c, nonce.status().message());
    return false;
  }
  c.nonce = std::move(nonce.value());
  Envelope e;
  e.mutable_challenge()->set_nonce(c.nonce);
  e.mutable_challenge()->set_cluster(cfg_.cluster);
  // A fresh socket's buffer holds the small frame: no wait.
  if (!send_frame(c.fd, e, Clock::now()).is_ok()) {
    drop(c);
    return false;
  }
  return true;
}

void Coordinator::on_unjoined_frame(Conn& c, const Envelope& e) {
  switch (e.body_case()) {
    case Envelope::kSignedJoin:
      return on_signed_join(c, e.signed_join());
    case Envelope::kJoin:
      return turn_away(c,
                       "it sent a join without the cluster-key handshake (a drtmx node of an "
                       "older version? every node must run this version)");
    case Envelope::kFailure:
      // A node that did not accept this coordinator's proof says so.
      std::cerr << "coordinator of cluster '" << cfg_.cluster << "': " << name_of(c)
                << " left the handshake: " << e.failure().reason() << "\n";
      return drop(c);
    default:
      return turn_away(c,
                       "its first message was not a join (something else talking to the "
                       "coordinator's port?)");
  }
}

void Coordinator::on_signed_join(Conn& c, const SignedJoin& sj) {
  if (sj.answers() != c.nonce) {
    return turn_away(c, sj.answers().size() == kNonceBytes
                            ? "its join answers another connection's challenge (a recorded join "
                              "replayed?)"
                            : "its join answers no challenge");
  }
  Join j;
  if (!j.ParseFromString(sj.join())) return turn_away(c, "its join is not a drtmx join");
  const std::string who = "node " + std::to_string(j.node()) + " (from " + c.peer + ")";
  if (j.cluster() != cfg_.cluster) {
    return turn_away(c, who + " belongs to cluster '" + j.cluster() + "', not '" + cfg_.cluster +
                            "' (another cluster's node given this coordinator's address? check "
                            "--cluster and --coordinator)");
  }
  if (sj.mac().empty()) {
    return turn_away(c, who +
                            " has no cluster key; this cluster admits only nodes that prove its "
                            "key (give the node --cluster-key-file=FILE with the cluster's key)");
  }
  if (sj.nonce().size() != kNonceBytes) return turn_away(c, who + " sent a malformed handshake");
  const std::string mine = handshake_mac(cfg_.key, Prover::kMember, c.nonce, sj.nonce(), sj.join());
  if (!mac_equal(mine, sj.mac())) {
    return turn_away(c, who +
                            " did not prove the cluster key: its key differs from the "
                            "coordinator's (give every node this cluster's key file)");
  }
  // Proven: the coordinator proves the key back, and the node's frames may
  // be as large as any node's.
  Envelope a;
  a.mutable_admitted()->set_mac(
      handshake_mac(cfg_.key, Prover::kCoordinator, c.nonce, sj.nonce(), sj.join()));
  send_to(c, a);
  c.proven = true;
  c.reader.set_limit(kMaxFrameBytes);
  on_join(c, j);
}

}  // namespace drtmx::r2::control
