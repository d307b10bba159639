// Failover: what a TxnNode does when the control plane removes a node
// (survive-failures mode; docs/membership.md, "What the engine must do").
//
// Every survivor runs the same reconfiguration for each new epoch, on a
// thread of its own, in steps separated by collectives named
// "reconf.<epoch>.<step>" (a further removal interrupts one; the next
// attempt runs under the newer epoch):
//   1. refuse what cannot continue: a partition with fewer than 2 live
//      copies (named), durable logs losing more than one node at once, the
//      GTS oracle's node removed;
//   2. backups first, then old epoch done: log entries go to the live
//      copies only (store/placement.h: primaries stay routed where they
//      were, so ops on a partition whose primary was removed fail at once);
//      every transaction begun under an older epoch ends (those that
//      touched the removed node abort with kNodeFailure); barrier "quiet".
//      Transactions keep running — with durable logs or the GTS oracle the
//      gate closes instead and every transaction ends or waits at it;
//   3. drain: every backup applier applies what its rings held at that
//      point (a drain mark; with the pause: until it has nothing to do);
//   4. exchange what each survivor's appliers kept of the removed
//      coordinators' rings (their last entries: number, targets, records)
//      and the records the removed nodes still hold locked here (a sweep
//      over the hosted copies' lock words); exchange "inflight";
//   5. every survivor reports its copies of the records concerned
//      (exchange "copies"); decide (txn/failover_resolve.h: a transaction
//      whose entry reached every surviving target committed, an incomplete
//      one aborted where its old state survives, else committed) and set
//      each local copy to the state decided: the records of incomplete
//      transactions as their decision says, the other held records as their
//      surviving backups hold them — a primary's record under the removed
//      node's lock (StoreNode::write_held); barrier "repaired"; then the
//      removed nodes' locks go (reservations with them; with the pause they
//      go first, before the copies are compared);
//   6. promote: the placement drops the removed nodes (for each partition
//      the first live copy of its chain is primary: store/placement.h), the
//      location cache is emptied and the table clients' routes dropped
//      (learned caches are per owner: those of moved partitions are new),
//      the removed nodes' rings are no longer read; barrier
//      "done"; the gate settles the epoch (and opens, after a pause).
// Durable logs (--durability=pmem) differ in steps 3, 5 and 6: the gated
// entries of the removed coordinators are decided from the survivors' rings
// and handed to the appliers, the repair is persistent, the removed rings
// are emptied and the membership is saved (txn/failover_durable.h).
// A step that fails (a refusal, a timeout, a copy that cannot be repaired)
// fails the gate: every later transaction aborts with kNodeFailure and
// TxnNode::finish() returns the reason.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "dst/mvcc_node.h"
#include "r2/control/control.h"
#include "r2/sched/co.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "store/tables/table_client.h"
#include "txn/failover_durable.h"
#include "txn/log/replication.h"

namespace drtmx::txn {

// Where transactions wait while their node reconfigures. One slot per
// coroutine; Engine::run enters and leaves it around every transaction.
//
// Two ways to reconfigure (Failover::reconfigure):
//  * without a pause (volatile logs): the gate stays open. The reconfigurer
//    waits only for the transactions that began under an older epoch
//    (old_epoch_done: each slot holds the epoch its transaction began
//    under); transactions that touch a partition whose primary was removed
//    fail with kNodeFailure, and their callers wait in await_settled()
//    until the survivors serve it again (Engine::run_with_retry) or run
//    other transactions meanwhile (the benchmark driver);
//  * with a pause (durable logs, the GTS oracle): the gate closes, every
//    transaction ends or waits at the gate (quiet), then it opens.
class FailoverGate {
 public:
  FailoverGate(const r2::MembershipView* view, size_t slots);

  // Coroutine side. Waits (yielding) while the gate is closed; false when
  // it failed (the transaction must not run). *began: the membership
  // epoch the transaction begins under (what its slot says).
  bool enter(r2::Co& co, size_t slot, uint64_t* began);
  void leave(size_t slot) { slots_[slot].word.store(kOutside, std::memory_order_release); }
  // The coroutine's body returned.
  void finished(size_t slot) { slots_[slot].word.store(kFinished, std::memory_order_release); }
  // The membership epoch now (a transaction that sees it move between its
  // start and its Validate or Log phase aborts).
  uint64_t epoch() const { return view_ != nullptr ? view_->epoch() : 0; }
  // A transaction that began under `epoch` failed for a node: waits
  // (yielding) until this node handled that epoch (its moved partitions
  // are served again), the gate failed, or `timeout_ns` passed.
  void await_settled(r2::Co& co, uint64_t epoch, uint64_t timeout_ns) const;

  // Reconfigurer side.
  void close() { state_.store(kClosed, std::memory_order_seq_cst); }
  void open() { state_.store(kOpen, std::memory_order_release); }
  void fail() { state_.store(kFailed, std::memory_order_release); }
  bool failed() const { return state_.load(std::memory_order_acquire) == kFailed; }
  // This node serves every partition again under `epoch`.
  void settled(uint64_t epoch) { settled_.store(epoch, std::memory_order_release); }
  uint64_t settled_epoch() const { return settled_.load(std::memory_order_acquire); }
  // Every coroutine waits at the gate (after its passive messages were
  // acknowledged) or has finished.
  bool quiet() const;
  // No transaction that began under an epoch below `epoch` is still running.
  bool old_epoch_done(uint64_t epoch) const;

 private:
  enum : uint32_t { kOpen, kClosed, kFailed };
  // A slot's word: the state in the low 2 bits; kInside: the epoch above.
  enum : uint64_t { kOutside, kInside, kParked, kFinished };
  struct alignas(64) Slot {
    std::atomic<uint64_t> word{kOutside};
  };
  const r2::MembershipView* view_;
  std::unique_ptr<Slot[]> slots_;
  size_t n_;
  std::atomic<uint32_t> state_{kOpen};
  std::atomic<uint64_t> settled_{0};
};

// One reconfiguration, as this node saw it.
struct FailoverReport {
  uint64_t epoch = 0;
  std::vector<uint16_t> removed;
  uint64_t seen_ns = 0;     // r2::now_ns() when this node's thread saw the change
  uint64_t quiet_ns = 0;    // every survivor paused (after barrier "quiet")
  uint64_t serving_ns = 0;  // the gate opened: the new primaries serve
  uint64_t committed = 0;   // removed coordinators' transactions decided committed
  uint64_t aborted = 0;     // ... decided aborted
  uint64_t incomplete = 0;  // ... of them, with a log that had not reached every target
  uint64_t locks_released = 0;
  uint64_t records_repaired = 0;
  uint16_t min_copies = 0;  // fewest live copies of any partition afterwards
  // The writes (table, key, version installed) of the removed coordinators'
  // transactions decided committed, sorted: whoever kept a record of a
  // transaction in flight at the failure (the driver's journal) learns its
  // outcome here.
  std::vector<std::tuple<uint16_t, uint64_t, uint64_t>> committed_writes;
};

class Failover {
 public:
  struct Parts {
    const store::Catalog* catalog = nullptr;
    store::tables::StoreNode* store = nullptr;
    store::tables::NodeCaches* caches = nullptr;
    r2::ControlClient* control = nullptr;
    const std::vector<std::unique_ptr<BackupApplier>>* appliers = nullptr;  // one per worker
    FailoverGate* gate = nullptr;
    r2::NodeId self = 0;
    uint16_t nodes = 0;
    bool durable = false;
    failover::DurableParts durable_parts;  // durable: what failover_durable.h needs
    bool gts = false;                      // MVCC with the global timestamp oracle (node 0)
    // MVCC: told while the node reconfigures (snapshot reads stop waiting
    // for locks then: dst/mvcc_node.h). Null without MVCC.
    dst::MvccNode* mvcc = nullptr;
    uint32_t pause_timeout_ms = 10000;
  };
  explicit Failover(Parts p);
  ~Failover();

  // Starts the thread; it reconfigures at every change the view shows.
  void start();
  // The control client's on_change (any thread): look at the view now.
  void notify();
  // Stops the thread (waits for a reconfiguration in progress).
  void stop();
  // ok, or why the node could not continue after a failure.
  Status status() const;
  std::vector<FailoverReport> reports() const;
  // True while a change is seen but not yet handled (driver: finish waits).
  bool busy() const { return busy_.load(std::memory_order_acquire); }
  // The last epoch this node reconfigured for (or failed at).
  uint64_t handled_epoch() const {
    std::lock_guard<std::mutex> g(mu_);
    return handled_epoch_;
  }

 private:
  void loop();
  Status reconfigure(const r2::MembershipView::Snapshot& v, FailoverReport* rep);
  Status check_copies(uint64_t live, uint16_t* min_copies) const;
  // Durable logs: waits until every applier passes `done(applier, p0)`
  // (p0: its polls() when the wait began); `what` names the wait.
  Status wait_appliers(const std::function<bool(const BackupApplier&, uint64_t)>& done,
                       std::chrono::steady_clock::time_point until, const std::string& what) const;
  // Durable logs, step 3: drain the live writers' entries, then decide
  // the removed writers' and hand the decisions to the appliers.
  Status durable_drain_and_decide(uint64_t gone, const std::string& tag,
                                  std::chrono::steady_clock::time_point until,
                                  std::vector<failover::DurableDecision>* decisions);

  Parts p_;
  uint64_t live_;  // bit n: node n is a member as far as this node handled
  uint64_t handled_epoch_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t signals_ = 0;
  Status status_;
  std::vector<FailoverReport> reports_;
  std::atomic<bool> busy_{false};
};

}  // namespace drtmx::txn
