// SendQueue: the slot accounting of one channel's send queue, as an RNIC
// keeps it. Shared by the backends so both refuse and force-signal alike.
//
// A posted request occupies a slot until a signaled completion at or after
// it is polled (FIFO order implies the earlier unsignaled ones are done).
// To keep the queue from filling with unsignaled requests whose slots could
// never be freed, every `depth/2`-th request in a run of unsignaled ones is
// signaled by the backend itself ("forced"); its completion is consumed by
// the backend and never reported to the caller.
//
// Single-threaded: owned by the endpoint's worker thread.
#pragma once

#include <cstdint>
#include <vector>

namespace drtmx::r2 {

class SendQueue {
 public:
  explicit SendQueue(uint32_t depth);

  uint32_t depth() const { return depth_; }
  uint32_t used() const { return used_; }
  bool has_room() const { return used_ < depth_; }

  // Accounts one posted request (caller checked has_room()). Returns true
  // when the request must carry a signal: the caller asked for one, or it is
  // forced; `*forced` tells which.
  bool on_post(bool user_signaled, bool* forced);

  // A signaled request completed (in FIFO order): frees its slot and the
  // slots of the unsignaled requests posted before it.
  void on_signaled_completion();

  // Signaled requests still in flight.
  uint32_t pending_signals() const { return count_; }

 private:
  uint32_t depth_;
  uint32_t used_ = 0;
  uint32_t unsignaled_run_ = 0;  // unsignaled requests since the last signal
  // Ring of "slots covered" by each in-flight signaled request, FIFO.
  std::vector<uint32_t> covers_;
  uint32_t head_ = 0, count_ = 0;
};

}  // namespace drtmx::r2
