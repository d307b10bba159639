// A node of a control-plane test played by hand: it connects and joins (the
// key handshake included), then does only what the test says — closes its
// socket abruptly (a crashed process), or stops sending (a stopped one).
// recv() skips the coordinator's heartbeats (its side of the lease) and the
// handshake's Challenge and Admitted; recv_any() skips nothing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "r2/control/cluster_key.h"
#include "r2/control/framing.h"
#include "support/test_cluster_key.h"

namespace drtmx::r2::testing {

constexpr int kRawLease = 200;

struct RawNode {
  int fd = -1;
  control::FrameReader reader;
  RawNode() = default;
  RawNode(const RawNode&) = delete;
  RawNode& operator=(const RawNode&) = delete;
  ~RawNode() {
    if (fd >= 0) close(fd);
  }
  bool connect_to(uint16_t port) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    control::tune_socket(fd);
    return true;
  }
  Status send_join(uint16_t node, uint16_t nodes, int lease = kRawLease,
                   const std::string& cluster = "mem", bool survive = true) {
    control::Join j;
    j.set_cluster(cluster);
    j.set_node(node);
    j.set_num_nodes(nodes);
    j.set_lease_ms(static_cast<uint32_t>(lease));
    j.set_survive_failures(survive);
    return handshake(j.SerializeAsString(), drtmx::testing::kTestClusterKey);
  }
  // Answers the coordinator's challenge with `join` MACed under `key` ("":
  // no MAC). When the first frame is no challenge (a refusal), it is kept
  // for recv() and nothing is sent. *sent, if given, gets the SignedJoin.
  Status handshake(const std::string& join, const std::string& key,
                   control::Envelope* sent = nullptr) {
    control::Envelope c;
    DRTMX_RETURN_IF_ERROR(recv_any(&c));
    if (c.body_case() != control::Envelope::kChallenge) {
      pending = c;
      has_pending = true;
      return Status::ok();
    }
    control::Envelope e;
    auto* sj = e.mutable_signed_join();
    sj->set_join(join);
    sj->set_nonce(std::string(control::kNonceBytes, 'n'));
    sj->set_answers(c.challenge().nonce());
    if (!key.empty()) {
      sj->set_mac(control::handshake_mac(key, control::Prover::kMember, c.challenge().nonce(),
                                         sj->nonce(), join));
    }
    if (sent != nullptr) *sent = e;
    return send(e);
  }
  Status send(const control::Envelope& e) {
    return control::send_frame(fd, e, control::Clock::now() + std::chrono::milliseconds(1000));
  }
  // The next frame other than a Heartbeat, Challenge or Admitted.
  Status recv(control::Envelope* e,
              std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto until = control::Clock::now() + limit;
    for (;;) {
      Status s = recv_any(
          e, std::chrono::duration_cast<std::chrono::milliseconds>(until - control::Clock::now()));
      if (!s.is_ok()) return s;
      const auto b = e->body_case();
      if (b != control::Envelope::kHeartbeat && b != control::Envelope::kChallenge &&
          b != control::Envelope::kAdmitted) {
        return s;
      }
    }
  }
  Status recv_any(control::Envelope* e,
                  std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    if (has_pending) {
      has_pending = false;
      *e = pending;
      return Status::ok();
    }
    return control::recv_frame(
        fd, reader, e,
        control::Clock::now() + std::chrono::duration_cast<control::Clock::duration>(limit));
  }
  control::Envelope pending;  // a frame handshake() read that was no challenge
  bool has_pending = false;
  void crash() {  // the socket closes without a Leave, as when a process dies
    close(fd);
    fd = -1;
  }
};

}  // namespace drtmx::r2::testing
