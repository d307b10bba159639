// An in-process ControlClient for tests whose nodes are threads of one
// process: exchange() is an all-gather through shared memory of the process.
// A node's report_failure() fails every pending and later exchange of the
// others at once (as the coordinator aborts a cluster), instead of leaving
// them waiting for the timeout.
// The real control plane (TCP) is tested in control_*_test.cc and used by
// the multi-process tests.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "r2/control/control.h"

namespace drtmx::r2::testing {

class LocalControlHub {
 public:
  explicit LocalControlHub(uint16_t nodes) : nodes_(nodes) {}

  Result<std::vector<std::string>> exchange(uint16_t node, const std::string& name,
                                            const std::string& blob,
                                            std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lk(mu_);
    Round& r = rounds_[name];
    if (r.blobs.empty()) r.blobs.resize(nodes_);
    r.blobs[node] = blob;
    if (++r.arrived == nodes_) cv_.notify_all();
    if (!cv_.wait_for(lk, timeout, [&] { return r.arrived >= nodes_ || !failure_.empty(); })) {
      return timeout_error("local exchange '" + name + "' timed out");
    }
    if (r.arrived < nodes_) return unavailable("local exchange '" + name + "': " + failure_);
    return r.blobs;
  }

  void fail(uint16_t node, const std::string& why) {
    std::lock_guard<std::mutex> lk(mu_);
    if (failure_.empty()) failure_ = "node " + std::to_string(node) + " failed: " + why;
    cv_.notify_all();
  }

 private:
  struct Round {
    std::vector<std::string> blobs;
    uint16_t arrived = 0;
  };
  uint16_t nodes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Round> rounds_;
  std::string failure_;
};

class LocalControl final : public ControlClient {
 public:
  LocalControl(std::shared_ptr<LocalControlHub> hub, uint16_t node, uint16_t nodes)
      : hub_(std::move(hub)), node_(node), nodes_(nodes), view_(nodes) {
    for (uint16_t i = 0; i < nodes; ++i) members_.push_back({i, "127.0.0.1"});
  }
  uint16_t node() const override { return node_; }
  uint16_t num_nodes() const override { return nodes_; }
  const std::vector<Member>& membership() const override { return members_; }
  const MembershipView& view() const override { return view_; }
  std::vector<MembershipChange> changes() const override { return {}; }
  Status health() const override { return Status::ok(); }
  using ControlClient::exchange;
  Result<std::vector<std::string>> exchange(const std::string& name, const std::string& blob,
                                            std::chrono::milliseconds timeout) override {
    return hub_->exchange(node_, name, blob, timeout);
  }
  std::chrono::milliseconds default_timeout() const override {
    return std::chrono::milliseconds(20000);
  }
  Status publish(const std::string&, const std::string&) override { return Status::ok(); }
  void report_failure(const std::string& why) override { hub_->fail(node_, why); }
  Status leave() override { return Status::ok(); }

 private:
  std::shared_ptr<LocalControlHub> hub_;
  uint16_t node_, nodes_;
  std::vector<Member> members_;
  MembershipView view_;
};

}  // namespace drtmx::r2::testing
