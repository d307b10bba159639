// The ControlClient implementation (internal to the control plane).
//
// join() is synchronous on the caller's thread. After JoinOk the client
// runs one thread of its own (member_thread.cc) that reads every frame from
// the coordinator and, with leases on, sends a Heartbeat every lease/4. It
// hands results to the caller's thread through `mu_`/`cv_` (collective
// results, interrupted collectives, the terminal failure) and publishes the
// membership through `view_` (lock-free for readers). Frames are sent by
// either thread under `send_mu_`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "r2/control/control.h"
#include "r2/control/framing.h"

namespace drtmx::r2::control {

class MemberClient final : public ControlClient {
 public:
  explicit MemberClient(const ControlClientConfig& cfg);
  ~MemberClient() override;

  Status join();

  uint16_t node() const override { return cfg_.node; }
  uint16_t num_nodes() const override { return cfg_.num_nodes; }
  const std::vector<r2::Member>& membership() const override { return members_; }
  const MembershipView& view() const override { return view_; }
  std::vector<r2::MembershipChange> changes() const override;
  Status health() const override;
  std::chrono::milliseconds default_timeout() const override { return cfg_.op_timeout; }

  using ControlClient::exchange;
  Result<std::vector<std::string>> exchange(const std::string& name, const std::string& blob,
                                            std::chrono::milliseconds timeout) override;
  Status publish(const std::string& topic, const std::string& blob) override;
  void report_failure(const std::string& why) override;
  Status leave() override;

 private:
  // member.cc
  Status send(const Envelope& e, Clock::time_point deadline);
  Status receive_join_reply(Envelope* out, Clock::time_point deadline);
  // The key handshake after `challenge` (the coordinator's first frame):
  // sends this node's SignedJoin of `join_bytes` and checks the
  // coordinator's proof (Admitted). Ok: the coordinator proved the key.
  Status handshake(const Envelope& challenge, const std::string& join_bytes,
                   Clock::time_point deadline);
  // Records the terminal failure `s` (the first one wins) and wakes the caller.
  Status fail_locally(Status s);
  void stop_thread();

  // member_thread.cc: the client's own thread.
  void run();
  // Handles one frame; false when the connection is finished for good.
  bool dispatch(const Envelope& e);
  void on_membership_change(const MembershipChange& m);  // the proto message
  void on_removed(uint64_t epoch, const std::string& reason);
  // The coordinator is gone (`why`): the terminal failure, and
  // cfg_.on_lost when this is the first one.
  void lost(Status why);

  ControlClientConfig cfg_;
  int fd_ = -1;
  int wake_fd_ = -1;  // eventfd: leave()/the destructor wake the thread
  FrameReader reader_;
  std::vector<r2::Member> members_;
  MembershipView view_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex send_mu_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<std::string>> done_;
  std::map<std::string, std::string> interrupted_;  // collective -> why
  std::vector<r2::MembershipChange> changes_;
  Status failed_;
};

}  // namespace drtmx::r2::control
