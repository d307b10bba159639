// ControlServer: the coordinator of one cluster (see coordinator.h): the
// sockets, the join, the collectives and the poll() loop.
#include "r2/control/coordinator.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/thread_priority.h"
#include "r2/control/cluster_key.h"

namespace drtmx::r2 {
namespace control {

Coordinator::Coordinator(const ControlServerConfig& cfg) : cfg_(cfg) {}

Coordinator::~Coordinator() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  for (auto& c : conns_) close(c.fd);
  for (auto& r : refused_) close(r.fd);
  if (listen_fd_ >= 0) close(listen_fd_);
}

Status Coordinator::listen_on(const std::string& addr) {
  auto hp = parse_host_port(addr, "--coordinator");
  if (!hp) return hp.status();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string host = hp->host == "*" ? "0.0.0.0" : hp->host;
  if (int e = getaddrinfo(host.c_str(), std::to_string(hp->port).c_str(), &hints, &res); e != 0) {
    return invalid_argument("cannot resolve coordinator address '" + addr +
                            "': " + gai_strerror(e));
  }
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = bind(listen_fd_, res->ai_addr, res->ai_addrlen);
  int err = errno;
  freeaddrinfo(res);
  if (rc != 0) {
    return unavailable(
        "cannot listen on " + addr + ": " + std::strerror(err) +
        (err == EADDRINUSE ? " (another cluster uses that port? pick another)" : "") +
        (err == EADDRNOTAVAIL
             ? " (not an address of this machine: give the coordinator one of its own, e.g. "
               "--coordinator-bind=ADDR)"
             : ""));
  }
  // The kernel's largest backlog (net.core.somaxconn caps it): a burst of
  // connections waits in the accept queue for the loop, which answers each
  // at once (refusal()), instead of having its SYNs dropped and retried.
  if (listen(listen_fd_, SOMAXCONN) != 0) return io_error("listen(" + addr + ")", errno);
  tune_socket(listen_fd_);
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  joined_.assign(cfg_.num_nodes, -1);
  hosts_.assign(cfg_.num_nodes, "");
  is_live_.assign(cfg_.num_nodes, true);
  has_left_.assign(cfg_.num_nodes, false);
  last_renewal_.assign(cfg_.num_nodes, Clock::time_point{});
  removed_reason_.assign(cfg_.num_nodes, "");
  live_count_ = cfg_.num_nodes;
  for (uint16_t n = 0; n < cfg_.num_nodes; ++n) live_.set(n);
  stats_.assign(cfg_.num_nodes, LeaseStats{});
  start_ = Clock::now();
  thread_ = std::thread([this] { loop(); });
  return Status::ok();
}

Status Coordinator::wait_done(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!cv_.wait_for(lk, timeout, [&] { return finished_; })) {
    return timeout_error("the cluster did not finish within " + std::to_string(timeout.count()) +
                         " ms");
  }
  return result_;
}

void Coordinator::finish(Status s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (finished_) return;
  finished_ = true;
  result_ = std::move(s);
  cv_.notify_all();
}

void Coordinator::send_to(Conn& c, const Envelope& e) {
  // A node that stopped reading must not stall the coordinator for long.
  (void)send_frame(c.fd, e, Clock::now() + std::chrono::seconds(2));
}

void Coordinator::broadcast(const Envelope& e) {
  // The nodes (and one whose join is being refused): a connection still in
  // the key handshake is none of them.
  for (auto& c : conns_) {
    if (c.fd >= 0 && c.proven && !c.left && !c.removed) send_to(c, e);
  }
}

void Coordinator::fail(const std::string& reason) {
  if (failed_) return;
  failed_ = true;
  Envelope e;
  e.mutable_failure()->set_reason(reason);
  broadcast(e);
  // A connection still in the key handshake is no node, but it is a node
  // joining as likely as a stranger: it learns why the cluster is gone, as a
  // latecomer does (accept_all), instead of waiting out the handshake
  // deadline to be told it was slow.
  for (auto& c : conns_) {
    if (c.fd < 0 || c.proven) continue;
    send_and_linger(c.fd, e);
    c.fd = -1;
  }
  finish(aborted(reason));
}

std::string Coordinator::name_of(const Conn& c) const {
  return c.node >= 0 ? "node " + std::to_string(c.node) : "a connection from " + c.peer;
}

Status Coordinator::check_join_settings(const Join& j) const {
  const std::string who = "node " + std::to_string(j.node());
  // (The cluster's name was checked in the handshake: a node of another
  // cluster is only turned away.)
  if (j.num_nodes() != cfg_.num_nodes) {
    return aborted(who + " expects " + std::to_string(j.num_nodes()) +
                   " nodes but the cluster has " + std::to_string(cfg_.num_nodes) +
                   " (check --nodes)");
  }
  if (j.node() >= cfg_.num_nodes) {
    return aborted("node id " + std::to_string(j.node()) + " is out of range: the cluster has " +
                   std::to_string(cfg_.num_nodes) + " nodes (0.." +
                   std::to_string(cfg_.num_nodes - 1) + ")");
  }
  // A coordinator without a lease of its own (default mode) only measures
  // the nodes' renewals; the nodes agree with each other by the fingerprint.
  if (cfg_.lease.count() > 0 && j.lease_ms() != static_cast<uint64_t>(cfg_.lease.count())) {
    return aborted(who + " renews a lease of " + std::to_string(j.lease_ms()) +
                   " ms but the coordinator expects " + std::to_string(cfg_.lease.count()) +
                   " ms (give the coordinator and every node the same --lease-ms)");
  }
  if (j.survive_failures() != cfg_.survive_failures) {
    auto mode = [](bool s) { return s ? "survives failures" : "fails on any node failure"; };
    return aborted(who + " expects a cluster that " + mode(j.survive_failures()) +
                   " but the coordinator's " + mode(cfg_.survive_failures) +
                   " (give every node and the launcher the same --survive-failures)");
  }
  return Status::ok();
}

void Coordinator::on_join(Conn& c, const Join& j) {
  if (c.node >= 0) return fail(name_of(c) + " sent a second join");
  if (joined_count_ == cfg_.num_nodes) {
    // The cluster runs: a join is a removed node's, or a stranger's that
    // must not end it.
    if (j.node() < cfg_.num_nodes && !removed_reason_[j.node()].empty() &&
        check_join_settings(j).is_ok()) {
      return refuse_removed(c, static_cast<uint16_t>(j.node()));
    }
    Envelope e;
    e.mutable_failure()->set_refused(true);
    e.mutable_failure()->set_reason(
        "cluster '" + cfg_.cluster + "' is running with all its " + std::to_string(cfg_.num_nodes) +
        " nodes (node " + std::to_string(j.node()) +
        (j.node() < cfg_.num_nodes ? " joined from " + hosts_[j.node()] : " is not one of them") +
        "); a node joins only when the cluster starts");
    send_to(c, e);
    drop(c);
    return;
  }
  if (Status s = check_join_settings(j); !s.is_ok()) return fail(s.message());
  if (j.node() < cfg_.num_nodes && !removed_reason_[j.node()].empty()) {
    return refuse_removed(c, static_cast<uint16_t>(j.node()));
  }
  if (joined_[j.node()] >= 0) {
    return fail("duplicate node id " + std::to_string(j.node()) + ": already joined from " +
                hosts_[j.node()] + ", again from " + c.peer + " (give every node its own --node)");
  }
  std::map<std::string, std::string> fp(j.fingerprint().begin(), j.fingerprint().end());
  if (first_node_ < 0) {
    first_node_ = static_cast<int>(j.node());
    fingerprint_ = fp;
  } else if (fp != fingerprint_) {
    std::string key, a = "(unset)", b = "(unset)";
    for (auto& [k, v] : fingerprint_) {
      auto it = fp.find(k);
      if (it == fp.end() || it->second != v) {
        key = k;
        a = v;
        if (it != fp.end()) b = it->second;
        break;
      }
    }
    if (key.empty()) {
      for (auto& [k, v] : fp) {
        if (!fingerprint_.count(k)) {
          key = k;
          b = v;
          break;
        }
      }
    }
    return fail("configuration differs between nodes: '" + key + "' is '" + a + "' on node " +
                std::to_string(first_node_) + " but '" + b + "' on node " +
                std::to_string(j.node()) + "; start every node with the same settings");
  }
  c.node = static_cast<int>(j.node());
  c.lease = std::chrono::milliseconds(j.lease_ms());
  joined_[j.node()] = c.fd;
  hosts_[j.node()] = j.host().empty() ? c.peer : j.host();
  if (++joined_count_ == cfg_.num_nodes) {
    Envelope e;
    for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
      auto* m = e.mutable_join_ok()->add_members();
      m->set_node(n);
      m->set_host(hosts_[n]);
    }
    broadcast(e);
    start_leases();
  }
}

void Coordinator::on_exchange(Conn& c, const Exchange& x) {
  if (c.node < 0) return fail(c.peer + " sent an exchange before joining");
  if (answer_interrupted(c, x.name())) return;
  Round& r = rounds_[x.name()];
  if (r.blobs.empty()) {
    r.blobs.resize(cfg_.num_nodes);
    r.have.assign(cfg_.num_nodes, false);
  }
  if (r.have[c.node]) {
    return fail("node " + std::to_string(c.node) + " entered collective '" + x.name() +
                "' twice; nodes must call collectives in the same order");
  }
  r.have[c.node] = true;
  r.blobs[c.node] = x.blob();
  // Every live node (all of them in the default mode) must contribute.
  if (++r.count == live_count_) {
    Envelope e;
    e.mutable_exchange_done()->set_name(x.name());
    for (auto& b : r.blobs) e.mutable_exchange_done()->add_blobs(b);
    rounds_.erase(x.name());
    broadcast(e);
  }
}

void Coordinator::on_leave(Conn& c) {
  c.left = true;
  if (c.node < 0) return;
  has_left_[c.node] = true;
  maybe_all_left();
}

void Coordinator::on_frame(Conn& c, const Envelope& e) {
  if (c.removed) return;  // a removed node's late frames change nothing
  if (c.node >= 0) renew(static_cast<uint16_t>(c.node));
  // Whatever talks to the port must complete the key handshake first; until
  // then it is not a node of this cluster, and the cluster goes on.
  if (c.node < 0) return on_unjoined_frame(c, e);
  switch (e.body_case()) {
    case Envelope::kJoin:
    case Envelope::kSignedJoin:
      return fail(name_of(c) + " sent a second join");
    case Envelope::kExchange:
      return on_exchange(c, e.exchange());
    case Envelope::kLeave:
      return on_leave(c);
    case Envelope::kHeartbeat:
      return;  // renewed above
    case Envelope::kFailure:
      return fail(name_of(c) + ": " + e.failure().reason());
    case Envelope::kPublish:
      if (c.node < 0) return fail(c.peer + " published before joining");
      if (cfg_.on_publish) {
        cfg_.on_publish(static_cast<uint16_t>(c.node), e.publish().topic(), e.publish().blob());
      }
      return;
    default:
      return fail(name_of(c) + " sent a message only the coordinator may send");
  }
}

void Coordinator::on_readable(Conn& c) {
  Status err;
  bool open = c.reader.fill(c.fd, &err);
  Envelope e;
  Status perr;
  while (!failed_ && c.fd >= 0 && c.reader.next(&e, &perr)) on_frame(c, e);
  if (c.fd < 0) return;  // removed while handling its frames
  if (!perr.is_ok()) {
    if (c.node >= 0 && !c.removed) {
      node_failed(static_cast<uint16_t>(c.node), &c, name_of(c) + " sent a " + perr.message());
      drop(c);
    } else if (c.node < 0) {
      turn_away(c, "it sent a " + perr.message());
    } else {
      drop(c);
    }
    return;
  }
  if (!open) {
    if (c.node >= 0 && !c.left && !c.removed) {
      node_failed(static_cast<uint16_t>(c.node), &c,
                  "node " + std::to_string(c.node) + " disconnected without leaving (" +
                      err.message() + "; did its process die?)");
    } else if (c.node < 0 && !c.proven) {
      std::cerr << "coordinator: " << name_of(c) << " closed before completing the key handshake\n";
    }
    drop(c);
  }
}

void Coordinator::drop(Conn& c) {
  if (c.fd >= 0) close(c.fd);
  c.fd = -1;
}

std::string Coordinator::refusal() const {
  if (joined_count_ < cfg_.num_nodes) return "";
  // Only a removed node may still knock (it is told it was removed).
  if (cfg_.survive_failures && live_count_ < cfg_.num_nodes) return "";
  return "cluster '" + cfg_.cluster + "' is running with all its " +
         std::to_string(cfg_.num_nodes) +
         " nodes; a node joins only when the cluster starts (a node of another cluster "
         "given this coordinator's address?)";
}

void Coordinator::refuse(int fd, const std::string& reason) {
  Envelope e;
  e.mutable_failure()->set_refused(true);
  e.mutable_failure()->set_reason(reason);
  send_and_linger(fd, e);
}

void Coordinator::send_and_linger(int fd, const Envelope& e) {
  // A fresh socket's buffer holds the small frame: no wait.
  (void)send_frame(fd, e, Clock::now());
  // Up to 256 refused connections linger 200 ms (read and discarded), so
  // that a join the peer already sent does not make our close a reset that
  // loses the reason; beyond that (a flood) they close at once.
  if (refused_.size() >= 256) {
    close(fd);
    return;
  }
  shutdown(fd, SHUT_WR);
  refused_.push_back({fd, Clock::now() + std::chrono::milliseconds(200)});
}

void Coordinator::serve_refused() {
  const auto now = Clock::now();
  for (auto it = refused_.begin(); it != refused_.end();) {
    char buf[4096];
    ssize_t r;
    while ((r = recv(it->fd, buf, sizeof buf, 0)) > 0) {
    }
    const bool gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    if (gone || now >= it->until) {
      close(it->fd);
      it = refused_.erase(it);
    } else {
      ++it;
    }
  }
}

void Coordinator::accept_all() {
  for (;;) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    int fd = accept(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    if (fd < 0) return;
    tune_socket(fd);
    if (failed_) {
      // Latecomers learn why the cluster is gone.
      Envelope e;
      e.mutable_failure()->set_reason(result_message());
      (void)send_frame(fd, e, Clock::now());
      close(fd);
      continue;
    }
    if (const std::string why = refusal(); !why.empty()) {
      refuse(fd, why);
      continue;
    }
    Conn c;
    c.fd = fd;
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    c.peer = std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
    // A real node answers the challenge at once; one that does not is
    // turned away at the deadline, and never holds a node's place.
    c.join_by = Clock::now() + handshake_grace();
    c.reader.set_limit(kMaxHandshakeFrameBytes);
    if (challenge(c)) conns_.push_back(std::move(c));
  }
}

std::chrono::milliseconds Coordinator::handshake_grace() const {
  return std::min<std::chrono::milliseconds>(cfg_.join_timeout, cfg_.handshake_timeout);
}

void Coordinator::check_unjoined() {
  const auto now = Clock::now();
  for (Conn& c : conns_) {
    if (c.fd < 0 || c.node >= 0 || c.removed || now < c.join_by) continue;
    turn_away(c, "it did not complete the key handshake within " +
                     std::to_string(handshake_grace().count()) +
                     " ms of connecting (a slow or silent connection)");
  }
}

std::string Coordinator::result_message() {
  std::lock_guard<std::mutex> lk(mu_);
  return result_.message();
}

void Coordinator::check_join_deadline() {
  if (failed_ || joined_count_ == cfg_.num_nodes) return;
  if (Clock::now() - start_ < cfg_.join_timeout) return;
  std::string missing;
  int n_missing = 0;
  for (uint16_t n = 0; n < cfg_.num_nodes; ++n) {
    if (joined_[n] >= 0) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(n);
    ++n_missing;
  }
  fail((n_missing == 1 ? "node " : "nodes ") + missing + " did not join within " +
       std::to_string(cfg_.join_timeout.count()) +
       " ms (not started, crashed, or given another "
       "--coordinator?)");
}

int Coordinator::poll_timeout_ms() const {
  // Expiry is noticed within an eighth of the lease (and at most 50 ms);
  // heartbeats go out when due; refused connections are looked at every
  // 10 ms.
  int64_t ms = 50;
  if (cfg_.survive_failures && cfg_.lease.count() > 0) {
    ms = std::clamp<int64_t>(cfg_.lease.count() / 8, 1, 50);
  }
  if (!refused_.empty()) ms = std::min<int64_t>(ms, 10);
  if (leases_started_) {
    const auto now = Clock::now();
    for (const Conn& c : conns_) {
      if (c.fd < 0 || c.node < 0 || c.removed || c.left || c.lease.count() == 0) continue;
      const int64_t due =
          std::chrono::duration_cast<std::chrono::milliseconds>(c.next_heartbeat - now).count();
      ms = std::min<int64_t>(ms, std::max<int64_t>(due, 0));
    }
  }
  return static_cast<int>(ms);
}

void Coordinator::loop() {
  // Ahead of the nodes' busy workers on a shared machine
  // (base/thread_priority.h); the loop blocks in poll() between bursts.
  (void)raise_lease_thread();
  std::vector<pollfd> fds;
  while (!stop_.load()) {
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : conns_) fds.push_back({c.fd, static_cast<short>(c.fd >= 0 ? POLLIN : 0), 0});
    poll(fds.data(), fds.size(), poll_timeout_ms());
    if (fds[0].revents & POLLIN) accept_all();
    for (size_t i = 1; i < fds.size() && i - 1 < conns_.size(); ++i) {
      if (conns_[i - 1].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        on_readable(conns_[i - 1]);
      }
    }
    check_join_deadline();
    check_unjoined();
    if (!failed_) check_leases();
    if (!failed_) send_heartbeats();
    serve_refused();
    // Compact closed connections.
    std::vector<Conn> keep;
    for (auto& c : conns_) {
      if (c.fd >= 0) keep.push_back(std::move(c));
    }
    conns_.swap(keep);
  }
}

}  // namespace control

Result<std::unique_ptr<ControlServer>> ControlServer::start(const ControlServerConfig& cfg) {
  if (cfg.num_nodes == 0) return invalid_argument("a cluster needs at least one node");
  if (cfg.key.empty()) {
    return invalid_argument(
        "the coordinator needs the cluster key: it admits only nodes that prove it (give "
        "--cluster-key-file=FILE, or let the launcher make one)");
  }
  DRTMX_RETURN_IF_ERROR(check_cluster_key(cfg.key, "the coordinator's cluster key"));
  if (cfg.handshake_timeout.count() <= 0) {
    return invalid_argument("the handshake timeout must be above 0 ms");
  }
  if (cfg.num_nodes > kMaxNodes) {
    return invalid_argument("a cluster has at most " + std::to_string(kMaxNodes) + " nodes");
  }
  if (cfg.lease.count() < 0) return invalid_argument("the lease must not be negative");
  if (cfg.survive_failures && cfg.lease.count() == 0) {
    return invalid_argument("surviving failures needs leases: give a lease above 0 ms");
  }
  auto c = std::make_unique<control::Coordinator>(cfg);
  DRTMX_RETURN_IF_ERROR(c->listen_on(cfg.listen));
  return std::unique_ptr<ControlServer>(std::move(c));
}

}  // namespace drtmx::r2
