#include "r2/node_runtime.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "r2/fabric_factory.h"

namespace drtmx::r2 {

namespace {

// A node that lost its cluster must not act on it later. What its
// connections still queue — a cut-off host's unacknowledged one-sided ops
// (UCX over TCP) — would otherwise be delivered when the network heals,
// after the survivors removed it; where UCX carries one-sided ops itself
// (its emulation: --ucx-strict-order on tcp; RDMA transports) a survivor
// cannot refuse them, and UCX 1.13 even aborted one acknowledging such a
// PUT on the failed endpoint. So every socket of the process is set to
// reset on close (SO_LINGER 0): the exit discards what it queued instead of
// sending it (found by ucx_netns_test's partitioned host).
void discard_unsent_at_exit() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;
  const int own = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    if (fd == own || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    const linger reset{1, 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }
  ::closedir(d);
}

}  // namespace

std::function<void(const Status&)> exit_when_orphaned(const std::string& program,
                                                      const FabricConfig& fabric) {
  return [program, fabric](const Status& why) {
    const SharedNames gone = remove_shared_names(fabric);
    std::string m = program + " node " + std::to_string(fabric.node) + ": " + why.message() +
                    "; stopping this node";
    if (gone.count > 0) {
      m += " (removed its " + std::to_string(gone.count) + " shared-memory segments, " +
           std::to_string(gone.bytes >> 20) + " MiB)";
    }
    m += "\n";
    // One write (the worker threads may be mid-print), then the end: no
    // destructor runs, as after a crash; the workers never see a half
    // torn-down node.
    (void)!::write(2, m.data(), m.size());
    discard_unsent_at_exit();
    ::_exit(kOrphanExitCode);
  };
}

Result<std::unique_ptr<NodeRuntime>> NodeRuntime::start(const NodeRuntimeConfig& cfg) {
  DRTMX_RETURN_IF_ERROR(cfg.worker.validate());
  std::unique_ptr<NodeRuntime> rt(new NodeRuntime());
  // Join first: the control plane refuses a duplicate node id before this
  // process creates (and, for a crashed run's leftovers, first removes) the
  // node's shared-memory segments — which a second process started with a
  // running node's id must never touch.
  ControlClientConfig cc = cfg.control;
  cc.cluster = cfg.fabric.cluster;
  if (cc.key.empty()) cc.key = cfg.fabric.cluster_key;
  cc.node = cfg.fabric.node;
  cc.num_nodes = cfg.fabric.num_nodes;
  cc.fingerprint = cfg.fabric.fingerprint();
  for (auto& [k, v] : cfg.control.fingerprint) cc.fingerprint[k] = v;
  cc.lease = std::chrono::milliseconds(cfg.fabric.lease_ms);
  cc.survive_failures = cfg.fabric.survive_failures;
  NodeRuntime* self = rt.get();
  const auto user_on_change = cfg.control.on_change;
  cc.on_change = [self, user_on_change](const MembershipChange& c) {
    {
      std::lock_guard<std::mutex> lk(self->fence_mu_);
      // Acquire: pairs with the release store once the fabric is connected.
      if (Fabric* f = self->fenced_fabric_.load(std::memory_order_acquire)) {
        NodeSet live;
        for (uint16_t n : c.live) live.set(n);
        f->apply_membership(c.epoch, live);
      }
    }
    if (user_on_change) user_on_change(c);
  };
  auto control = ControlClient::join(cc);
  if (!control) return control.status();
  rt->control_ = std::move(control.value());
  auto fail = [&](Status s) {
    rt->control_->report_failure(s.message());
    return s;
  };
  auto fabric = make_fabric(cfg.fabric);
  if (!fabric) return fail(fabric.status());
  rt->fabric_ = std::move(fabric.value());
  for (auto& [id, bytes] : cfg.regions) {
    auto r = rt->fabric_->register_region(id, bytes);
    if (!r) return fail(r.status());
  }
  for (auto& [id, bytes] : cfg.growable_regions) {
    auto r = rt->fabric_->register_growable_region(id, bytes);
    if (!r) return fail(r.status());
  }
  for (auto& [id, file] : cfg.file_regions) {
    auto r = rt->fabric_->register_file_region(id, file);
    if (!r) return fail(r.status());
  }
  if (Status s = rt->fabric_->connect(*rt->control_); !s.is_ok()) return fail(s);
  {
    // From now on the control thread applies changes; the ones it learnt
    // while the fabric was connecting are applied here.
    std::lock_guard<std::mutex> lk(rt->fence_mu_);
    rt->fenced_fabric_.store(rt->fabric_.get(), std::memory_order_release);
    const MembershipView::Snapshot v = rt->control_->view().snapshot();
    if (v.epoch > 0) rt->fabric_->apply_membership(v.epoch, v.live);
  }
  for (ThreadId t = 0; t < cfg.fabric.threads; ++t) {
    rt->workers_.push_back(std::make_unique<Worker>(rt->fabric_->endpoint(t), cfg.fabric.node,
                                                    cfg.fabric.num_nodes, cfg.fabric.threads,
                                                    cfg.worker));
    if (cfg.fabric.survive_failures) rt->workers_.back()->set_membership(&rt->control_->view());
  }
  return rt;
}

NodeRuntime::~NodeRuntime() {
  stop();
}

void NodeRuntime::launch(const std::function<void(Worker&)>& setup) {
  for (auto& w : workers_) {
    Worker* wp = w.get();
    threads_.emplace_back([this, wp, setup] {
      setup(*wp);
      bool counted = false;
      wp->run_until([&] {
        if (!counted && wp->coroutines_finished()) {
          counted = true;
          finished_.fetch_add(1);
        }
        return stop_.load(std::memory_order_relaxed);
      });
      if (!counted) finished_.fetch_add(1);
    });
  }
}

bool NodeRuntime::wait_coroutines(std::chrono::milliseconds timeout) const {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!coroutines_finished()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void NodeRuntime::stop() {
  stop_.store(true);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

Status NodeRuntime::failure() const {
  for (auto& w : workers_) {
    if (!w->failure().is_ok()) return w->failure();
  }
  return Status::ok();
}

}  // namespace drtmx::r2
