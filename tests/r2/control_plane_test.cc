// The control plane over TCP: join, all-gather, barriers, and every failure
// reaching every node as an error (never a hang).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <thread>

#include "r2/control/control.h"
#include "r2/control/framing.h"
#include "support/raw_node.h"
#include "support/test_cluster_key.h"

namespace drtmx::r2 {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<ControlServer> server(uint16_t nodes, int join_ms = 2000,
                                      const std::string& cluster = "ctl") {
  ControlServerConfig c;
  c.cluster = cluster;
  c.key = drtmx::testing::kTestClusterKey;
  c.num_nodes = nodes;
  c.join_timeout = milliseconds(join_ms);
  auto s = ControlServer::start(c);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s.value()) : nullptr;
}

ControlClientConfig client_cfg(const ControlServer& s, uint16_t node, uint16_t nodes,
                               int join_ms = 2000) {
  ControlClientConfig c;
  c.coordinator = "127.0.0.1:" + std::to_string(s.port());
  c.cluster = "ctl";
  c.key = drtmx::testing::kTestClusterKey;
  c.node = node;
  c.num_nodes = nodes;
  c.fingerprint = {{"threads", "2"}, {"mtu", "4096"}};
  c.join_timeout = milliseconds(join_ms);
  c.op_timeout = milliseconds(5000);
  return c;
}

// Runs f(node) on one thread per node and returns their statuses.
std::vector<Status> on_nodes(uint16_t n, const std::function<Status(uint16_t)>& f) {
  std::vector<Status> st(n);
  std::vector<std::thread> ts;
  for (uint16_t i = 0; i < n; ++i) ts.emplace_back([&, i] { st[i] = f(i); });
  for (auto& t : ts) t.join();
  return st;
}

TEST(ControlPlane, JoinExchangeAndBarriers) {
  auto s = server(4);
  ASSERT_TRUE(s);
  auto st = on_nodes(4, [&](uint16_t n) -> Status {
    auto c = ControlClient::join(client_cfg(*s, n, 4));
    if (!c) return c.status();
    EXPECT_EQ((*c)->membership().size(), 4u);
    for (int round = 0; round < 5; ++round) {
      auto all = (*c)->exchange("x" + std::to_string(round),
                                "n" + std::to_string(n) + "r" + std::to_string(round));
      if (!all) return all.status();
      EXPECT_EQ(all->size(), 4u);
      for (uint16_t k = 0; k < all->size(); ++k) {
        EXPECT_EQ((*all)[k], "n" + std::to_string(k) + "r" + std::to_string(round));
      }
      DRTMX_RETURN_IF_ERROR((*c)->barrier("b" + std::to_string(round)));
    }
    // Large blobs go through too.
    auto big = (*c)->exchange("big", std::string(3 << 20, static_cast<char>('a' + n)));
    if (!big) return big.status();
    EXPECT_EQ((*big)[3].size(), 3u << 20);
    EXPECT_EQ((*big)[3][100], 'd');
    return (*c)->leave();
  });
  for (auto& x : st) EXPECT_TRUE(x.is_ok()) << x.to_string();
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlPlane, PublishedReportsReachTheHostInOrderPerNode) {
  ControlServerConfig sc;
  sc.cluster = "ctl";
  sc.key = drtmx::testing::kTestClusterKey;
  sc.num_nodes = 3;
  std::mutex mu;
  std::map<uint16_t, std::vector<std::string>> got;
  sc.on_publish = [&](uint16_t node, const std::string& topic, const std::string& blob) {
    std::lock_guard<std::mutex> lk(mu);
    got[node].push_back(topic + "=" + blob);
  };
  auto s = ControlServer::start(sc);
  ASSERT_TRUE(s.is_ok());
  auto st = on_nodes(3, [&](uint16_t n) -> Status {
    auto c = ControlClient::join(client_cfg(**s, n, 3));
    if (!c) return c.status();
    for (int i = 0; i < 50; ++i) {
      DRTMX_RETURN_IF_ERROR((*c)->publish("progress", std::to_string(i)));
    }
    // The barrier comes after the publishes on the same connection, so the
    // coordinator has handled them all when it completes.
    DRTMX_RETURN_IF_ERROR((*c)->barrier("done"));
    return (*c)->leave();
  });
  for (auto& x : st) EXPECT_TRUE(x.is_ok()) << x.to_string();
  std::lock_guard<std::mutex> lk(mu);
  ASSERT_EQ(got.size(), 3u);
  for (auto& [node, v] : got) {
    ASSERT_EQ(v.size(), 50u) << "node " << node;
    for (int i = 0; i < 50; ++i) EXPECT_EQ(v[i], "progress=" + std::to_string(i));
  }
}

TEST(ControlPlane, MissingNodeIsNamedOnEveryJoinedNode) {
  auto s = server(3, 300);
  ASSERT_TRUE(s);
  const auto t0 = std::chrono::steady_clock::now();
  auto st = on_nodes(2, [&](uint16_t n) {
    auto c = ControlClient::join(client_cfg(*s, n, 3, 300));
    return c.is_ok() ? Status::ok() : c.status();
  });
  for (auto& x : st) {
    EXPECT_EQ(x.code(), Code::kAborted) << x.to_string();
    EXPECT_NE(x.message().find("node 2 did not join within 300 ms"), std::string::npos)
        << x.to_string();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  Status d = s->wait_done(milliseconds(1000));
  EXPECT_NE(d.message().find("node 2"), std::string::npos);
}

TEST(ControlPlane, DuplicateNodeIdFailsEveryNode) {
  auto s = server(3);
  ASSERT_TRUE(s);
  auto st = on_nodes(3, [&](uint16_t n) {
    auto c = ControlClient::join(client_cfg(*s, n == 2 ? 1 : n, 3));
    return c.is_ok() ? Status::ok() : c.status();
  });
  for (auto& x : st) {
    EXPECT_NE(x.message().find("duplicate node id 1"), std::string::npos) << x.to_string();
  }
}

TEST(ControlPlane, ConfigurationMismatchNamesTheKeyAndBothValues) {
  auto s = server(2);
  ASSERT_TRUE(s);
  auto st = on_nodes(2, [&](uint16_t n) {
    auto cfg = client_cfg(*s, n, 2);
    if (n == 1) cfg.fingerprint["mtu"] = "1024";
    auto c = ControlClient::join(cfg);
    return c.is_ok() ? Status::ok() : c.status();
  });
  for (auto& x : st) {
    EXPECT_NE(x.message().find("'mtu'"), std::string::npos) << x.to_string();
    EXPECT_NE(x.message().find("4096"), std::string::npos) << x.to_string();
    EXPECT_NE(x.message().find("1024"), std::string::npos) << x.to_string();
  }
}

TEST(ControlPlane, WrongClusterCountOrIdIsRefused) {
  struct Case {
    std::function<void(ControlClientConfig&)> change;
    std::string want;
  } cases[] = {
      {[](ControlClientConfig& c) { c.cluster = "other"; }, "--cluster"},
      {[](ControlClientConfig& c) { c.num_nodes = 5; }, "--nodes"},
      {[](ControlClientConfig& c) { c.node = 7; }, "node id 7 is out of range"},
  };
  for (auto& cs : cases) {
    auto s = server(1);
    ASSERT_TRUE(s);
    auto cfg = client_cfg(*s, 0, 1);
    cs.change(cfg);
    auto c = ControlClient::join(cfg);
    ASSERT_FALSE(c.is_ok());
    EXPECT_NE(c.status().message().find(cs.want), std::string::npos) << c.status().to_string();
  }
}

int connect_to(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  return fd;
}

TEST(ControlPlane, NodeThatVanishesWithoutLeavingFailsTheOthers) {
  auto s = server(2);
  ASSERT_TRUE(s);
  // Node 1 by hand: a valid join, then its process "dies" (socket closed).
  std::thread vanishing([&] {
    int fd = connect_to(s->port());
    control::Join j;
    j.set_cluster("ctl");
    j.set_node(1);
    j.set_num_nodes(2);
    (*j.mutable_fingerprint())["threads"] = "2";
    (*j.mutable_fingerprint())["mtu"] = "4096";
    testing::RawNode raw;
    raw.fd = fd;
    ASSERT_TRUE(raw.handshake(j.SerializeAsString(), drtmx::testing::kTestClusterKey).is_ok());
    control::Envelope ok;
    ASSERT_TRUE(raw.recv(&ok).is_ok());
    raw.fd = -1;
    EXPECT_EQ(ok.body_case(), control::Envelope::kJoinOk);
    close(fd);
  });
  auto c = ControlClient::join(client_cfg(*s, 0, 2));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  vanishing.join();
  Status b = (*c)->barrier("after");
  EXPECT_EQ(b.code(), Code::kAborted) << b.to_string();
  EXPECT_NE(b.message().find("node 1 disconnected without leaving"), std::string::npos)
      << b.to_string();
  // Every later call fails the same way at once.
  EXPECT_EQ((*c)->barrier("again").message(), b.message());
}

TEST(ControlPlane, ReportedFailureReachesEveryNode) {
  auto s = server(3);
  ASSERT_TRUE(s);
  auto st = on_nodes(3, [&](uint16_t n) -> Status {
    auto c = ControlClient::join(client_cfg(*s, n, 3));
    if (!c) return c.status();
    if (n == 1) {
      (*c)->report_failure("disk on fire");
      return Status::ok();
    }
    return (*c)->barrier("after");
  });
  for (uint16_t n : {0, 2}) {
    EXPECT_EQ(st[n].code(), Code::kAborted) << st[n].to_string();
    EXPECT_NE(st[n].message().find("node 1: disk on fire"), std::string::npos) << st[n].to_string();
  }
}

TEST(ControlPlane, GarbageOnTheCoordinatorPortIsRejectedWithoutCrashing) {
  auto s = server(1, 10000);
  ASSERT_TRUE(s);
  for (std::string junk : {std::string("GET / HTTP/1.1\r\n\r\n"), std::string("\xff\xff\xff\x7f"),
                           std::string("\x05\x00\x00\x00hello", 9)}) {
    int fd = connect_to(s->port());
    ASSERT_EQ(send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
    // The coordinator turns the connection away (its challenge, then the
    // refusal) and closes it: recv sees EOF (bounded waits).
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[4096];
    ssize_t r = 1;
    for (int i = 0; i < 100 && r > 0; ++i) r = recv(fd, b, sizeof b, 0);
    EXPECT_EQ(r, 0) << "the connection was not closed";
    close(fd);
  }
  // A real node still joins and finishes.
  auto c = ControlClient::join(client_cfg(*s, 0, 1));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE((*c)->barrier("ok").is_ok());
  EXPECT_TRUE((*c)->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(2000)).is_ok());
}

TEST(ControlPlane, UnreachableCoordinatorIsAClearErrorInTime) {
  // A port nothing listens on: bind one, close it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  ControlClientConfig cfg;
  cfg.coordinator = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  cfg.join_timeout = milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = ControlClient::join(cfg);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("cannot reach the coordinator"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  cfg.coordinator = "nonsense";
  EXPECT_EQ(ControlClient::join(cfg).status().code(), Code::kInvalidArgument);
  ControlServerConfig sc;
  sc.listen = "127.0.0.1:99999";
  sc.key = drtmx::testing::kTestClusterKey;
  EXPECT_EQ(ControlServer::start(sc).status().code(), Code::kInvalidArgument);
}

TEST(ControlPlane, CollectiveTimesOutWhenANodeNeverArrives) {
  auto s = server(2);
  ASSERT_TRUE(s);
  auto st = on_nodes(2, [&](uint16_t n) -> Status {
    auto c = ControlClient::join(client_cfg(*s, n, 2));
    if (!c) return c.status();
    if (n == 1) {
      // Never enters the barrier; waits until node 0 gave up.
      auto r = (*c)->exchange("never", "", milliseconds(5000));
      return r.is_ok() ? internal_error("expected failure") : r.status();
    }
    return (*c)->barrier("lonely", milliseconds(300));
  });
  EXPECT_EQ(st[0].code(), Code::kAborted) << st[0].to_string();
  EXPECT_NE(st[0].message().find("lonely"), std::string::npos) << st[0].to_string();
  // Node 1 learns of node 0's timeout through the coordinator.
  EXPECT_EQ(st[1].code(), Code::kAborted) << st[1].to_string();
  EXPECT_NE(st[1].message().find("node 0"), std::string::npos) << st[1].to_string();
}

}  // namespace
}  // namespace drtmx::r2
