// Engine: runs stored procedures as serializable OCC transactions on one
// coroutine (thesis §4.1, DESIGN.md §4):
//   Execute   the procedure runs; reads go through the Locator with the
//             policy's read path and are remembered with their versions;
//             writes are buffered (execute.cc);
//   Validate  lock the write set (fused CAS+READ, or RPC), then check the
//             read set's versions (READ, or RPC); any failure aborts and
//             releases what was locked (validate.cc);
//   Log       replicate the redo records to every backup of every written
//             partition; committed once all have completed (log.cc);
//   Commit    write back + unlock at the primaries (WRITE pair, or RPC),
//             with passive ACK when the policy says so (commit.cc).
// Read-only transactions validate their reads; a single-key read-only
// transaction skips validation.
//
// Memory: `arena` is registered memory owned by this engine: its last
// Replicator::image_bytes() bytes hold the log entry images, the rest the
// record copies, lock states and commit images, bump-allocated per
// transaction. With passive ACK on an RNIC, commit images must outlive
// the unsignaled WRITEs; the shm fabric executes them at the doorbell.
//
// Threading: one Engine per coroutine; it must be used only from it.
#pragma once

#include <functional>
#include <vector>

#include "r2/sched/co.h"
#include "txn/locator.h"
#include "txn/log/replication.h"
#include "txn/policy.h"
#include "txn/record_ops.h"
#include "txn/txn.h"

namespace drtmx::txn {

using Procedure = std::function<Abort(Txn&)>;

struct TxnStats {
  uint64_t committed = 0;
  uint64_t aborts[kAbortKinds] = {};
};

// A caller's retry policy (the engine itself never retries).
struct RetryPolicy {
  uint32_t max_attempts = 64;     // then the last abort is returned
  uint32_t max_backoff_log2 = 8;  // back-off: up to 2^k idle yields
};

class Engine final : public Txn {
 public:
  // `replicator` may be null (no backups: --replicas=1).
  Engine(r2::Co& co, Locator& loc, Replicator* replicator, const Policy& policy, uint8_t* arena,
         size_t arena_bytes);

  // Runs `proc` once. Returns kNone when it committed.
  Abort run(const Procedure& proc);
  // Runs `proc` until it commits, a user abort, or `p.max_attempts`; between
  // attempts it backs off a random number of idle yields, growing
  // exponentially, so conflicting transactions can finish.
  Abort run_with_retry(const Procedure& proc, const RetryPolicy& p = {});
  const TxnStats& stats() const { return stats_; }

  Abort get(TableId t, Key k, void* out) override;
  Abort get_for_update(TableId t, Key k, void* out) override;
  Abort put(TableId t, Key k, const void* value) override;
  Abort prefetch(std::span<const TableKey> keys, bool for_update) override;

 private:
  struct Access {
    TableId table;
    Key key;
    RecordRef ref;
    uint32_t incarnation;
    uint8_t* copy;       // verified slot image read in Execute
    uint8_t* new_value;  // buffered write, or null
    bool write;          // locked at validation
    bool held;           // we hold its lock
  };

  Abort read(TableId t, Key k, void* out, bool for_update);
  Access* find(TableId t, Key k);
  uint8_t* alloc(size_t bytes);
  Abort validate();
  Abort log();
  void commit();
  void release(bool passive);
  Abort finish(Abort a);

  r2::Co& co_;
  Locator& loc_;
  Replicator* rep_;
  Policy policy_;
  uint8_t* arena_;
  size_t arena_bytes_, used_ = 0;
  uint64_t lock_word_;
  std::vector<Access> set_;
  r2::OpBatch batch_;                                    // reused by every phase
  std::vector<std::pair<uint64_t*, LockState*>> slots_;  // lock results
  std::vector<LockState*> states_;                       // check results
  std::vector<RecordRef> refs_;                          // scratch for list RPCs
  std::vector<ItemResult> results_;                      // scratch for list RPCs
  std::vector<const uint8_t*> images_;                   // scratch for RPC commits
  LogBuffers log_;
  TxnStats stats_;
  bool overflow_ = false;
  uint64_t rng_;
};

}  // namespace drtmx::txn
