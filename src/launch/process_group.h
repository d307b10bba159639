// ProcessGroup: the node processes of a local multi-process cluster, started
// by a launcher (r2-bench --processes, drtmx-bench). If any node fails, the
// others are stopped and the failure is reported with the node's name; no
// child outlives the group.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::bench {

// Path of the running executable (to start copies of it as nodes).
std::string self_exe();

class ProcessGroup {
 public:
  ProcessGroup() = default;
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  // Starts `exe args...` named `name` (used in error messages). With
  // `input`, the child's standard input is a pipe holding it and then its
  // end (how a launcher hands a node its cluster key); without, the
  // child inherits this process's.
  Status spawn(const std::string& name, const std::string& exe,
               const std::vector<std::string>& args, const std::string& input = "");
  // Waits until every child exited. The first one that exits non-zero or by
  // a signal makes the others stop (SIGTERM, then SIGKILL after a grace
  // period) and is returned as the error — of the children found ended at
  // the same time, one killed by a signal before one that exited non-zero
  // (the others' errors are usually about the dead one). On timeout all
  // are killed.
  // `poll` (optional) is called about every 5 ms while children run (e.g.
  // to signal_all() at some moment).
  Status wait_all(std::chrono::milliseconds timeout, const std::function<void()>& poll = {});
  // Stops every child still running: the stop signal (SIGTERM by default),
  // then SIGKILL after a grace period of 2 s.
  void kill_all();
  // The signal kill_all() sends first (SIGKILL: no grace period).
  void set_stop_signal(int sig) { stop_signal_ = sig; }
  // Sends `sig` to every child still running (does not wait).
  void signal_all(int sig);
  // Sends `sig` to child `index` (spawn order) if it still runs, and from
  // then on its death by that signal is expected: wait_all() neither
  // reports it nor stops the others for it (--kill-node: the cluster must
  // survive it). False when that child is not running.
  bool kill_one(size_t index, int sig);
  // From now on child `index` may end in any way (a node stopped beyond
  // its lease exits with an error once resumed): not a failure.
  void expect_end(size_t index);
  // Sends `sig` to child `index` if it still runs.
  bool signal_one(size_t index, int sig);

  // How each child ended, in spawn order (after wait_all).
  struct Ended {
    std::string name;
    int signal = 0;      // the signal that killed it (0: it exited)
    int exit_code = -1;  // when it exited; -1 when unknown (killed or not reaped)
  };
  std::vector<Ended> ended() const;
  // The process id of child `index` while it runs; -1 when it ended or
  // there is no such child.
  pid_t pid(size_t index) const {
    return index < children_.size() && !children_[index].done ? children_[index].pid : -1;
  }

 private:
  struct Child {
    std::string name;
    pid_t pid;
    bool done;
    int signal = 0, exit_code = -1;
    int expected_signal = 0;  // kill_one(): its death by this signal is no failure
    bool any_end = false;     // expect_end(): however it ends, no failure
  };
  void note(Child& c, int status);
  std::vector<Child> children_;
  int stop_signal_ = SIGTERM;
};

}  // namespace drtmx::bench
