// The control plane's "survive failures" mode, in one process: leases,
// removals, epochs and views, interrupted collectives, a removed node that
// comes back, and the settings a join must agree on. A node that crashes or
// stops is played by a RawNode speaking the protocol by hand (it can close
// its socket abruptly, or simply stop sending); the others are real
// ControlClients. Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

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

constexpr int kLease = testing::kRawLease;

struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<MembershipChange, Clock::time_point>> changes;
};

std::unique_ptr<ControlServer> survive_server(uint16_t nodes, Recorder* rec = nullptr,
                                              int lease = kLease) {
  ControlServerConfig c;
  c.cluster = "mem";
  c.key = drtmx::testing::kTestClusterKey;
  c.num_nodes = nodes;
  c.join_timeout = milliseconds(5000);
  c.lease = milliseconds(lease);
  c.survive_failures = true;
  if (rec != nullptr) {
    c.on_membership = [rec](const MembershipChange& m) {
      std::lock_guard<std::mutex> lk(rec->mu);
      rec->changes.emplace_back(m, Clock::now());
      rec->cv.notify_all();
    };
  }
  auto s = ControlServer::start(c);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s.value()) : nullptr;
}

ControlClientConfig client_cfg(const ControlServer& s, uint16_t node, uint16_t nodes,
                               int lease = kLease) {
  ControlClientConfig c;
  c.coordinator = "127.0.0.1:" + std::to_string(s.port());
  c.cluster = "mem";
  c.key = drtmx::testing::kTestClusterKey;
  c.node = node;
  c.num_nodes = nodes;
  c.join_timeout = milliseconds(5000);
  c.op_timeout = milliseconds(5000);
  c.lease = milliseconds(lease);
  c.survive_failures = true;
  return c;
}

// Joins clients 0..n-1 except `skip` concurrently with `raw_join` (which
// joins the raw node); returns the clients.
std::vector<std::unique_ptr<ControlClient>> join_all(const ControlServer& s, uint16_t nodes,
                                                     uint16_t raw, RawNode& rn, Recorder* r) {
  std::vector<std::unique_ptr<ControlClient>> cs(nodes);
  std::vector<std::thread> ts;
  for (uint16_t n = 0; n < nodes; ++n) {
    if (n == raw) continue;
    ts.emplace_back([&, n] {
      ControlClientConfig c = client_cfg(s, n, nodes);
      (void)r;
      auto cl = ControlClient::join(c);
      EXPECT_TRUE(cl.is_ok()) << cl.status().to_string();
      if (cl.is_ok()) cs[n] = std::move(cl.value());
    });
  }
  EXPECT_TRUE(rn.connect_to(s.port()));
  EXPECT_TRUE(rn.send_join(raw, nodes).is_ok());
  Envelope ok;
  EXPECT_TRUE(rn.recv(&ok).is_ok());
  EXPECT_EQ(ok.body_case(), Envelope::kJoinOk);
  for (auto& t : ts) t.join();
  return cs;
}

// Waits (bounded) until `c` is at `epoch`.
bool reaches(const ControlClient& c, uint64_t epoch, milliseconds limit = milliseconds(5000)) {
  const auto until = Clock::now() + limit;
  while (c.epoch() < epoch) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

TEST(ControlMembership, DisconnectedNodeIsRemovedAndSurvivorsSeeEpochOne) {
  Recorder rec;
  auto s = survive_server(3, &rec);
  ASSERT_TRUE(s);
  RawNode raw;
  auto cs = join_all(*s, 3, 2, raw, &rec);
  ASSERT_TRUE(cs[0] && cs[1]);
  EXPECT_EQ(cs[0]->epoch(), 0u);
  raw.crash();
  for (int n : {0, 1}) {
    ASSERT_TRUE(reaches(*cs[n], 1));
    EXPECT_TRUE(cs[n]->view().is_member(0));
    EXPECT_TRUE(cs[n]->view().is_member(1));
    EXPECT_FALSE(cs[n]->view().is_member(2));
    auto ch = cs[n]->changes();
    ASSERT_EQ(ch.size(), 1u);
    EXPECT_EQ(ch[0].epoch, 1u);
    EXPECT_EQ(ch[0].live, (std::vector<uint16_t>{0, 1}));
    ASSERT_EQ(ch[0].removed.size(), 1u);
    EXPECT_EQ(ch[0].removed[0].node, 2);
    EXPECT_NE(ch[0].removed[0].reason.find("disconnected without leaving"), std::string::npos);
    EXPECT_TRUE(cs[n]->health().is_ok());
  }
  // Collectives after the change run over the survivors; the removed
  // node's slot is empty.
  auto st = std::async(std::launch::async, [&] { return cs[1]->exchange("after", "b"); });
  auto r0 = cs[0]->exchange("after", "a");
  auto r1 = st.get();
  ASSERT_TRUE(r0.is_ok()) << r0.status().to_string();
  ASSERT_TRUE(r1.is_ok()) << r1.status().to_string();
  EXPECT_EQ(*r0, (std::vector<std::string>{"a", "b", ""}));
  EXPECT_EQ(s->epoch(), 1u);
  EXPECT_FALSE(s->live().test(2));
  EXPECT_TRUE(cs[0]->leave().is_ok());
  EXPECT_TRUE(cs[1]->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlMembership, SilentNodeLosesItsLeaseAndLearnsItWhenItComesBack) {
  Recorder rec;
  auto s = survive_server(3, &rec);
  ASSERT_TRUE(s);
  RawNode raw;
  auto cs = join_all(*s, 3, 1, raw, &rec);
  ASSERT_TRUE(cs[0] && cs[2]);
  // The raw node says nothing from now on (a stopped process): its lease
  // started when the last node joined.
  const auto silent_from = Clock::now();
  ASSERT_TRUE(reaches(*cs[0], 1));
  {
    std::lock_guard<std::mutex> lk(rec.mu);
    ASSERT_EQ(rec.changes.size(), 1u);
    const auto& [m, at] = rec.changes[0];
    EXPECT_EQ(m.removed[0].node, 1);
    EXPECT_NE(m.removed[0].reason.find("lease expired"), std::string::npos) << m.removed[0].reason;
    // Removed only after a whole lease without renewal (the lease started
    // when the last node joined, a little before `silent_from`).
    const std::string& why = m.removed[0].reason;
    ASSERT_NE(why.find(" for "), std::string::npos) << why;
    EXPECT_GE(std::stoi(why.substr(why.find(" for ") + 5)), kLease) << why;
    EXPECT_LE(at - silent_from, milliseconds(kLease + 300));
  }
  ASSERT_TRUE(reaches(*cs[2], 1));
  // The live clients renewed all along: they are still members.
  EXPECT_TRUE(cs[0]->view().is_member(2));
  EXPECT_TRUE(cs[2]->view().is_member(0));
  // The node "resumes": what waits for it is Removed, with the epoch and
  // the reason; whatever it sends now changes nothing.
  Envelope e;
  ASSERT_TRUE(raw.recv(&e).is_ok());
  ASSERT_EQ(e.body_case(), Envelope::kRemoved);
  EXPECT_EQ(e.removed().epoch(), 1u);
  EXPECT_NE(e.removed().reason().find("lease expired"), std::string::npos);
  Envelope x;
  x.mutable_exchange()->set_name("late");
  (void)raw.send(x);
  // It cannot come back under its id either.
  RawNode again;
  ASSERT_TRUE(again.connect_to(s->port()));
  ASSERT_TRUE(again.send_join(1, 3).is_ok());
  Envelope r;
  ASSERT_TRUE(again.recv(&r).is_ok());
  ASSERT_EQ(r.body_case(), Envelope::kRemoved);
  EXPECT_NE(r.removed().reason().find("cannot join again"), std::string::npos);
  EXPECT_EQ(s->epoch(), 1u);
  cs[0].reset();
  cs[2].reset();
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlMembership, CollectiveInProgressFailsOnEverySurvivor) {
  // Nodes 0 and 2 are raw, node 1 a client; a long lease (the raw node 0
  // does not renew) so that only the crash changes the configuration.
  const int lease = 20000;
  std::mutex mu;
  std::condition_variable cv;
  bool published = false;
  ControlServerConfig c;
  c.cluster = "mem";
  c.key = drtmx::testing::kTestClusterKey;
  c.num_nodes = 3;
  c.join_timeout = milliseconds(5000);
  c.lease = milliseconds(lease);
  c.survive_failures = true;
  c.on_publish = [&](uint16_t, const std::string&, const std::string&) {
    std::lock_guard<std::mutex> lk(mu);
    published = true;
    cv.notify_all();
  };
  auto sv = ControlServer::start(c);
  ASSERT_TRUE(sv.is_ok());
  auto& s = *sv;
  std::unique_ptr<ControlClient> c1;
  std::thread t([&] {
    auto j = ControlClient::join(client_cfg(*s, 1, 3, lease));
    ASSERT_TRUE(j.is_ok()) << j.status().to_string();
    c1 = std::move(j.value());
  });
  RawNode n0, n2;
  ASSERT_TRUE(n0.connect_to(s->port()) && n2.connect_to(s->port()));
  ASSERT_TRUE(n0.send_join(0, 3, lease).is_ok());
  ASSERT_TRUE(n2.send_join(2, 3, lease).is_ok());
  Envelope e;
  ASSERT_TRUE(n0.recv(&e).is_ok() && n2.recv(&e).is_ok());
  t.join();
  ASSERT_TRUE(c1);
  // Node 0 enters "x"; its Publish right after is handled after its
  // Exchange (one connection is read in order): then "x" is in progress.
  Envelope x;
  x.mutable_exchange()->set_name("x");
  x.mutable_exchange()->set_blob("zero");
  ASSERT_TRUE(n0.send(x).is_ok());
  Envelope p;
  p.mutable_publish()->set_topic("entered");
  ASSERT_TRUE(n0.send(p).is_ok());
  {
    std::unique_lock<std::mutex> lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(5), [&] { return published; }));
  }
  n2.crash();
  // Node 0 (in "x") learns the change and that "x" failed.
  bool change = false, failed = false;
  for (int i = 0; i < 2; ++i) {
    Envelope r;
    ASSERT_TRUE(n0.recv(&r).is_ok());
    if (r.body_case() == Envelope::kMembershipChange) {
      change = true;
      EXPECT_EQ(r.membership_change().epoch(), 1u);
    }
    if (r.body_case() == Envelope::kExchangeFailed) {
      failed = true;
      EXPECT_EQ(r.exchange_failed().name(), "x");
      EXPECT_NE(r.exchange_failed().reason().find(
                    "interrupted by a membership change: epoch 1, node 2 removed"),
                std::string::npos)
          << r.exchange_failed().reason();
    }
  }
  EXPECT_TRUE(change && failed);
  // Node 1 enters "x" only now: it fails the same way, at once.
  auto r1 = c1->exchange("x", "one");
  ASSERT_FALSE(r1.is_ok());
  EXPECT_EQ(r1.status().code(), Code::kAborted);
  EXPECT_NE(r1.status().message().find("interrupted by a membership change"), std::string::npos)
      << r1.status().message();
  // The client stays usable: the next collective runs over the survivors.
  EXPECT_TRUE(c1->health().is_ok());
  Envelope y;
  y.mutable_exchange()->set_name("y");
  y.mutable_exchange()->set_blob("zero");
  ASSERT_TRUE(n0.send(y).is_ok());
  auto ry = c1->exchange("y", "one");
  ASSERT_TRUE(ry.is_ok()) << ry.status().to_string();
  EXPECT_EQ(*ry, (std::vector<std::string>{"zero", "one", ""}));
  Envelope leave;
  leave.mutable_leave();
  ASSERT_TRUE(n0.send(leave).is_ok());
  c1.reset();
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlMembership, JoinMustAgreeOnLeaseAndMode) {
  {
    auto s = survive_server(1);
    ASSERT_TRUE(s);
    auto c = ControlClient::join(client_cfg(*s, 0, 1, 300));
    ASSERT_FALSE(c.is_ok());
    EXPECT_NE(c.status().message().find("lease of 300 ms but the coordinator expects 200 ms"),
              std::string::npos)
        << c.status().message();
  }
  {
    auto s = survive_server(1);
    ASSERT_TRUE(s);
    ControlClientConfig cc = client_cfg(*s, 0, 1);
    cc.survive_failures = false;
    auto c = ControlClient::join(cc);
    ASSERT_FALSE(c.is_ok());
    EXPECT_NE(c.status().message().find("--survive-failures"), std::string::npos)
        << c.status().message();
  }
  ControlServerConfig bad;
  bad.survive_failures = true;
  bad.key = drtmx::testing::kTestClusterKey;
  auto s = ControlServer::start(bad);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("needs leases"), std::string::npos);
}

TEST(ControlMembership, DefaultModeStillFailsTheClusterAndMeasuresLeases) {
  ControlServerConfig c;
  c.cluster = "mem";
  c.key = drtmx::testing::kTestClusterKey;
  c.num_nodes = 2;
  c.join_timeout = milliseconds(5000);
  auto s = ControlServer::start(c);
  ASSERT_TRUE(s.is_ok());
  ControlClientConfig cc = client_cfg(**s, 0, 2, 40);
  cc.survive_failures = false;
  std::unique_ptr<ControlClient> c0;
  std::thread t([&] {
    auto j = ControlClient::join(cc);
    ASSERT_TRUE(j.is_ok()) << j.status().to_string();
    c0 = std::move(j.value());
  });
  RawNode raw;
  ASSERT_TRUE(raw.connect_to((*s)->port()));
  ASSERT_TRUE(raw.send_join(1, 2, 40, "mem", false).is_ok());
  Envelope e;
  ASSERT_TRUE(raw.recv(&e).is_ok());
  t.join();
  ASSERT_TRUE(c0);
  // Node 0 renews every 10 ms; the raw node never does — and nothing
  // happens to it in the default mode. Wait for a few renewals of node 0.
  const auto until = Clock::now() + milliseconds(5000);
  while ((*s)->lease_stats()[0].renewals < 5 && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_GE((*s)->lease_stats()[0].renewals, 5u);
  EXPECT_EQ((*s)->epoch(), 0u);
  raw.crash();
  auto r = c0->barrier("b", milliseconds(3000));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("disconnected without leaving"), std::string::npos) << r.message();
  EXPECT_FALSE((*s)->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlMembership, ViewIsConsistentUnderConcurrentChanges) {
  MembershipView v(200);
  EXPECT_EQ(v.epoch(), 0u);
  EXPECT_TRUE(v.is_member(199));
  EXPECT_FALSE(v.is_member(200));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    // Every snapshot must be one the writer produced: epoch e has nodes
    // 0..199-e live.
    while (!done.load()) {
      auto s = v.snapshot();
      ASSERT_EQ(s.live.count(), 200 - s.epoch) << "torn at epoch " << s.epoch;
      if (s.epoch > 0) {
        EXPECT_FALSE(s.live.test(200 - s.epoch));
      }
    }
  });
  NodeSet live;
  for (int n = 0; n < 200; ++n) live.set(n);
  for (uint64_t e = 1; e <= 150; ++e) {
    live.reset(200 - e);
    EXPECT_TRUE(v.apply(e, live));
  }
  EXPECT_FALSE(v.apply(150, live));  // not newer
  done.store(true);
  reader.join();
  EXPECT_EQ(v.epoch(), 150u);
  EXPECT_FALSE(v.is_member(50));
  EXPECT_TRUE(v.is_member(49));
}

}  // namespace
}  // namespace drtmx::r2
