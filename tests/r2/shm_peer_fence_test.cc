// The op-window handshake that keeps a removed node's one-sided stores from
// landing late on shm (r2/shm/peer_fence.h, FenceCheck::enter/leave).
//
// A child process plays a removed node's issuing thread: it loops over op
// windows — enter, check the target's FenceWord, store a counter into the
// "target's memory" (shared with this process), spin, leave — with each
// window much longer than the gap between two. This process plays the
// survivor: it stops the child with SIGSTOP at a random moment (usually
// inside a window, after its check), publishes a configuration without it,
// and calls PeerFence::settle. After settle() returns, nothing may change
// the target's memory any more, whatever the child does when it resumes:
// checked by resuming it (SIGCONT) and watching the memory.
//
// Mutation check: without settle() the child's store in flight lands after
// the publication (LateStoreLandsWithoutSettle shows it does).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <random>
#include <thread>

#include "r2/common/fence.h"
#include "r2/shm/peer_fence.h"

namespace drtmx::r2::shm {
namespace {

// What the two processes share (MAP_SHARED, inherited across fork).
struct Shared {
  FenceWord target;                              // the survivor's word (node 0)
  FenceWord child;                               // the removed node's own word (node 1)
  OpGate gate;                                   // the removed node's thread 0
  alignas(64) std::atomic<uint64_t> memory{0};   // the survivor's memory it stores into
  alignas(64) std::atomic<uint64_t> windows{0};  // windows the child opened (progress)
};

Shared* map_shared() {
  void* p =
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* s = new (p) Shared();
  s->target.init(2);
  s->child.init(2);
  return s;
}

// The child: op windows forever (until killed). Inside a window, after the
// check, it stores and then spins ~50 us; between windows ~2 us.
[[noreturn]] void child_loop(Shared* s) {
  FenceCheck check(1, &s->child, {&s->target, &s->child});
  check.arm(&s->gate);
  for (uint64_t i = 1;; ++i) {
    check.enter();
    s->windows.fetch_add(1, std::memory_order_relaxed);
    if (check.allowed(0)) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (std::chrono::steady_clock::now() < until) {
      }
      s->memory.store(i, std::memory_order_relaxed);  // the op's store, late in the window
    }
    check.leave();
    const auto gap = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
    while (std::chrono::steady_clock::now() < gap) {
    }
  }
}

struct Round {
  bool killed = false;  // the survivor had to kill the child
  bool late = false;    // memory changed after the survivor's decision
  std::string report;
};

// One child, stopped after `run_us`, removed; `settle`: whether the
// survivor waits out / stops it (the mutation check passes false).
Round one_round(uint32_t run_us, bool settle) {
  Round out;
  Shared* s = map_shared();
  EXPECT_NE(s, nullptr);
  if (s == nullptr) return out;
  const pid_t pid = ::fork();
  if (pid == 0) child_loop(s);
  EXPECT_GT(pid, 0);
  // Let it run (at least one window opened, then `run_us` more).
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s->windows.load() == 0 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::yield();
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(run_us);
  while (std::chrono::steady_clock::now() < until) {
  }
  ::kill(pid, SIGSTOP);
  int st = 0;
  ::waitpid(pid, &st, WUNTRACED);  // stopped for sure
  // The survivor removes node 1: publish, fence, settle.
  NodeSet live;
  live.set(0);
  s->target.publish(1, live);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  {
    PeerFence fence;
    fence.set_grace_ms(5);
    fence.add(1, &s->gate, 1, pid, PeerFence::own_pid_namespace());
    if (settle) fence.settle(1, &out.report);
  }
  const uint64_t decided = s->memory.load(std::memory_order_acquire);
  // Whatever the child does now must not reach the memory. Watched until
  // it finished the window it was stopped in and opened two more (its
  // checks now see the removal) or it is gone (settle() killed it); at
  // most 5 s — not a fixed time, which a loaded machine may not give it.
  ::kill(pid, SIGCONT);
  const uint64_t opened = s->windows.load();
  bool reaped = false;
  const auto watch = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < watch) {
    if (s->memory.load(std::memory_order_acquire) != decided) out.late = true;
    if (s->windows.load() >= opened + 2) break;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      reaped = true;
      break;
    }
    std::this_thread::yield();
  }
  if (s->memory.load(std::memory_order_acquire) != decided) out.late = true;
  if (!reaped) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  out.killed = out.report.find("killed (SIGKILL)") != std::string::npos;
  ::munmap(s, sizeof(Shared));
  return out;
}

TEST(ShmPeerFence, NoStoreOfARemovedNodeLandsAfterSettle) {
  std::mt19937 rng(7);
  int killed = 0;
  for (int i = 0; i < 40; ++i) {
    const Round r = one_round(200 + rng() % 3000, /*settle=*/true);
    EXPECT_FALSE(r.late) << "round " << i << ": a store landed after settle()\n" << r.report;
    killed += r.killed;
  }
  // Windows fill ~96 % of the child's time: most stops fall inside one,
  // and settle() had to stop the child there.
  EXPECT_GT(killed, 20) << "the child was rarely stopped inside a window: the test proves little";
}

TEST(ShmPeerFence, LateStoreLandsWithoutSettle) {
  std::mt19937 rng(7);
  int late = 0;
  for (int i = 0; i < 20; ++i) late += one_round(200 + rng() % 3000, /*settle=*/false).late;
  EXPECT_GT(late, 5) << "without settle() no store landed late: the other test proves nothing";
}

TEST(ShmPeerFence, AnUnstoppedNodeIsWaitedOutNotKilled) {
  // Not stopped: its window ends by itself within the grace period.
  Shared* s = map_shared();
  ASSERT_NE(s, nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) child_loop(s);
  ASSERT_GT(pid, 0);
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s->windows.load() < 10 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::yield();
  }
  NodeSet live;
  live.set(0);
  s->target.publish(1, live);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::string report;
  PeerFence fence;
  fence.set_grace_ms(2000);
  fence.add(1, &s->gate, 1, pid, PeerFence::own_pid_namespace());
  fence.settle(1, &report);
  EXPECT_EQ(report, "");
  const uint64_t decided = s->memory.load(std::memory_order_acquire);
  const auto watch = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  bool late = false;
  while (std::chrono::steady_clock::now() < watch) {
    late = late || s->memory.load(std::memory_order_acquire) != decided;
  }
  EXPECT_FALSE(late);
  EXPECT_EQ(::kill(pid, 0), 0) << "the running child was killed";
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::munmap(s, sizeof(Shared));
}

}  // namespace
}  // namespace drtmx::r2::shm
