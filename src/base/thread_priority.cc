#include "base/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace drtmx {

ThreadPriority raise_lease_thread() {
  sched_param sp{};
  sp.sched_priority = 1;
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0) return ThreadPriority::kRealtime;
  // setpriority on a thread id changes that thread only (Linux).
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, tid, -10) == 0) return ThreadPriority::kRaised;
  return ThreadPriority::kNormal;
}

const char* thread_priority_name(ThreadPriority p) {
  switch (p) {
    case ThreadPriority::kRealtime:
      return "real-time (SCHED_FIFO 1)";
    case ThreadPriority::kRaised:
      return "nice -10";
    case ThreadPriority::kNormal:
      return "normal";
  }
  return "normal";
}

}  // namespace drtmx
