// ProcessGroup: the node processes of a local multi-process cluster, started
// by a launcher (r2-bench --processes, drtmx-bench). If any node fails, the
// others are stopped and the failure is reported with the node's name; no
// child outlives the group.
#pragma once

#include <sys/types.h>

#include <chrono>
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

  // Starts `exe args...` named `name` (used in error messages).
  Status spawn(const std::string& name, const std::string& exe,
               const std::vector<std::string>& args);
  // Waits until every child exited. The first one that exits non-zero or by
  // a signal makes the others stop (SIGTERM, then SIGKILL after a grace
  // period) and is returned as the error — of the children found ended at
  // the same time, one killed by a signal before one that exited non-zero
  // (the others' errors are usually about the dead one). On timeout all
  // are killed.
  Status wait_all(std::chrono::milliseconds timeout);
  // Stops every child still running.
  void kill_all();

 private:
  struct Child {
    std::string name;
    pid_t pid;
    bool done;
  };
  std::vector<Child> children_;
};

}  // namespace drtmx::bench
