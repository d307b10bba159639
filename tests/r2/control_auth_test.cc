// The control plane admits only the cluster (README.md, "The cluster key"):
// every connection the coordinator turns away before the key handshake is
// done — a wrong key, no key, a replayed join, a join of another cluster,
// garbage, an oversized or bare join, a slow or silent connection — says so
// in one line on both sides and changes nothing else: the cluster still
// forms (or keeps running) with its real nodes. A node does not join a
// coordinator that cannot prove the key. Every wait is bounded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "r2/control/cluster_key.h"
#include "r2/control/control.h"
#include "r2/control/framing.h"
#include "support/raw_node.h"
#include "support/test_cluster_key.h"

namespace drtmx::r2 {
namespace {

using control::Clock;
using control::Envelope;
using drtmx::testing::kTestClusterKey;
using std::chrono::milliseconds;
using testing::RawNode;

std::unique_ptr<ControlServer> server(uint16_t nodes, milliseconds handshake = milliseconds(2000),
                                      const std::string& listen = "127.0.0.1:0") {
  ControlServerConfig c;
  c.listen = listen;
  c.cluster = "auth";
  c.key = kTestClusterKey;
  c.num_nodes = nodes;
  c.join_timeout = milliseconds(10000);
  c.handshake_timeout = handshake;
  auto s = ControlServer::start(c);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s.value()) : nullptr;
}

ControlClientConfig client_cfg(uint16_t port, uint16_t node, uint16_t nodes) {
  ControlClientConfig c;
  c.coordinator = "127.0.0.1:" + std::to_string(port);
  c.cluster = "auth";
  c.key = kTestClusterKey;
  c.node = node;
  c.num_nodes = nodes;
  c.join_timeout = milliseconds(5000);
  c.op_timeout = milliseconds(5000);
  return c;
}

std::string join_bytes(uint16_t node, uint16_t nodes, const std::string& cluster = "auth") {
  control::Join j;
  j.set_cluster(cluster);
  j.set_node(node);
  j.set_num_nodes(nodes);
  return j.SerializeAsString();
}

// Joins nodes `from`..`to`-1 of a cluster of `nodes` as clients,
// concurrently; each must succeed.
std::vector<std::unique_ptr<ControlClient>> join_rest(uint16_t port, uint16_t from, uint16_t nodes,
                                                      uint16_t to = 0) {
  if (to == 0) to = nodes;
  std::vector<std::unique_ptr<ControlClient>> cs(nodes);
  std::vector<std::thread> ts;
  for (uint16_t n = from; n < to; ++n) {
    ts.emplace_back([&, n] {
      auto c = ControlClient::join(client_cfg(port, n, nodes));
      EXPECT_TRUE(c.is_ok()) << "node " << n << ": " << c.status().to_string();
      if (c.is_ok()) cs[n] = std::move(c.value());
    });
  }
  for (auto& t : ts) t.join();
  return cs;
}

// The cluster of `cs` (nodes `from`..) works: a barrier, then everyone
// leaves and the coordinator ends ok.
void cluster_works(ControlServer& s, std::vector<std::unique_ptr<ControlClient>>& cs,
                   uint16_t from) {
  std::vector<std::future<Status>> bs;
  for (size_t n = from; n < cs.size(); ++n) {
    ASSERT_TRUE(cs[n]) << "node " << n << " did not join";
    ControlClient* c = cs[n].get();
    bs.push_back(std::async(std::launch::async, [c] { return c->barrier("works"); }));
  }
  for (auto& b : bs) EXPECT_TRUE(b.get().is_ok());
  for (size_t n = from; n < cs.size(); ++n) EXPECT_TRUE(cs[n]->leave().is_ok());
  EXPECT_TRUE(s.wait_done(milliseconds(3000)).is_ok());
}

// The refusal a connection got (after its challenge), and that the
// coordinator then closed it.
std::string refusal_and_close(RawNode& r) {
  Envelope e;
  Status st = r.recv(&e, milliseconds(5000));
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(e.body_case(), Envelope::kFailure);
  EXPECT_TRUE(e.failure().refused());
  Envelope after;
  EXPECT_FALSE(r.recv_any(&after, milliseconds(3000)).is_ok()) << "still open";
  return e.failure().reason();
}

// Counts the lines of `text` holding `what`.
int lines_with(const std::string& text, const std::string& what) {
  int n = 0;
  size_t from = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    if (text.substr(from, end - from).find(what) != std::string::npos) ++n;
    from = end + 1;
  }
  return n;
}

TEST(ControlAuth, AWrongKeyOrNoKeyIsTurnedAwayOnBothSidesAndTheClusterStillForms) {
  auto s = server(2);
  ASSERT_TRUE(s);
  ::testing::internal::CaptureStderr();
  ControlClientConfig wrong = client_cfg(s->port(), 1, 2);
  wrong.key = std::string(40, 'w');
  auto w = ControlClient::join(wrong);
  ControlClientConfig none = client_cfg(s->port(), 1, 2);
  none.key.clear();
  auto n = ControlClient::join(none);
  auto cs = join_rest(s->port(), 0, 2);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(w.is_ok());
  EXPECT_EQ(w.status().code(), Code::kUnavailable);
  EXPECT_NE(w.status().message().find("did not prove the cluster key: its key differs"),
            std::string::npos)
      << w.status().to_string();
  ASSERT_FALSE(n.is_ok());
  EXPECT_NE(n.status().message().find("node 1 has no cluster key (give --cluster-key-file"),
            std::string::npos)
      << n.status().to_string();
  // The coordinator's side: one line each, naming the connection.
  EXPECT_EQ(lines_with(log, "did not prove the cluster key"), 1) << log;
  EXPECT_EQ(lines_with(log, "has no cluster key"), 1) << log;
  EXPECT_EQ(lines_with(log, "turned away node 1"), 0) << log;  // not yet a node
  EXPECT_EQ(lines_with(log, "turned away a connection from 127.0.0.1:"), 2) << log;
  cluster_works(*s, cs, 0);
}

TEST(ControlAuth, AJoinReplayedOnAnotherConnectionIsTurnedAway) {
  auto s = server(2);
  ASSERT_TRUE(s);
  // A real node 1 joins (by hand); its SignedJoin is recorded.
  RawNode real;
  ASSERT_TRUE(real.connect_to(s->port()));
  Envelope recorded;
  ASSERT_TRUE(real.handshake(join_bytes(1, 2), kTestClusterKey, &recorded).is_ok());
  ASSERT_EQ(recorded.body_case(), Envelope::kSignedJoin);
  Envelope admitted;
  ASSERT_TRUE(real.recv_any(&admitted).is_ok());
  ASSERT_EQ(admitted.body_case(), Envelope::kAdmitted);
  ::testing::internal::CaptureStderr();
  // Replayed as it was on a new connection: it answers the old challenge.
  RawNode replay;
  ASSERT_TRUE(replay.connect_to(s->port()));
  Envelope challenge;
  ASSERT_TRUE(replay.recv_any(&challenge).is_ok());
  ASSERT_EQ(challenge.body_case(), Envelope::kChallenge);
  ASSERT_TRUE(replay.send(recorded).is_ok());
  const std::string why = refusal_and_close(replay);
  EXPECT_NE(why.find("answers another connection's challenge"), std::string::npos) << why;
  // Replayed with the new challenge pasted in: the MAC does not hold.
  RawNode pasted;
  ASSERT_TRUE(pasted.connect_to(s->port()));
  ASSERT_TRUE(pasted.recv_any(&challenge).is_ok());
  Envelope forged = recorded;
  forged.mutable_signed_join()->set_answers(challenge.challenge().nonce());
  ASSERT_TRUE(pasted.send(forged).is_ok());
  const std::string why2 = refusal_and_close(pasted);
  EXPECT_NE(why2.find("did not prove the cluster key"), std::string::npos) << why2;
  // The real node is still node 1: node 0 joins and the cluster forms.
  auto cs = join_rest(s->port(), 0, 2, 1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lines_with(log, "a recorded join replayed?"), 1) << log;
  EXPECT_EQ(lines_with(log, "did not prove the cluster key"), 1) << log;
  Envelope ok;
  ASSERT_TRUE(real.recv(&ok).is_ok());
  EXPECT_EQ(ok.body_case(), Envelope::kJoinOk);
  ASSERT_TRUE(cs[0]);
  Envelope leave;
  leave.mutable_leave();
  ASSERT_TRUE(real.send(leave).is_ok());
  EXPECT_TRUE(cs[0]->leave().is_ok());
  EXPECT_TRUE(s->wait_done(milliseconds(3000)).is_ok());
}

TEST(ControlAuth, AJoinForAnotherClusterIsTurnedAwayWithoutFailingThisOne) {
  auto s = server(2);
  ASSERT_TRUE(s);
  ::testing::internal::CaptureStderr();
  ControlClientConfig other = client_cfg(s->port(), 1, 2);
  other.cluster = "other";
  auto o = ControlClient::join(other);
  auto cs = join_rest(s->port(), 0, 2);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(o.is_ok());
  EXPECT_NE(o.status().message().find("belongs to cluster 'other', not 'auth'"), std::string::npos)
      << o.status().to_string();
  EXPECT_EQ(lines_with(log, "belongs to cluster 'other'"), 1) << log;
  cluster_works(*s, cs, 0);
}

TEST(ControlAuth, GarbageOversizedAndBareJoinsBeforeTheHandshakeAreTurnedAway) {
  auto s = server(1);
  ASSERT_TRUE(s);
  ::testing::internal::CaptureStderr();
  struct Case {
    std::string bytes;
    std::string want;
  };
  // A frame header announcing 1 MiB: refused before 1 MiB is buffered.
  std::string big = {'\x00', '\x00', '\x10', '\x00'};
  big += std::string(1000, 'x');
  Envelope bare;
  bare.mutable_join()->set_cluster("auth");
  std::string bare_bytes;
  {
    std::string body = bare.SerializeAsString();
    bare_bytes = std::string(1, static_cast<char>(body.size())) + std::string(3, '\0') + body;
  }
  const Case cases[] = {
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "exceeds 65536 before the key handshake"},
      {big, "length 1048576 exceeds 65536 before the key handshake"},
      {std::string("\x05\x00\x00\x00hello", 9), "not a drtmx control message"},
      {bare_bytes, "without the cluster-key handshake"},
  };
  for (const Case& c : cases) {
    RawNode r;
    ASSERT_TRUE(r.connect_to(s->port()));
    ASSERT_EQ(::send(r.fd, c.bytes.data(), c.bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(c.bytes.size()));
    const std::string why = refusal_and_close(r);
    EXPECT_NE(why.find(c.want), std::string::npos) << why;
  }
  auto cs = join_rest(s->port(), 0, 1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lines_with(log, "turned away a connection from"), 4) << log;
  cluster_works(*s, cs, 0);
}

TEST(ControlAuth, SlowAndSilentConnectionsHoldNoPlaceAndEndAtTheHandshakeDeadline) {
  const milliseconds deadline(2500);
  auto s = server(2, deadline);
  ASSERT_TRUE(s);
  ::testing::internal::CaptureStderr();
  // Silent strangers, more than there are nodes, and a slow one that sends
  // half a join: before the key handshake they used to hold the nodes'
  // places for 2 s each.
  std::vector<std::unique_ptr<RawNode>> strangers;
  for (int i = 0; i < 6; ++i) {
    strangers.push_back(std::make_unique<RawNode>());
    ASSERT_TRUE(strangers.back()->connect_to(s->port()));
  }
  RawNode slow;
  ASSERT_TRUE(slow.connect_to(s->port()));
  ASSERT_EQ(::send(slow.fd, "\x40\x00\x00\x00\x0a", 5, MSG_NOSIGNAL), 5);
  const auto t0 = Clock::now();
  auto cs = join_rest(s->port(), 0, 2);
  const auto joined = Clock::now() - t0;
  // The nodes joined at once, long before the strangers' deadline.
  EXPECT_LT(joined, deadline - milliseconds(1000))
      << std::chrono::duration_cast<milliseconds>(joined).count() << " ms";
  ASSERT_TRUE(cs[0] && cs[1]);
  // Each stranger is turned away at its deadline, saying why.
  for (auto& r : strangers) {
    const std::string why = refusal_and_close(*r);
    EXPECT_NE(why.find("did not complete the key handshake within 2500 ms"), std::string::npos)
        << why;
  }
  EXPECT_NE(refusal_and_close(slow).find("a slow or silent connection"), std::string::npos);
  EXPECT_GE(Clock::now() - t0, deadline - milliseconds(100));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lines_with(log, "did not complete the key handshake"), 7) << log;
  cluster_works(*s, cs, 0);
}

// A node still in the handshake when the cluster fails (here: two nodes
// gave the same --node) learns why at once, not at the handshake deadline
// as "a slow or silent connection" (a CI run, slow under load, saw that).
TEST(ControlAuth, AConnectionInTheHandshakeLearnsWhyTheClusterFailedAtOnce) {
  auto s = server(3, milliseconds(10000));
  ASSERT_TRUE(s);
  RawNode late;
  ASSERT_TRUE(late.connect_to(s->port()));
  Envelope challenge;
  ASSERT_TRUE(late.recv_any(&challenge, milliseconds(5000)).is_ok());
  ASSERT_EQ(challenge.body_case(), Envelope::kChallenge);
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  std::vector<Status> st(2);
  for (int i = 0; i < 2; ++i) {
    ts.emplace_back([&, i] {
      auto c = ControlClient::join(client_cfg(s->port(), 1, 3));
      st[i] = c.is_ok() ? Status::ok() : c.status();
    });
  }
  for (auto& t : ts) t.join();
  for (auto& x : st) {
    EXPECT_NE(x.message().find("duplicate node id 1"), std::string::npos) << x.to_string();
  }
  Envelope e;
  ASSERT_TRUE(late.recv(&e, milliseconds(5000)).is_ok());
  ASSERT_EQ(e.body_case(), Envelope::kFailure);
  EXPECT_FALSE(e.failure().refused());
  EXPECT_NE(e.failure().reason().find("duplicate node id 1"), std::string::npos)
      << e.failure().reason();
  EXPECT_LT(Clock::now() - t0, milliseconds(5000));
  Envelope after;
  EXPECT_FALSE(late.recv_any(&after, milliseconds(3000)).is_ok()) << "still open";
}

TEST(ControlAuth, AFloodOfHandshakesMakesTheOldestGiveWayAndNodesStillJoin) {
  auto s = server(1, milliseconds(20000));
  ASSERT_TRUE(s);
  ::testing::internal::CaptureStderr();
  const size_t flood = kMaxHandshakes + 5;
  std::vector<std::unique_ptr<RawNode>> strangers;
  for (size_t i = 0; i < flood; ++i) {
    strangers.push_back(std::make_unique<RawNode>());
    ASSERT_TRUE(strangers.back()->connect_to(s->port()));
  }
  const auto t0 = Clock::now();
  auto cs = join_rest(s->port(), 0, 1);
  EXPECT_LT(Clock::now() - t0, milliseconds(3000));
  // The first ones gave way (the node's own connection took a slot too).
  const std::string why = refusal_and_close(*strangers[0]);
  EXPECT_NE(why.find("the oldest gave way"), std::string::npos) << why;
  cluster_works(*s, cs, 0);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(lines_with(log, "the oldest gave way"), 6) << log;
}

// A coordinator played by hand that does not hold the key: it challenges,
// reads the node's join, and answers as `answer` says.
struct Impostor {
  int listen_fd = -1, fd = -1;
  uint16_t port = 0;
  control::FrameReader reader;
  Impostor() {
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
  ~Impostor() {
    if (fd >= 0) close(fd);
    close(listen_fd);
  }
  // Serves one join; returns what the node said last ("" if nothing).
  std::string serve(bool send_admitted) {
    pollfd p{listen_fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return "no connection";
    fd = accept(listen_fd, nullptr, nullptr);
    control::tune_socket(fd);
    const auto until = Clock::now() + milliseconds(5000);
    Envelope c;
    c.mutable_challenge()->set_nonce(std::string(control::kNonceBytes, 'i'));
    if (!control::send_frame(fd, c, until).is_ok()) return "send failed";
    Envelope j;
    if (!control::recv_frame(fd, reader, &j, until).is_ok()) return "no join";
    if (j.body_case() != Envelope::kSignedJoin) return "not a signed join";
    if (send_admitted) {
      Envelope a;  // a MAC under a key the impostor guessed
      a.mutable_admitted()->set_mac(control::handshake_mac(
          std::string(40, 'g'), control::Prover::kCoordinator, c.challenge().nonce(),
          j.signed_join().nonce(), j.signed_join().join()));
      (void)control::send_frame(fd, a, until);
    }
    Envelope ok;
    ok.mutable_join_ok()->add_members()->set_node(0);
    (void)control::send_frame(fd, ok, until);
    Envelope last;
    if (!control::recv_frame(fd, reader, &last, until).is_ok()) return "";
    return last.body_case() == Envelope::kFailure ? last.failure().reason() : "other";
  }
};

TEST(ControlAuth, ANodeDoesNotJoinACoordinatorThatCannotProveTheKey) {
  for (bool admitted : {true, false}) {
    Impostor imp;
    auto said = std::async(std::launch::async, [&] { return imp.serve(admitted); });
    ControlClientConfig c = client_cfg(imp.port, 0, 1);
    auto cl = ControlClient::join(c);
    ASSERT_FALSE(cl.is_ok()) << "joined an impostor";
    EXPECT_NE(cl.status().message().find("did not prove the cluster key: it is not this "
                                         "cluster's coordinator"),
              std::string::npos)
        << cl.status().to_string();
    EXPECT_NE(said.get().find("node 0 refused the coordinator"), std::string::npos);
  }
}

TEST(ControlAuth, TheServerNeedsAKeyAndRefusesAShortOne) {
  ControlServerConfig c;
  c.num_nodes = 1;
  auto none = ControlServer::start(c);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("needs the cluster key"), std::string::npos);
  c.key = "short";
  auto shorty = ControlServer::start(c);
  ASSERT_FALSE(shorty.is_ok());
  EXPECT_NE(shorty.status().message().find("fewer than 32"), std::string::npos);
  ControlClientConfig cc;
  cc.key = "short";
  EXPECT_EQ(ControlClient::join(cc).status().code(), Code::kInvalidArgument);
}

// Whether a TCP connection to addr:port is accepted (bounded).
bool accepts(const std::string& addr, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, addr.c_str(), &a.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

TEST(ControlAuth, TheCoordinatorListensOnlyOnTheAddressGiven) {
  // 127.0.0.2 is this host too (all of 127/8 is loopback): a coordinator
  // bound to 127.0.0.1 is not reachable there; one bound to every
  // interface ("*") is.
  auto one = server(1, milliseconds(2000), "127.0.0.1:0");
  ASSERT_TRUE(one);
  EXPECT_TRUE(accepts("127.0.0.1", one->port()));
  EXPECT_FALSE(accepts("127.0.0.2", one->port()));
  auto every = server(1, milliseconds(2000), "*:0");
  ASSERT_TRUE(every);
  EXPECT_TRUE(accepts("127.0.0.2", every->port()));
}

// --- key files ---

std::string temp_file(const std::string& name, const std::string& text, mode_t mode) {
  const std::string p = ::testing::TempDir() + "ckey" + std::to_string(getpid()) + name;
  ::unlink(p.c_str());
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  ::chmod(p.c_str(), mode);
  return p;
}

TEST(ClusterKeyFile, AcceptsAPrivateKeyAndRefusesOthersWithWhatToDo) {
  const std::string key(64, 'k');
  const std::string good = temp_file("good", key + "\n", 0600);
  auto k = read_cluster_key_file(good);
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  EXPECT_EQ(*k, key);  // the newline is not part of it
  struct Case {
    std::string path;
    std::string want;
  } cases[] = {
      {temp_file("group", key, 0640), "mode 0640"},
      {temp_file("world", key, 0604), "chmod 600"},
      {temp_file("short", "0123456789\n", 0600), "10 bytes, fewer than 32"},
      {temp_file("huge", std::string(5000, 'h'), 0600), "not a cluster key file"},
      {"/nonexistent/key", "cannot open the key file"},
      {::testing::TempDir(), "not a regular file or a pipe"},
  };
  for (const Case& c : cases) {
    auto r = read_cluster_key_file(c.path);
    ASSERT_FALSE(r.is_ok()) << c.path;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().message().find("--cluster-key-file=" + c.path), std::string::npos);
    ::unlink(c.path.c_str());
  }
  ::unlink(good.c_str());
}

TEST(ClusterKeyFile, ReadsTheKeyFromAPipeOnStandardInput) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int saved = dup(0);
  ASSERT_EQ(dup2(p[0], 0), 0);
  close(p[0]);
  const std::string key(40, 'p');
  ASSERT_EQ(write(p[1], (key + "\n").data(), key.size() + 1), static_cast<ssize_t>(key.size() + 1));
  close(p[1]);
  auto k = read_cluster_key_file("-");
  dup2(saved, 0);
  close(saved);
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  EXPECT_EQ(*k, key);
}

TEST(ClusterKeyFile, MadeKeysAreFreshAndWrittenPrivate) {
  auto a = make_cluster_key();
  auto b = make_cluster_key();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->size(), 2 * kMinClusterKeyBytes);
  EXPECT_NE(*a, *b);
  const std::string p = ::testing::TempDir() + "ckeymade" + std::to_string(getpid());
  ::unlink(p.c_str());
  ASSERT_TRUE(write_cluster_key_file(p, *a).is_ok());
  struct stat st {};
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(write_cluster_key_file(p, *a).is_ok()) << "overwrote an existing file";
  auto back = read_cluster_key_file(p);
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(*back, *a);
  ::unlink(p.c_str());
}

}  // namespace
}  // namespace drtmx::r2
