#include "r2/shm/peer_fence.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace drtmx::r2::shm {

namespace {

// Waits until `g` leaves the odd value `s`, at most `ms` milliseconds.
bool left_window(const OpGate& g, uint64_t s, uint32_t ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (g.seq.load(std::memory_order_acquire) != s) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

bool exited(int pidfd, int timeout_ms) {
  pollfd p{pidfd, POLLIN, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

PeerFence::~PeerFence() {
  for (Peer& p : peers_) {
    if (p.pidfd >= 0) ::close(p.pidfd);
  }
}

int64_t PeerFence::own_pid() {
  return static_cast<int64_t>(::getpid());
}

uint64_t PeerFence::own_pid_namespace() {
  struct stat st;
  if (::stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

void PeerFence::add(NodeId n, const OpGate* gates, uint16_t threads, int64_t pid, uint64_t pidns) {
  if (peers_.size() <= n) peers_.resize(n + size_t{1});
  Peer& p = peers_[n];
  p.gates = gates;
  p.threads = threads;
  if (p.pidfd >= 0) ::close(p.pidfd);
  p.pidfd = -1;
  const uint64_t mine = own_pid_namespace();
  if (pid <= 0) {
    p.no_pidfd = "its descriptor named no process";
  } else if (pid == own_pid()) {
    p.no_pidfd = "it is this process (nodes as threads)";
  } else if (mine == 0 || pidns != mine) {
    p.no_pidfd = "it runs in another pid namespace";
  } else {
    const long fd = ::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0);
    if (fd < 0) {
      p.no_pidfd = std::string("pidfd_open(") + std::to_string(pid) + "): " + std::strerror(errno);
    } else {
      p.pidfd = static_cast<int>(fd);
    }
  }
}

bool PeerFence::kill_and_wait(Peer& p, NodeId n, std::string* report) {
  if (exited(p.pidfd, 0)) return true;  // died inside its window: no store to come
  if (::syscall(SYS_pidfd_send_signal, p.pidfd, SIGKILL, nullptr, 0) != 0 && errno != ESRCH) {
    *report += "r2 shm: could not kill removed node " + std::to_string(n) + ": " +
               std::strerror(errno) + "\n";
    return false;
  }
  if (!exited(p.pidfd, 10000)) {
    *report +=
        "r2 shm: removed node " + std::to_string(n) + " did not exit within 10 s of SIGKILL\n";
    return false;
  }
  *report += "r2 shm: removed node " + std::to_string(n) +
             " was stopped inside a one-sided op; killed (SIGKILL) so that the op cannot land "
             "after its removal\n";
  return true;
}

void PeerFence::settle(NodeId n, std::string* report) {
  if (n >= peers_.size() || peers_[n].gates == nullptr) return;
  Peer& p = peers_[n];
  for (uint16_t t = 0; t < p.threads; ++t) {
    const OpGate& g = p.gates[t];
    const uint64_t s = g.seq.load(std::memory_order_acquire);
    if (s % 2 == 0) continue;
    if (p.pidfd >= 0 && exited(p.pidfd, 0)) return;  // died (SIGKILL): no store to come
    if (left_window(g, s, grace_ms_)) continue;
    // Stopped (or dead) inside its window.
    if (p.pidfd >= 0 && kill_and_wait(p, n, report)) return;  // no thread of it runs again
    if (left_window(g, s, 10000)) continue;
    *report += "r2 shm: removed node " + std::to_string(n) + " thread " + std::to_string(t) +
               " stayed inside a one-sided op for 10 s and could not be stopped (" +
               (p.no_pidfd.empty() ? std::string("kill failed") : p.no_pidfd) +
               "); that op may still land after its removal\n";
  }
}

}  // namespace drtmx::r2::shm
