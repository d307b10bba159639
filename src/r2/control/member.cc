// ControlClient: one node's connection to the coordinator. Blocking calls
// with deadlines; no background thread.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "r2/control/control.h"
#include "r2/control/framing.h"

namespace drtmx::r2 {
namespace {

using control::Clock;
using control::Envelope;

// One non-blocking connect attempt, bounded by `deadline`. -1 on failure.
int try_connect(const addrinfo* ai, Clock::time_point deadline) {
  int fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  control::tune_socket(fd);
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

class MemberClient final : public ControlClient {
 public:
  explicit MemberClient(const ControlClientConfig& cfg) : cfg_(cfg) {}
  ~MemberClient() override {
    if (fd_ >= 0 && failed_.is_ok()) (void)leave();
    if (fd_ >= 0) close(fd_);
  }

  Status join() {
    auto hp = control::parse_host_port(cfg_.coordinator, "--coordinator");
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
    Envelope e;
    auto* j = e.mutable_join();
    j->set_cluster(cfg_.cluster);
    j->set_node(cfg_.node);
    j->set_num_nodes(cfg_.num_nodes);
    j->set_host(cfg_.host);
    for (auto& [k, v] : cfg_.fingerprint) (*j->mutable_fingerprint())[k] = v;
    DRTMX_RETURN_IF_ERROR(send(e, deadline));
    // The coordinator itself gives up at its own join timeout and tells us
    // why; allow it a margin to do so.
    Envelope r;
    DRTMX_RETURN_IF_ERROR(receive(&r, deadline + std::chrono::seconds(3), "joining"));
    if (r.body_case() != Envelope::kJoinOk) {
      return fail_locally(internal_error("the coordinator answered the join with something else"));
    }
    for (auto& m : r.join_ok().members()) {
      members_.push_back({static_cast<uint16_t>(m.node()), m.host()});
    }
    return Status::ok();
  }

  uint16_t node() const override { return cfg_.node; }
  uint16_t num_nodes() const override { return cfg_.num_nodes; }
  const std::vector<Member>& membership() const override { return members_; }
  std::chrono::milliseconds default_timeout() const override { return cfg_.op_timeout; }

  Result<std::vector<std::string>> exchange(const std::string& name, const std::string& blob,
                                            std::chrono::milliseconds timeout) override {
    if (!failed_.is_ok()) return failed_;
    if (fd_ < 0) return unavailable("exchange '" + name + "' after leave()");
    const auto deadline = Clock::now() + timeout;
    Envelope e;
    e.mutable_exchange()->set_name(name);
    e.mutable_exchange()->set_blob(blob);
    DRTMX_RETURN_IF_ERROR(send(e, deadline));
    for (;;) {
      if (auto it = done_.find(name); it != done_.end()) {
        std::vector<std::string> out = std::move(it->second);
        done_.erase(it);
        return out;
      }
      Envelope r;
      Status s = receive(&r, deadline, "collective '" + name + "'");
      if (!s.is_ok()) return s;
      if (r.body_case() != Envelope::kExchangeDone) {
        return fail_locally(
            internal_error("unexpected message from the coordinator during '" + name + "'"));
      }
      const auto& d = r.exchange_done();
      if (d.blobs_size() != cfg_.num_nodes) {
        return fail_locally(internal_error("collective '" + d.name() + "' returned " +
                                           std::to_string(d.blobs_size()) + " blobs"));
      }
      done_[d.name()] = std::vector<std::string>(d.blobs().begin(), d.blobs().end());
    }
  }

  Status publish(const std::string& topic, const std::string& blob) override {
    if (!failed_.is_ok()) return failed_;
    if (fd_ < 0) return unavailable("publish '" + topic + "' after leave()");
    Envelope e;
    e.mutable_publish()->set_topic(topic);
    e.mutable_publish()->set_blob(blob);
    return send(e, Clock::now() + std::chrono::seconds(2));
  }

  void report_failure(const std::string& why) override {
    if (fd_ < 0 || !failed_.is_ok()) return;
    Envelope e;
    e.mutable_failure()->set_reason(why);
    (void)send(e, Clock::now() + std::chrono::seconds(2));
    failed_ = aborted("node " + std::to_string(cfg_.node) + ": " + why);
  }

  Status leave() override {
    if (fd_ < 0) return Status::ok();
    Envelope e;
    e.mutable_leave();
    Status s = send(e, Clock::now() + std::chrono::seconds(2));
    close(fd_);
    fd_ = -1;
    return s;
  }

 private:
  Status send(const Envelope& e, Clock::time_point deadline) {
    Status s = control::send_frame(fd_, e, deadline);
    if (!s.is_ok()) return fail_locally(s.with_context("talking to the coordinator"));
    return s;
  }

  // Waits for the next message; a Failure from the coordinator ends the
  // cluster for this node with the coordinator's reason.
  Status receive(Envelope* out, Clock::time_point deadline, const std::string& doing) {
    Status s = control::recv_frame(fd_, reader_, out, deadline);
    if (s.code() == Code::kTimeout) {
      Status t = timeout_error(doing +
                               " did not complete within the timeout (a node is stuck or "
                               "was not started)");
      report_failure(t.message());
      return failed_;
    }
    if (!s.is_ok()) {
      return fail_locally(unavailable("lost the coordinator while " + doing + ": " + s.message()));
    }
    if (out->body_case() == Envelope::kFailure) {
      failed_ = aborted("cluster failed: " + out->failure().reason());
      return failed_;
    }
    return Status::ok();
  }

  Status fail_locally(Status s) {
    if (failed_.is_ok()) failed_ = s;
    return failed_;
  }

  ControlClientConfig cfg_;
  int fd_ = -1;
  control::FrameReader reader_;
  std::vector<Member> members_;
  std::map<std::string, std::vector<std::string>> done_;
  Status failed_;
};

}  // namespace

Result<std::unique_ptr<ControlClient>> ControlClient::join(const ControlClientConfig& cfg) {
  auto m = std::make_unique<MemberClient>(cfg);
  DRTMX_RETURN_IF_ERROR(m->join());
  return std::unique_ptr<ControlClient>(std::move(m));
}

}  // namespace drtmx::r2
