// GtsOracle: the centralized timestamp oracle of the GTS baseline (thesis
// §5.1.2, Fig 5-2) — the design DST exists to avoid, built so that the
// comparison means something. It lives on node 0:
//
//   GlobalTS   a counter in registered memory. A read-write transaction
//              takes its commit timestamp with one one-sided FAA (after
//              locking its write set, before checking its reads — see
//              txn/validate.cc for why that order).
//   INSTALL    when the transaction has written its versions at every
//              primary and unlocked (or aborted after taking a timestamp),
//              it sends INSTALL(ts), one-way, to node 0.
//   StableTS   the largest S such that every timestamp <= S was issued and
//              installed; a word in the same region, next cache line. A
//              read-only transaction reads it with one one-sided READ and
//              reads the snapshot at S: every version with wts <= S is in
//              place, and a writer still holding a lock has a timestamp > S,
//              so snapshot reads neither raise timestamps nor wait for locks.
//
// Stabilization: install(ts) marks ts done in a window of kWindow slots
// (slot ts mod kWindow holds ts once done), then advances StableTS over
// every consecutive done timestamp. Lock-free: each step is a CAS of
// StableTS from s to s + 1 after seeing slot s + 1 done; an installer that
// marks t and then finds StableTS below t - 1 with t - 1 not done leaves
// the advance to whoever marks t - 1 — that one's CAS sequence reaches t
// and sees t's mark (store then load on both sides, sequentially
// consistent). A timestamp kWindow or more above StableTS (a coordinator
// that took a small one was descheduled while others issued a window's
// worth) waits in an overflow set under a mutex and enters the window as
// StableTS approaches — whoever advances StableTS moves it, or the
// installer itself when StableTS moved while it inserted. A coordinator
// that dies between FAA and INSTALL stops StableTS at its timestamp (the
// oracle's known weakness; the DST engine has no such single point) until
// the survivors' failover settles it (settle_issued()).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

#include "base/status.h"
#include "dst/timestamp.h"
#include "r2/fabric.h"

namespace drtmx::dst {

class GtsOracle {
 public:
  static constexpr r2::RegionId kRegion = 1004;
  static constexpr r2::NodeId kNode = 0;
  static constexpr uint64_t kCounterOffset = 0;  // GlobalTS: last timestamp issued
  static constexpr uint64_t kStableOffset = 64;  // StableTS (own cache line)
  static constexpr size_t kRegionBytes = 128;
  static constexpr uint64_t kWindow = uint64_t{1} << 16;

  static r2::RemoteAddr counter() { return {kNode, kRegion, kCounterOffset}; }
  static r2::RemoteAddr stable_word() { return {kNode, kRegion, kStableOffset}; }

  // `region`: kRegionBytes of node 0's registered kRegion, zeroed (nothing
  // issued, StableTS 0: the loaded data, written at timestamp 0).
  explicit GtsOracle(uint8_t* region);

  // INSTALL(ts): the transaction that took `ts` is done. Refuses a
  // timestamp never issued, already stable, or installed before (a message
  // that is not an INSTALL of this oracle).
  Status install(Timestamp ts);
  // A restart: the next timestamp issued is above `ts` (the newest commit
  // timestamp the recovered records carry), and StableTS starts at `ts`.
  // Only before anything is issued.
  void start_at(Timestamp ts) {
    __atomic_store_n(counter_, ts, __ATOMIC_SEQ_CST);
    __atomic_store_n(stable_, ts, __ATOMIC_SEQ_CST);
  }
  // Failover (txn/failover.h): every timestamp issued so far counts as
  // installed, and StableTS moves to the last one. The coordinators that
  // took the missing ones were removed (their transactions' records are
  // already repaired to the decided state), and every survivor's INSTALL
  // was acknowledged before it paused. Only while no transaction runs in
  // the cluster: without it, StableTS would stay at a removed
  // coordinator's timestamp for good (the baseline's weakness above).
  void settle_issued();
  Timestamp stable() const { return __atomic_load_n(stable_, __ATOMIC_SEQ_CST); }
  Timestamp issued() const { return __atomic_load_n(counter_, __ATOMIC_SEQ_CST); }
  uint64_t installs() const { return installs_.load(std::memory_order_relaxed); }
  // Installs that waited above the window (tests, reports).
  uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  void mark(Timestamp ts) { done_[ts % kWindow].store(ts); }
  void advance();
  // Moves overflow entries now inside the window into it; mu_ held.
  void drain_overflow();

  uint64_t* counter_;
  uint64_t* stable_;
  std::unique_ptr<std::atomic<uint64_t>[]> done_;  // slot ts % kWindow: ts once done
  std::atomic<uint64_t> installs_{0}, overflowed_{0};
  std::mutex mu_;
  std::set<Timestamp> overflow_;           // under mu_
  std::atomic<bool> has_overflow_{false};  // !overflow_.empty()
};

}  // namespace drtmx::dst
