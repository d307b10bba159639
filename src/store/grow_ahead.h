// GrowAhead: one thread per node that backs the next extent of a growing
// part before its inserters reach it (store/heap.h, "Growth").
//
// Backing an extent is system calls (fallocate and page population, plus
// the lock entries and MVCC chain heads of its slots): about 0.5 ms per
// MiB here, so an eighth of a 1 GiB heap is tens of milliseconds. Done by
// the inserting thread, that stalls the thread's every coroutine and, since
// the heap's lock is held, every other inserter of the partition. A part
// that has used half of its last backed extent posts a task here instead;
// the inserting thread backs an extent itself only when the thread is
// behind (a burst of inserts outran it).
//
// Tasks run one at a time, in the order posted. The destructor stops the
// thread after the task running (if any); tasks still queued are dropped —
// a part whose task was dropped backs its next extent inline, as without a
// GrowAhead. Whoever posts must keep the objects a task touches alive until
// drain() returned or the GrowAhead is destroyed.
//
// Thread safety: post() and drain() from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace drtmx::store {

class GrowAhead {
 public:
  GrowAhead();
  ~GrowAhead();
  GrowAhead(const GrowAhead&) = delete;
  GrowAhead& operator=(const GrowAhead&) = delete;

  // Queues `task` to run on the thread.
  void post(std::function<void()> task);
  // Returns once every task posted before the call has run.
  void drain();
  // Tasks run so far.
  uint64_t done() const;

 private:
  void loop();

  mutable std::mutex mu_;
  std::condition_variable work_, idle_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false;  // a task is being run (outside mu_)
  bool stop_ = false;
  uint64_t done_ = 0;
  std::thread thread_;  // last: started once the fields above exist
};

}  // namespace drtmx::store
