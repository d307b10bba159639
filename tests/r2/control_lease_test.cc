// The coordinator's side of the lease and who it lets in, in one process:
// it renews its lease to every node by heartbeats; a client that hears
// nothing from it for a lease, or whose connection closes, has lost it
// (on_lost, once; every call fails with the reason); connections to
// a running cluster are refused at once, never left to time out; a
// stranger's join never fails a running cluster (the key handshake's own
// refusals are in control_auth_test). A coordinator that falls silent is played by a
// socket the test listens on itself. Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "r2/control/control.h"
#include "r2/control/framing.h"
#include "support/raw_node.h"
#include "support/test_cluster_key.h"

namespace drtmx::r2 {
namespace {

using control::Clock;
using control::Envelope;
using std::chrono::milliseconds;
using testing::RawNode;

constexpr int kLease = 200;

std::unique_ptr<ControlServer> server(uint16_t nodes, bool survive = false,
                                      milliseconds join_timeout = milliseconds(5000)) {
  ControlServerConfig c;
  c.cluster = "mem";
  c.key = drtmx::testing::kTestClusterKey;
  c.num_nodes = nodes;
  c.join_timeout = join_timeout;
  c.lease = milliseconds(kLease);
  c.survive_failures = survive;
  auto s = ControlServer::start(c);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s.value()) : nullptr;
}

ControlClientConfig client_cfg(uint16_t port, uint16_t node, uint16_t nodes) {
  ControlClientConfig c;
  c.coordinator = "127.0.0.1:" + std::to_string(port);
  c.cluster = "mem";
  c.key = drtmx::testing::kTestClusterKey;
  c.node = node;
  c.num_nodes = nodes;
  c.join_timeout = milliseconds(5000);
  c.op_timeout = milliseconds(5000);
  c.lease = milliseconds(kLease);
  return c;
}

// Joins `nodes` clients at once (a cluster forms only when all join);
// `lost[n]`, if given, gets node n's on_lost.
std::vector<std::unique_ptr<ControlClient>> join_clients(uint16_t port, uint16_t nodes,
                                                         std::vector<struct Lost*> lost = {});

// What a client's on_lost saw.
struct Lost {
  std::atomic<int> calls{0};
  std::mutex mu;
  Status why;
  Clock::time_point at;
  std::function<void(const Status&)> hook() {
    return [this](const Status& s) {
      std::lock_guard<std::mutex> lk(mu);
      if (calls.fetch_add(1) == 0) {
        why = s;
        at = Clock::now();
      }
    };
  }
  // Waits (bounded) for the first call.
  bool wait(milliseconds limit) {
    const auto until = Clock::now() + limit;
    while (calls.load() == 0 && Clock::now() < until) std::this_thread::sleep_for(milliseconds(1));
    return calls.load() > 0;
  }
};

std::vector<std::unique_ptr<ControlClient>> join_clients(uint16_t port, uint16_t nodes,
                                                         std::vector<Lost*> lost) {
  std::vector<std::unique_ptr<ControlClient>> cs(nodes);
  std::vector<std::thread> ts;
  for (uint16_t n = 0; n < nodes; ++n) {
    ts.emplace_back([&, n] {
      ControlClientConfig c = client_cfg(port, n, nodes);
      if (n < lost.size()) c.on_lost = lost[n]->hook();
      auto cl = ControlClient::join(c);
      EXPECT_TRUE(cl.is_ok()) << cl.status().to_string();
      if (cl.is_ok()) cs[n] = std::move(cl.value());
    });
  }
  for (auto& t : ts) t.join();
  return cs;
}

// A coordinator played by hand: accepts one node, answers its join, then
// does only what the test says (falls silent, or closes).
struct FakeCoordinator {
  int listen_fd = -1;
  int fd = -1;
  uint16_t port = 0;
  control::FrameReader reader;
  FakeCoordinator() {
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listen_fd, 4), 0);
    socklen_t len = sizeof a;
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~FakeCoordinator() {
    if (fd >= 0) close(fd);
    close(listen_fd);
  }
  // Accepts the node and answers its join with JoinOk.
  bool serve_join() {
    pollfd p{listen_fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return false;
    fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return false;
    control::tune_socket(fd);
    // The key handshake, as the coordinator plays it.
    Envelope c;
    const std::string nonce(control::kNonceBytes, 'c');
    c.mutable_challenge()->set_nonce(nonce);
    if (!control::send_frame(fd, c, Clock::now() + milliseconds(1000)).is_ok()) return false;
    Envelope j;
    if (!control::recv_frame(fd, reader, &j, Clock::now() + milliseconds(5000)).is_ok() ||
        j.body_case() != Envelope::kSignedJoin) {
      return false;
    }
    Envelope a;
    a.mutable_admitted()->set_mac(
        control::handshake_mac(drtmx::testing::kTestClusterKey, control::Prover::kCoordinator,
                               nonce, j.signed_join().nonce(), j.signed_join().join()));
    if (!control::send_frame(fd, a, Clock::now() + milliseconds(1000)).is_ok()) return false;
    Envelope ok;
    auto* m = ok.mutable_join_ok()->add_members();
    m->set_node(0);
    m->set_host("127.0.0.1");
    return control::send_frame(fd, ok, Clock::now() + milliseconds(1000)).is_ok();
  }
};

// Joins a client to `fake` (on this thread) while the fake answers.
std::unique_ptr<ControlClient> join_fake(FakeCoordinator& fake, Lost* lost) {
  auto served = std::async(std::launch::async, [&] { return fake.serve_join(); });
  ControlClientConfig c = client_cfg(fake.port, 0, 1);
  c.on_lost = lost->hook();
  auto cl = ControlClient::join(c);
  EXPECT_TRUE(served.get());
  EXPECT_TRUE(cl.is_ok()) << cl.status().to_string();
  return cl.is_ok() ? std::move(cl.value()) : nullptr;
}

TEST(ControlLease, TheCoordinatorRenewsItsLeaseToEveryNode) {
  auto s = server(2);
  ASSERT_TRUE(s);
  std::unique_ptr<ControlClient> c0;
  std::thread t([&] {
    auto c = ControlClient::join(client_cfg(s->port(), 0, 2));
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    c0 = std::move(c.value());
  });
  RawNode raw;
  ASSERT_TRUE(raw.connect_to(s->port()));
  ASSERT_TRUE(raw.send_join(1, 2, kLease, "mem", false).is_ok());
  Envelope e;
  ASSERT_TRUE(raw.recv(&e).is_ok());
  ASSERT_EQ(e.body_case(), Envelope::kJoinOk);
  t.join();
  // Heartbeats every lease/4 (50 ms): several within two leases, none
  // more than a lease apart.
  const auto from = Clock::now();
  auto last = from;
  int beats = 0;
  while (Clock::now() - from < milliseconds(2 * kLease)) {
    Envelope h;
    ASSERT_TRUE(raw.recv_any(&h, milliseconds(kLease)).is_ok()) << "no heartbeat for a lease";
    ASSERT_EQ(h.body_case(), Envelope::kHeartbeat);
    EXPECT_LT(Clock::now() - last, milliseconds(kLease));
    last = Clock::now();
    ++beats;
  }
  EXPECT_GE(beats, 4);
  Envelope leave;
  leave.mutable_leave();
  ASSERT_TRUE(raw.send(leave).is_ok());
  EXPECT_TRUE(c0->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlLease, ACoordinatorSilentForALeaseIsLost) {
  FakeCoordinator fake;
  Lost lost;
  auto c = join_fake(fake, &lost);
  ASSERT_TRUE(c);
  // JoinOk was the last thing the coordinator sent; from now on it says
  // nothing, its connection open (a stopped process, an unreachable host).
  const auto silent_from = Clock::now();
  ASSERT_TRUE(lost.wait(milliseconds(kLease + 2000)));
  {
    std::lock_guard<std::mutex> lk(lost.mu);
    EXPECT_GE(lost.at - silent_from, milliseconds(kLease - 5));
    EXPECT_LE(lost.at - silent_from, milliseconds(kLease + 1000));
    EXPECT_EQ(lost.why.code(), Code::kUnavailable);
    EXPECT_NE(lost.why.message().find("lost the coordinator at 127.0.0.1:"), std::string::npos)
        << lost.why.to_string();
    EXPECT_NE(lost.why.message().find("nothing from it for"), std::string::npos);
  }
  // Every call fails with the same reason, at once.
  EXPECT_EQ(c->health().message(), lost.why.message());
  const auto t0 = Clock::now();
  auto x = c->exchange("after", "");
  EXPECT_FALSE(x.is_ok());
  EXPECT_EQ(x.status().message(), lost.why.message());
  EXPECT_LT(Clock::now() - t0, milliseconds(500));
  EXPECT_EQ(lost.calls.load(), 1);
}

TEST(ControlLease, HeartbeatsKeepASilentClusterAlive) {
  // The same, but the coordinator renews its lease: no loss for 4 leases.
  FakeCoordinator fake;
  Lost lost;
  auto c = join_fake(fake, &lost);
  ASSERT_TRUE(c);
  const auto from = Clock::now();
  Envelope hb;
  hb.mutable_heartbeat();
  while (Clock::now() - from < milliseconds(4 * kLease)) {
    ASSERT_TRUE(control::send_frame(fake.fd, hb, Clock::now() + milliseconds(100)).is_ok());
    std::this_thread::sleep_for(milliseconds(kLease / 4));
  }
  EXPECT_EQ(lost.calls.load(), 0);
  EXPECT_TRUE(c->health().is_ok()) << c->health().to_string();
}

TEST(ControlLease, AClosedCoordinatorIsLostAtOnce) {
  FakeCoordinator fake;
  Lost lost;
  auto c = join_fake(fake, &lost);
  ASSERT_TRUE(c);
  const auto closed = Clock::now();
  close(fake.fd);
  fake.fd = -1;
  ASSERT_TRUE(lost.wait(milliseconds(2000)));
  std::lock_guard<std::mutex> lk(lost.mu);
  EXPECT_LT(lost.at - closed, milliseconds(kLease));
  EXPECT_NE(lost.why.message().find("lost the coordinator: connection closed"), std::string::npos)
      << lost.why.to_string();
}

TEST(ControlLease, NoLossAfterLeaveNorForTheCoordinatorsOwnDecisions) {
  auto s = server(2);
  ASSERT_TRUE(s);
  Lost lost0, lost1;
  auto cs = join_clients(s->port(), 2, {&lost0, &lost1});
  ASSERT_TRUE(cs[0] && cs[1]);
  // A failure the cluster decides (node 1 reports one) reaches node 0 as
  // the cluster's failure, not as a lost coordinator.
  cs[1]->report_failure("on purpose");
  const auto until = Clock::now() + milliseconds(3000);
  while (cs[0]->health().is_ok() && Clock::now() < until)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_NE(cs[0]->health().message().find("cluster failed: node 1: on purpose"), std::string::npos)
      << cs[0]->health().to_string();
  // The coordinator goes after that; nobody was lost.
  s.reset();
  std::this_thread::sleep_for(milliseconds(2 * kLease));  // a lease for a loss to show
  EXPECT_EQ(lost0.calls.load(), 0);
  EXPECT_EQ(lost1.calls.load(), 0);
}

TEST(ControlLease, LeavingNodesAreNotLostWhenTheCoordinatorEnds) {
  auto s = server(1);
  ASSERT_TRUE(s);
  Lost lost;
  ControlClientConfig c = client_cfg(s->port(), 0, 1);
  c.on_lost = lost.hook();
  auto cl = ControlClient::join(c);
  ASSERT_TRUE(cl.is_ok()) << cl.status().to_string();
  EXPECT_TRUE((*cl)->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
  s.reset();
  std::this_thread::sleep_for(milliseconds(2 * kLease));
  EXPECT_EQ(lost.calls.load(), 0);
}

// Reads the refusal a connection got: ok with the Failure, or why not.
Status refusal_of(RawNode& r, Envelope* e, milliseconds limit) {
  Status s = r.recv(e, limit);
  if (!s.is_ok()) return s;
  if (e->body_case() != Envelope::kFailure || !e->failure().refused()) {
    return internal_error("not a refusal");
  }
  return Status::ok();
}

TEST(ControlAdmission, ABurstOfConnectionsIsRefusedAtOnceAndTheClusterGoesOn) {
  // 1000 sockets here plus as many accepted by the coordinator in this
  // process: above the usual 1024 descriptors.
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
    rl.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
  }
  const int kBurst = rl.rlim_cur >= 4096 ? 1000 : 300;
  auto s = server(2);
  ASSERT_TRUE(s);
  auto cs = join_clients(s->port(), 2);
  ASSERT_TRUE(cs[0] && cs[1]);
  // The burst: every connect at once (non-blocking), then each must be
  // answered with a refusal within a few seconds; none may hang.
  std::vector<std::unique_ptr<RawNode>> burst;
  const auto t0 = Clock::now();
  for (int i = 0; i < kBurst; ++i) {
    burst.push_back(std::make_unique<RawNode>());
    RawNode& r = *burst.back();
    r.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(r.fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(s->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int rc = ::connect(r.fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << std::strerror(errno);
  }
  int refused = 0;
  std::string sample;
  for (auto& r : burst) {
    pollfd p{r->fd, POLLOUT, 0};
    ASSERT_EQ(poll(&p, 1, 5000), 1) << "a connection was left to time out";
    Envelope e;
    Status st = refusal_of(*r, &e, milliseconds(5000));
    ASSERT_TRUE(st.is_ok()) << st.to_string() << " after " << refused << " refusals";
    ++refused;
    sample = e.failure().reason();
  }
  const auto took = Clock::now() - t0;
  EXPECT_EQ(refused, kBurst);
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_NE(sample.find("cluster 'mem' is running with all its 2 nodes"), std::string::npos)
      << sample;
  std::printf("%d connections refused in %.0f ms\n", kBurst,
              std::chrono::duration<double, std::milli>(took).count());
  burst.clear();
  // The cluster never noticed.
  auto r1 = std::async(std::launch::async, [&] { return cs[1]->exchange("after", "b"); });
  auto r0 = cs[0]->exchange("after", "a");
  ASSERT_TRUE(r0.is_ok()) << r0.status().to_string();
  ASSERT_TRUE(r1.get().is_ok());
  EXPECT_TRUE(cs[0]->leave().is_ok());
  EXPECT_TRUE(cs[1]->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlAdmission, OnceRunningANewConnectionIsRefusedBeforeItCanJoin) {
  auto s = server(2);
  ASSERT_TRUE(s);
  auto cs = join_clients(s->port(), 2);
  ASSERT_TRUE(cs[0] && cs[1]);
  // Once the cluster is complete, a new connection is refused before it
  // can even join (a duplicate id used to fail the running cluster).
  RawNode dup;
  ASSERT_TRUE(dup.connect_to(s->port()));
  ASSERT_TRUE(dup.send_join(1, 2, kLease, "mem", false).is_ok());
  Envelope e;
  ASSERT_TRUE(refusal_of(dup, &e, milliseconds(2000)).is_ok());
  EXPECT_NE(e.failure().reason().find("is running with all its 2 nodes"), std::string::npos);
  EXPECT_TRUE(cs[0]->health().is_ok());
  EXPECT_TRUE(cs[0]->leave().is_ok());
  EXPECT_TRUE(cs[1]->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

}  // namespace
}  // namespace drtmx::r2
