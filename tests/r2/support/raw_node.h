// A node of a control-plane test played by hand: it connects and joins, then
// does only what the test says — closes its socket abruptly (a crashed
// process), or stops sending (a stopped one). recv() skips the
// coordinator's heartbeats (its side of the lease); recv_any() does not.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "r2/control/framing.h"

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
    control::Envelope e;
    auto* j = e.mutable_join();
    j->set_cluster(cluster);
    j->set_node(node);
    j->set_num_nodes(nodes);
    j->set_lease_ms(static_cast<uint32_t>(lease));
    j->set_survive_failures(survive);
    return send(e);
  }
  Status send(const control::Envelope& e) {
    return control::send_frame(fd, e, control::Clock::now() + std::chrono::milliseconds(1000));
  }
  // The next frame other than a Heartbeat.
  Status recv(control::Envelope* e,
              std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto until = control::Clock::now() + limit;
    for (;;) {
      Status s = control::recv_frame(fd, reader, e, until);
      if (!s.is_ok() || e->body_case() != control::Envelope::kHeartbeat) return s;
    }
  }
  Status recv_any(control::Envelope* e,
                  std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    return control::recv_frame(fd, reader, e, control::Clock::now() + limit);
  }
  void crash() {  // the socket closes without a Leave, as when a process dies
    close(fd);
    fd = -1;
  }
};

}  // namespace drtmx::r2::testing
