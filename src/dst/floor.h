// SnapshotFloor: a lower bound on the read timestamps of every snapshot
// (read-only transaction) of one node that is running now or will start
// later — the node's part of the cluster-wide low-water mark that version
// garbage collection uses (version_store.h). No central server: each node
// computes its floor and sends it to the others (MvccNode); the cluster's
// low-water mark is the minimum of the latest floors of all nodes. Floors
// only grow, so a stale floor of a peer is still a lower bound.
//
// Why it is a bound. Per worker thread, `base` is a timestamp no snapshot
// beginning from now on may read below: begin() returns max(proposed,
// base) and records it in the coroutine's slot; compute(now) raises every
// worker's base to `now` and takes the minimum of the bases and the active
// slots. Both run under the worker's mutex, so a snapshot either began
// before compute() looked at its worker (its slot is counted) or after
// (its timestamp is >= the base compute() set). The DST engine proposes
// its LocalTS (>= the physical clock) and uses the returned timestamp; the
// GTS engine proposes the stable timestamp it fetched and compute() gets
// the newest stable timestamp the node has seen: in both, the timestamp
// used is >= every floor computed before.
//
// Threading: begin/end from worker `w`'s coroutines; compute from any
// one thread (the node's publisher). The mutex is per worker and taken by
// the publisher once per round, so coroutines never wait for each other.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "dst/timestamp.h"

namespace drtmx::dst {

class SnapshotFloor {
 public:
  static constexpr Timestamp kIdle = std::numeric_limits<Timestamp>::max();

  SnapshotFloor(uint16_t workers, uint16_t coroutines)
      : coroutines_(coroutines), workers_(workers) {
    for (auto& w : workers_) w.slots.assign(coroutines, kIdle);
  }

  // Coroutine c of worker w begins a snapshot it would like to read at
  // `proposed`; returns the timestamp it must read at (>= proposed).
  Timestamp begin(uint16_t w, uint16_t c, Timestamp proposed) {
    Worker& k = workers_[w];
    std::lock_guard<std::mutex> g(k.mu);
    const Timestamp ts = proposed > k.base ? proposed : k.base;
    k.slots[c] = ts;
    return ts;
  }
  void end(uint16_t w, uint16_t c) {
    Worker& k = workers_[w];
    std::lock_guard<std::mutex> g(k.mu);
    k.slots[c] = kIdle;
  }

  // The node's floor given `now` (no snapshot begins below it from here
  // on); never below an earlier result.
  Timestamp compute(Timestamp now) {
    Timestamp m = kIdle;
    for (Worker& k : workers_) {
      std::lock_guard<std::mutex> g(k.mu);
      if (now > k.base) k.base = now;
      if (k.base < m) m = k.base;
      for (Timestamp s : k.slots) m = s < m ? s : m;
    }
    if (m > floor_) floor_ = m;
    return floor_;
  }
  // Active snapshots now (reports, tests).
  size_t active() {
    size_t n = 0;
    for (Worker& k : workers_) {
      std::lock_guard<std::mutex> g(k.mu);
      for (Timestamp s : k.slots) n += s != kIdle;
    }
    return n;
  }

 private:
  struct Worker {
    std::mutex mu;
    Timestamp base = 0;
    std::vector<Timestamp> slots;
  };
  uint16_t coroutines_;
  std::vector<Worker> workers_;
  Timestamp floor_ = 0;
};

}  // namespace drtmx::dst
