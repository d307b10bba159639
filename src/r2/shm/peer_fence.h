// The survivor's side of fencing a removed peer on shm (survive-failures
// mode; r2/README.md "Fencing").
//
// On shm an issuing thread checks the membership and then stores into the
// target's memory with its own CPU: two steps. A thread stopped between
// them (SIGSTOP, a long preemption) would complete its store whenever it
// resumes, long after the survivors removed its node and took over its
// records. Each issuing thread therefore announces its op windows in an
// OpGate (r2/common/fence.h; odd = inside), and a survivor that removes a
// node publishes its new FenceWord and then waits, per thread of the removed
// node, until the gate it read leaves its odd value: from then on that
// thread's checks see the removal. A thread whose gate stays odd past a grace
// period is stopped inside its window; every node of a shm cluster is a
// process on this host, so the survivor ends it with SIGKILL (through a
// pidfd opened at connect, immune to pid reuse) and waits for its exit —
// the classic answer, fencing by stopping the node. Its stores done before
// the stop may have left a torn record: the failover that follows repairs
// it as it repairs a coordinator killed during write-back.
//
// Only when the pidfd could not be opened (another pid namespace, an old
// kernel) does settle() fall back to waiting, bounded, and then report that
// one op of that thread may still land late.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "r2/common/fence.h"
#include "r2/fabric.h"

namespace drtmx::r2::shm {

class PeerFence {
 public:
  PeerFence() = default;
  ~PeerFence();
  PeerFence(const PeerFence&) = delete;
  PeerFence& operator=(const PeerFence&) = delete;

  // This process's pid and pid namespace, for the descriptor.
  static int64_t own_pid();
  static uint64_t own_pid_namespace();

  // Node `n`: its `threads` gates, mapped here, and its process as its
  // descriptor says. Opens a pidfd when the namespaces match.
  void add(NodeId n, const OpGate* gates, uint16_t threads, int64_t pid, uint64_t pidns);

  // After this node published a configuration without `n`: returns once
  // no thread of `n` can still store into this node's memory. Messages
  // for stderr (what was waited for or killed) go to `report`.
  void settle(NodeId n, std::string* report);

  // Grace before a thread inside its window counts as stopped (tests).
  void set_grace_ms(uint32_t ms) { grace_ms_ = ms; }

 private:
  struct Peer {
    const OpGate* gates = nullptr;
    uint16_t threads = 0;
    int pidfd = -1;
    std::string no_pidfd;  // why there is none
  };
  bool kill_and_wait(Peer& p, NodeId n, std::string* report);
  std::vector<Peer> peers_;
  uint32_t grace_ms_ = 50;
};

}  // namespace drtmx::r2::shm
