// ControlClient: one node's connection to the coordinator (see member.h).
// This file: the join and the calls made by the node's threads.
#include "r2/control/member.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "r2/control/cluster_key.h"

namespace drtmx::r2 {
namespace control {
namespace {

// One non-blocking connect attempt, bounded by `deadline`. -1 on failure.
int try_connect(const addrinfo* ai, Clock::time_point deadline) {
  int fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  tune_socket(fd);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  pollfd p{fd, POLLOUT, 0};
  int ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1000)));
  int err = 0;
  socklen_t len = sizeof err;
  if (poll(&p, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

MemberClient::MemberClient(const ControlClientConfig& cfg) : cfg_(cfg), view_(cfg.num_nodes) {}

MemberClient::~MemberClient() {
  if (fd_ >= 0 && health().is_ok()) (void)leave();
  stop_thread();
  if (fd_ >= 0) close(fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void MemberClient::stop_thread() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
}

Status MemberClient::join() {
  auto hp = parse_host_port(cfg_.coordinator, "--coordinator");
  if (!hp) return hp.status();
  if (hp->port == 0) return invalid_argument("--coordinator=" + cfg_.coordinator + ": port 0");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int e = getaddrinfo(hp->host.c_str(), std::to_string(hp->port).c_str(), &hints, &res);
      e != 0) {
    return invalid_argument("cannot resolve --coordinator=" + cfg_.coordinator + ": " +
                            gai_strerror(e));
  }
  const auto deadline = Clock::now() + cfg_.join_timeout;
  Join j;
  j.set_cluster(cfg_.cluster);
  j.set_node(cfg_.node);
  j.set_num_nodes(cfg_.num_nodes);
  j.set_host(cfg_.host);
  j.set_lease_ms(static_cast<uint32_t>(cfg_.lease.count()));
  j.set_survive_failures(cfg_.survive_failures);
  for (auto& [k, v] : cfg_.fingerprint) (*j.mutable_fingerprint())[k] = v;
  const std::string join_bytes = j.SerializeAsString();
  while (fd_ < 0 && Clock::now() < deadline) {
    fd_ = try_connect(res, deadline);
    if (fd_ < 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  freeaddrinfo(res);
  if (fd_ < 0) {
    return unavailable("cannot reach the coordinator at " + cfg_.coordinator + " within " +
                       std::to_string(cfg_.join_timeout.count()) +
                       " ms (is it started, and is --coordinator right?)");
  }
  // The coordinator speaks first: its challenge, or why not. Until it
  // proved the key, nothing large is read from it. It gives up at its own
  // join timeout and tells us why; allow it a margin to do so.
  reader_.set_limit(kMaxHandshakeFrameBytes);
  Envelope r;
  DRTMX_RETURN_IF_ERROR(receive_join_reply(&r, deadline + std::chrono::seconds(3)));
  DRTMX_RETURN_IF_ERROR(handshake(r, join_bytes, deadline + std::chrono::seconds(3)));
  reader_.set_limit(kMaxFrameBytes);
  DRTMX_RETURN_IF_ERROR(receive_join_reply(&r, deadline + std::chrono::seconds(3)));
  if (r.body_case() != Envelope::kJoinOk) {
    return fail_locally(internal_error("the coordinator answered the join with something else"));
  }
  for (auto& m : r.join_ok().members()) {
    members_.push_back({static_cast<uint16_t>(m.node()), m.host()});
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return fail_locally(io_error("eventfd for the control client", errno));
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

Status MemberClient::handshake(const Envelope& challenge, const std::string& join_bytes,
                               Clock::time_point deadline) {
  const std::string me = "node " + std::to_string(cfg_.node);
  if (challenge.body_case() != Envelope::kChallenge ||
      challenge.challenge().nonce().size() != kNonceBytes) {
    return fail_locally(unavailable(
        "the coordinator at " + cfg_.coordinator + " did not begin the cluster-key handshake (" +
        me + " did not join: a drtmx coordinator of an older version, or not a coordinator?)"));
  }
  auto mine = random_nonce();
  if (!mine) return fail_locally(mine.status());
  const std::string& theirs = challenge.challenge().nonce();
  Envelope e;
  auto* sj = e.mutable_signed_join();
  sj->set_join(join_bytes);
  sj->set_nonce(*mine);
  sj->set_answers(theirs);
  if (!cfg_.key.empty()) {
    sj->set_mac(handshake_mac(cfg_.key, Prover::kMember, theirs, *mine, join_bytes));
  }
  DRTMX_RETURN_IF_ERROR(send(e, deadline));
  Envelope a;
  Status s = receive_join_reply(&a, deadline);
  if (!s.is_ok()) {
    // (The client is failed already; the caller learns why first.)
    if (cfg_.key.empty()) {
      return unavailable(me + " has no cluster key (give --cluster-key-file=FILE): " + s.message());
    }
    return s;
  }
  const bool proven = a.body_case() == Envelope::kAdmitted && !cfg_.key.empty() &&
                      mac_equal(a.admitted().mac(), handshake_mac(cfg_.key, Prover::kCoordinator,
                                                                  theirs, *mine, join_bytes));
  if (proven) return Status::ok();
  const std::string why =
      cfg_.key.empty()
          ? me +
                " has no cluster key (give --cluster-key-file=FILE), so it cannot tell the "
                "coordinator at " +
                cfg_.coordinator + " from an impostor; it did not join"
          : "the coordinator at " + cfg_.coordinator +
                " did not prove the cluster key: it is not this cluster's coordinator (an "
                "impostor, or a coordinator given another key); " +
                me + " did not join";
  Envelope f;
  f.mutable_failure()->set_reason(me + " refused the coordinator: it did not prove the key");
  {
    std::lock_guard<std::mutex> lk(send_mu_);
    (void)send_frame(fd_, f, Clock::now() + std::chrono::milliseconds(200));
  }
  return fail_locally(unavailable(why));
}

Status MemberClient::receive_join_reply(Envelope* out, Clock::time_point deadline) {
  Status s = recv_frame(fd_, reader_, out, deadline);
  if (s.code() == Code::kTimeout) {
    Status t = timeout_error(
        "joining did not complete within the timeout (a node is stuck or was not started)");
    report_failure(t.message());
    return health();
  }
  if (!s.is_ok()) {
    return fail_locally(unavailable("lost the coordinator while joining: " + s.message()));
  }
  if (out->body_case() == Envelope::kFailure) {
    if (out->failure().refused()) {
      return fail_locally(unavailable("the coordinator at " + cfg_.coordinator + " refused node " +
                                      std::to_string(cfg_.node) + ": " + out->failure().reason()));
    }
    return fail_locally(aborted("cluster failed: " + out->failure().reason()));
  }
  if (out->body_case() == Envelope::kRemoved) {
    return fail_locally(
        aborted("node " + std::to_string(cfg_.node) + " was removed from the cluster at epoch " +
                std::to_string(out->removed().epoch()) + " (" + out->removed().reason() + ")"));
  }
  return Status::ok();
}

std::vector<r2::MembershipChange> MemberClient::changes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return changes_;
}

Status MemberClient::health() const {
  std::lock_guard<std::mutex> lk(mu_);
  return failed_;
}

Status MemberClient::fail_locally(Status s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (failed_.is_ok()) failed_ = std::move(s);
  cv_.notify_all();
  return failed_;
}

Status MemberClient::send(const Envelope& e, Clock::time_point deadline) {
  Status s;
  {
    std::lock_guard<std::mutex> lk(send_mu_);
    s = send_frame(fd_, e, deadline);
  }
  if (!s.is_ok()) return fail_locally(s.with_context("talking to the coordinator"));
  return s;
}

Result<std::vector<std::string>> MemberClient::exchange(const std::string& name,
                                                        const std::string& blob,
                                                        std::chrono::milliseconds timeout) {
  if (Status h = health(); !h.is_ok()) return h;
  if (fd_ < 0) return unavailable("exchange '" + name + "' after leave()");
  const auto deadline = Clock::now() + timeout;
  Envelope e;
  e.mutable_exchange()->set_name(name);
  e.mutable_exchange()->set_blob(blob);
  DRTMX_RETURN_IF_ERROR(send(e, deadline));
  std::unique_lock<std::mutex> lk(mu_);
  const bool answered = cv_.wait_until(lk, deadline, [&] {
    return done_.count(name) || interrupted_.count(name) || !failed_.is_ok();
  });
  if (auto it = done_.find(name); it != done_.end()) {
    std::vector<std::string> out = std::move(it->second);
    done_.erase(it);
    return out;
  }
  if (auto it = interrupted_.find(name); it != interrupted_.end()) {
    Status s = aborted(it->second);
    interrupted_.erase(it);
    return s;
  }
  if (!failed_.is_ok()) return failed_;
  lk.unlock();
  (void)answered;
  report_failure("collective '" + name +
                 "' did not complete within the timeout (a node is stuck or was not started)");
  return health();
}

Status MemberClient::publish(const std::string& topic, const std::string& blob) {
  if (Status h = health(); !h.is_ok()) return h;
  if (fd_ < 0) return unavailable("publish '" + topic + "' after leave()");
  Envelope e;
  e.mutable_publish()->set_topic(topic);
  e.mutable_publish()->set_blob(blob);
  return send(e, Clock::now() + std::chrono::seconds(2));
}

void MemberClient::report_failure(const std::string& why) {
  if (fd_ < 0 || !health().is_ok()) return;
  Envelope e;
  e.mutable_failure()->set_reason(why);
  {
    std::lock_guard<std::mutex> lk(send_mu_);
    (void)send_frame(fd_, e, Clock::now() + std::chrono::seconds(2));
  }
  (void)fail_locally(aborted("node " + std::to_string(cfg_.node) + ": " + why));
}

Status MemberClient::leave() {
  if (fd_ < 0) return Status::ok();
  // The thread goes first: after Leave the coordinator expects no renewals,
  // and nothing may read the socket once it is closed.
  stop_thread();
  Envelope e;
  e.mutable_leave();
  Status s;
  {
    std::lock_guard<std::mutex> lk(send_mu_);
    s = send_frame(fd_, e, Clock::now() + std::chrono::seconds(2));
  }
  close(fd_);
  fd_ = -1;
  return s;
}

}  // namespace control

Result<std::unique_ptr<ControlClient>> ControlClient::join(const ControlClientConfig& cfg) {
  if (cfg.lease.count() < 0) return invalid_argument("the lease must not be negative");
  if (!cfg.key.empty()) DRTMX_RETURN_IF_ERROR(check_cluster_key(cfg.key, "the node's cluster key"));
  auto m = std::make_unique<control::MemberClient>(cfg);
  DRTMX_RETURN_IF_ERROR(m->join());
  return std::unique_ptr<ControlClient>(std::move(m));
}

}  // namespace drtmx::r2
