// OpBatch: the one-sided ops one coroutine issues together. Ops to the same
// peer go out behind one doorbell, in the order added (FIFO per channel), so
// e.g. a CAS followed by a READ of the same record executes in that order.
// Reuse one batch (clear()) to avoid allocation on hot paths.
//
// Buffers: every local pointer must lie in registered memory (see
// r2/fabric.h). A passive (unsignaled) write is not waited for; its source
// must stay unchanged until a later signaled op on the same channel has
// completed (an RNIC may read it after post unless it is inline, < 64 B).
#pragma once

#include <cstdint>
#include <vector>

#include "r2/fabric.h"

namespace drtmx::r2 {

class OpBatch {
 public:
  void read(RemoteAddr from, void* to, uint32_t len) { add(Verb::kRead, from, to, len, 0, 0); }
  void write(RemoteAddr to, const void* from, uint32_t len, bool signaled = true) {
    add(Verb::kWrite, to, const_cast<void*>(from), len, 0, 0, signaled);
  }
  // *old receives the word's previous value; success iff *old == expected.
  // Unsignaled (signaled = false) is correct only when a later signaled op
  // on the same channel is awaited: its completion implies this one's.
  void cas(RemoteAddr at, uint64_t expected, uint64_t desired, uint64_t* old,
           bool signaled = true) {
    add(Verb::kCas, at, old, 8, expected, desired, signaled);
  }
  void faa(RemoteAddr at, uint64_t add_value, uint64_t* old) {
    add(Verb::kFaa, at, old, 8, 0, add_value);
  }

  size_t size() const { return ops_.size(); }
  // Op i as queued (tests and diagnostics: what a helper put into a batch,
  // in which order).
  const WorkRequest& op(size_t i) const { return ops_[i]; }
  bool empty() const { return ops_.empty(); }
  void clear() {
    ops_.clear();
    status_.clear();
  }
  // After Co::run: the status of op i (in the order added).
  OpStatus status(size_t i) const { return status_[i]; }
  // The first non-ok status, or kOk.
  OpStatus first_error() const {
    for (OpStatus s : status_) {
      if (s != OpStatus::kOk) return s;
    }
    return OpStatus::kOk;
  }

 private:
  friend class Co;
  friend class Worker;
  void add(Verb v, RemoteAddr r, void* local, uint32_t len, uint64_t cmp, uint64_t op,
           bool signaled = true) {
    // Built in place: a request assembled on the stack by narrow stores
    // and copied by wide loads stalls on store forwarding.
    WorkRequest& wr = ops_.emplace_back();
    wr.verb = v;
    wr.signaled = signaled;
    wr.len = len;
    wr.local = local;
    wr.remote = r;
    wr.compare = cmp;
    wr.operand = op;
    status_.push_back(OpStatus::kOk);
  }
  std::vector<WorkRequest> ops_;
  std::vector<OpStatus> status_;
};

}  // namespace drtmx::r2
