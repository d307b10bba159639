// Engine: runs stored procedures as serializable OCC transactions on one
// coroutine (thesis §4.1; docs/architecture.md):
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
// Inserts are buffered in Execute and reserved at their primaries in
// Validate, right after the write set is locked (index_ops.h); deletes are
// writes that Commit turns into an index removal at the primary; scans add
// their rows to the read set and re-scan their ranges at Validate
// (phantoms; validate.cc).
// Read-only transactions (Kind::kReadOnly) read on the policy's ro_read
// path and validate with ro_validate; a single-key read-only transaction
// skips validation.
//
// Memory: `arena` is registered memory owned by this engine: its last
// Replicator::image_bytes() bytes hold the log entry images, the rest what
// fabric ops read into or from (READ copies, lock states, commit images),
// bump-allocated per transaction. Copies no fabric op touches (the rows of
// scans, rebuilt from what the store returned) go to ordinary memory that
// grows as a transaction needs (keep()), and the read checks of a read set
// larger than the arena's free room run in windows that reuse it: how many
// rows a transaction scans needs no setting. With passive ACK the commit
// images (and release CAS results) outlive their unsignaled ops: the next
// attempt settles them (Co::settle_unsignaled) before it resets the arena.
//
// Threading: one Engine per coroutine; it must be used only from it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "dst/mvcc_node.h"
#include "dst/record_mvcc.h"
#include "r2/sched/co.h"
#include "store/tables/plan.h"
#include "txn/crash_point.h"
#include "txn/failover.h"
#include "txn/key_index.h"
#include "txn/local_holds.h"
#include "txn/locator.h"
#include "txn/log/replication.h"
#include "txn/mvcc_ops.h"
#include "txn/mvcc_types.h"
#include "txn/policy.h"
#include "txn/record_ops.h"
#include "txn/snapshot_serve.h"
#include "txn/txn.h"

namespace drtmx::txn {

using Procedure = std::function<Abort(Txn&)>;

// Sees the commit points of the read-write transactions of one engine —
// e.g. a driver's journal of acknowledged commits (durability checks).
// Called on the engine's coroutine; must not yield.
class CommitObserver {
 public:
  struct Write {
    TableId table;
    RedoOp op;
    Key key;
    uint64_t version;  // the version Commit installs (a delete: the deleted one's + 1)
  };
  virtual ~CommitObserver() = default;
  // Validate succeeded: every written record is locked, the Log phase is
  // next. `writes`: the write set.
  virtual void prepared(std::span<const Write> writes) = 0;
  // The Log phase ended. true: the transaction is committed (with
  // durability: persistent at every copy's node) — the moment it may be
  // acknowledged; Commit (write-back, unlock) follows. false: it aborts.
  virtual void logged(bool committed) = 0;
};

// What a procedure may do. kReadOnly: reads go through the policy's
// ro_read path and are validated with ro_validate; get_for_update, put,
// insert and remove return kNotSupported; a transaction that read a single
// key (and scanned nothing) commits without validation.
enum class Kind : uint8_t { kReadWrite, kReadOnly };

struct TxnStats {
  uint64_t committed = 0;
  uint64_t aborts[kAbortKinds] = {};
  uint64_t reads_ahead = 0;              // read_ahead() READs posted without waiting
  uint64_t reads_ahead_direct = 0;       // ... of this node's records, copied by the coordinator
  uint64_t snapshot_reads = 0;           // rows snapshot reads fetched
  uint64_t snapshot_reads_onesided = 0;  // ... of them by one-sided ops
  uint64_t snapshot_reads_direct = 0;    // ... in place on this node (its primary)
  uint64_t snapshot_field_reads = 0;     // ... of them by get_fields(): header and field
  // One-sided MVCC (mvcc_onesided.cc): records of this node locked or
  // checked in Validate by the coordinator's own loads and stores.
  uint64_t mvcc_steps_direct = 0;
  // Records of this node written back and unlocked in Commit by the
  // coordinator's own stores (commit_here; volatile nodes).
  uint64_t writes_direct = 0;
  // Reads that first waited for a sibling coroutine holding the record
  // (LocalHolds), and the time they waited.
  uint64_t sibling_waits = 0;
  uint64_t sibling_wait_ns = 0;
};

// A caller's retry policy (the engine itself never retries).
struct RetryPolicy {
  uint32_t max_attempts = 64;  // then the last abort is returned
  // Back-off after the n-th failed attempt: a random wait in
  // [base, base * (1 + 2^min(n, max_backoff_log2))), by the clock — not by
  // a count of yields, which on an oversubscribed core can each take a
  // whole scheduler time slice.
  uint64_t backoff_base_ns = 1000;
  uint32_t max_backoff_log2 = 8;
};

class Engine final : public Txn {
 public:
  // `replicator` may be null (no backups: --replicas=1). `mvcc`: the
  // node's MVCC state, required when policy.mvcc is not kOff.
  Engine(r2::Co& co, Locator& loc, Replicator* replicator, const Policy& policy, uint8_t* arena,
         size_t arena_bytes, dst::MvccNode* mvcc = nullptr);

  // Runs `proc` once. Returns kNone when it committed.
  Abort run(const Procedure& proc, Kind kind = Kind::kReadWrite);
  // Runs `proc` until it commits, a user abort, or `p.max_attempts`; between
  // attempts it backs off a random number of idle yields, growing
  // exponentially, so conflicting transactions can finish. kRecordMissing,
  // kDuplicateInsert, kNotSupported and kOutOfMemory are final too (a retry
  // would see the same, unless another transaction changes the key or frees
  // memory meanwhile). An attempt that failed for a partition whose primary
  // was removed waits until this node serves it again (await_settled).
  Abort run_with_retry(const Procedure& proc, const RetryPolicy& p = {},
                       Kind kind = Kind::kReadWrite);
  // The wait between attempts that run_with_retry() uses (for callers with
  // a retry loop of their own): lets the other coroutines of this worker
  // run until the back-off time for failed attempt `attempt` (1, 2, ...)
  // has passed.
  void backoff(uint32_t attempt, const RetryPolicy& p = {});
  // Failover (txn/failover.h): the last run() began under a membership
  // epoch this node is still reconfiguring for — its kNodeFailure means a
  // partition whose primary was removed, served again once the node has
  // promoted. await_settled() waits (yielding) for that; a caller with
  // other transactions to run may run them instead.
  bool settling() const;
  void await_settled();
  const TxnStats& stats() const { return stats_; }
  const Policy& policy() const { return policy_; }
  // The DEP_READ blocking of the last run() (zero unless it was a snapshot
  // read-only transaction that met locked records).
  const ReadWait& last_read_wait() const { return read_wait_; }
  // The lock word of the transaction run last (store/record.h: every
  // transaction has its own). Recovery-style cleanup of a lock that a lost
  // reply left behind names its holder by it.
  uint64_t last_lock_word() const { return lock_word_; }
  // MVCC: the commit timestamp of this coroutine's last committed
  // read-write transaction (its versions carry it); 0 before one, and
  // without MVCC.
  uint64_t last_commit_ts() const { return session_ts_; }
  // The table of the record (or scanned range) on which the last run()
  // failed: the first key found locked, changed, missing, ... — or
  // kNoTable when that abort concerns no table (user abort, log full, an
  // Execute failure the procedure turned into another reason). The
  // largest 16-bit id, which names no table the engine can address (the
  // catalog's own kNoTable is 32-bit).
  static constexpr TableId kNoTable = static_cast<TableId>(~TableId{0});
  TableId abort_table() const { return abort_table_; }
  // The observer of this engine's commits (null: none). Not owned.
  void set_observer(CommitObserver* o) { observer_ = o; }
  // Tests: called at each CrashPoint of the commit path (may not return).
  void set_crash_hook(CrashHook h) { crash_ = std::move(h); }
  // Tests: fill the arena with `byte` at each attempt's start, after the
  // previous attempt's unsignaled ops settled (0, the default: off). A
  // fabric still reading a commit image after that would carry the poison
  // to its target, where the tests' invariants see it.
  void set_arena_poison(uint8_t byte) { poison_ = byte; }
  // Tests: break the protocol on purpose (crash_point.h, TestFault).
  void set_test_fault(TestFault f) { fault_ = f; }
  // Durable nodes (hint H8): record lock words live apart from the slots,
  // where `locks` says (not owned; null, the default: in the slots).
  // Validate, Commit and aborts then CAS, READ and WRITE them there.
  void set_lock_plan(const store::tables::LockPlan* locks) { locks_ = locks; }
  // Failover (txn/failover.h): every transaction enters `gate` (slot
  // `slot`, this coroutine's) and leaves it; one that sees the membership
  // epoch move before its Validate or Log phase aborts with kNodeFailure.
  void set_gate(FailoverGate* gate, size_t slot) {
    gate_ = gate;
    gate_slot_ = slot;
  }

  // The locks this worker's coroutines hold (txn/local_holds.h; not owned;
  // null, the default: reads never wait for a sibling). Shared by the
  // engines of one worker only.
  void set_local_holds(LocalHolds* holds) { holds_ = holds; }

  Abort get(TableId t, Key k, void* out) override;
  Abort get_for_update(TableId t, Key k, void* out) override;
  Abort put(TableId t, Key k, const void* value) override;
  Abort prefetch(std::span<const TableKey> keys, bool for_update) override;
  // Posts READs for the keys with a known address (Co::post) and returns;
  // await_ahead() collects them before the next store access (execute.cc).
  Abort read_ahead(std::span<const TableKey> keys, bool for_update) override;
  // A snapshot reads this node's rows in place as far as the field
  // (fields.cc); otherwise Txn's: prefetch, get, copy the field.
  Abort get_fields(std::span<const TableKey> keys, Field f, void* out) override;
  Abort insert(TableId t, Key k, const void* value) override;
  Abort remove(TableId t, Key k) override;
  Abort scan(TableId t, Key from, Key to, size_t limit, Rows* out) override;

 private:
  struct Access {
    TableId table;
    Key key;
    RecordRef ref;
    uint32_t incarnation;
    uint8_t* copy;       // verified slot image read in Execute (null for an insert)
    uint8_t* new_value;  // buffered write (always set for an insert), or null
    bool write;          // locked at validation (an insert: reserved)
    bool held;           // we hold its lock (an insert: its reservation)
    bool insert;         // a new record: reserved at Validate, not read
    bool remove;         // delete at Commit (write is set too)
    // This node's slot at ref.addr (Locator::local_slot), looked up once
    // per address by local_of(): Execute, Validate and Commit each ask.
    mutable store::SlotRef here{};
    mutable bool here_known = false;
  };
  // A scanned range, validated at commit: the keys the store returned for
  // [from, to] (to: the last key returned when the limit cut the scan).
  struct ScanSet {
    TableId table;
    Key from, to;
    std::vector<Key> keys;
  };

  // A read started by read_ahead(): READ posted (buf != null) or, without
  // a known address, to be read when awaited.
  struct Ahead {
    TableKey tk;
    bool for_update;
    r2::RemoteAddr addr;
    uint32_t incarnation;
    uint8_t* buf;
    // This node's slot at addr, copied at await_ahead() by this CPU
    // instead of a READ through the fabric (Locator::local_slot).
    const uint8_t* local = nullptr;
    store::SlotRef here{};  // local's words; the access inherits it (local_of)
    // The copy of `local` is quiet (store/record_io.h): no seal to verify.
    bool quiet = false;
  };
  // Waits for the posted READs and turns them into accesses; a READ that
  // did not verify (torn, stale address) is read again synchronously.
  void await_ahead();
  // Posts one batch of READs for the keys not read yet whose address the
  // location cache knows (each key once). Keys without one join ahead_ (read
  // when awaited) or, when `uncached` is given, are appended there instead.
  // A key the arena has no room for is read when awaited.
  void post_ahead(std::span<const TableKey> keys, bool for_update, std::vector<TableKey>* uncached);
  Abort read(TableId t, Key k, void* out, bool for_update);
  Access* find(TableId t, Key k);
  // Before reading (t, k) in Execute: while a sibling coroutine holds it
  // (holds_), park until that one's attempt ends — at most kSiblingWaitNs —
  // so the read sees its result instead of a value about to change.
  void await_sibling(TableId t, Key k);
  void note_holds();                 // Validate: record the locks about to be taken in holds_
  void drop_holds();                 // the attempt ends: forget them
  void add_access(const Access& a);  // appends to set_ and indexes it
  // Locator::local_slot of a.ref.addr, remembered in the access; empty once
  // this node stopped running its own operations directly (Co::direct: a
  // node removed from the cluster).
  store::SlotRef local_of(const Access& a) const {
    if (!a.here_known) {
      a.here = loc_.local_slot(co_, a.ref.addr, a.ref.value_size);
      a.here_known = true;
    }
    if (a.here.rec == nullptr || !co_.direct(co_.node())) return {};
    return a.here;
  }
  uint8_t* alloc(size_t bytes);
  // Ordinary (unregistered) memory for this transaction, 8-aligned, never
  // null: copies that no fabric op reads into or writes from. Blocks are
  // kept across transactions (reset by run_attempt()).
  uint8_t* keep(size_t bytes);
  // How many `bytes`-sized items one alloc() can still hand out (alloc
  // rounds every request up to 64 bytes).
  size_t arena_room(size_t bytes) const {
    return used_ >= arena_bytes_ ? 0 : ((arena_bytes_ - used_) & ~size_t{63}) / bytes;
  }
  ReadPath read_path() const {
    return kind_ == Kind::kReadOnly ? policy_.ro_read : policy_.execute;
  }
  Abort reserve_inserts();
  Abort validate();
  // MVCC (snapshot.cc): read-only transactions read a snapshot at read_ts_
  // by DEP_READ RPC; read-write ones compute commit_ts_ in Validate.
  bool snapshot() const { return mvcc_on() && kind_ == Kind::kReadOnly; }
  bool mvcc_on() const { return policy_.mvcc != Mvcc::kOff && mvcc_ != nullptr; }
  dst::SnapshotMode snapshot_mode() const {
    if (policy_.mvcc == Mvcc::kGts) return dst::SnapshotMode::kGts;
    return mvcc_->config().unsafe_skip_read_raise ? dst::SnapshotMode::kDstSkipRaiseUnsafe
                                                  : dst::SnapshotMode::kDst;
  }
  bool gts() const { return policy_.mvcc == Mvcc::kGts && mvcc_ != nullptr; }
  // MVCC Validate, two-sided: locks the records to write (only those to
  // delete when `removes_only`) by RPC, collecting their timestamps.
  Abort mvcc_lock_by_rpc(bool removes_only, uint64_t* collected);
  // Queues into batch_ the unlocks of the records in refs_.
  void add_unlocks(const uint64_t* zero);
  // Where a record's lock and tuple-timestamp words are: in its slot, or
  // apart in the lock area (H8: the entry is [lock][ts]).
  r2::RemoteAddr lock_word_of(const r2::RemoteAddr& rec) const {
    return locks_ != nullptr ? locks_->lock_of(rec) : rec;
  }
  r2::RemoteAddr ts_word_of(const r2::RemoteAddr& rec) const {
    const r2::RemoteAddr w = lock_word_of(rec);
    return {w.node, w.region, w.offset + (locks_ != nullptr ? 8 : store::kTsOffset)};
  }
  // One-sided MVCC Validate/Commit (mvcc_onesided.cc).
  bool mvcc_onesided_on() const { return mvcc_on() && policy_.lock == LockPath::kCas; }
  // Locks the write set (deletes by RPC), reserves lane room, collects
  // max(ts, wts) of the locked records into *collected.
  Abort mvcc_lock_onesided(uint64_t* collected);
  // Raise-then-check of every record only read, as rpc_mvcc_check.
  Status mvcc_check_onesided(std::vector<MvccCheckResult>* out);
  // Commit: queues into batch_ the push of lane item `item`'s replaced
  // version; then, after the records' writes, the lanes' heads (and the
  // reservations are consumed).
  void mvcc_push_onesided(size_t item);
  void mvcc_unreserve_lanes();  // abort: the lane room goes back
  // DST: the holder entries of lane_items_ — this node's stored here, the
  // others' WRITEs queued into batch_ when `remote`.
  void add_holds(bool remote);
  // Raises the range timestamps of `parts` to commit_ts_ by CAS
  // (claim_scans on fabrics with coherent atomics).
  Abort claim_onesided(const std::vector<PartitionClaim>& parts);
  // Snapshot reads of the rows (*rows)[i] for i in `todo`: the ones this
  // node is primary of, read in place by DEP_READ's read_at
  // (snapshot_direct.cc); the others, the version in place by one-sided
  // ops (snapshot_onesided.cc). Each answers the rows it can; the indices
  // of the others go to *rest (for the next step, or the DEP_READ RPC).
  void snapshot_direct(std::vector<SnapshotRow>* rows, std::vector<size_t>* rest);
  void snapshot_onesided(std::vector<SnapshotRow>* rows, std::span<const size_t> todo,
                         std::vector<size_t>* rest);
  // Reads `keys` at read_ts_ (those not read yet); a missing key is
  // kRecordMissing in *errors (or returned at once when errors is null).
  Abort snapshot_fetch(std::span<const TableKey> keys,
                       std::vector<std::pair<TableKey, Abort>>* errors);
  // A snapshot scan: range-partitioned tables walk their partitions in key
  // order until `limit`; partitions whose keys interleave are each read up
  // to `limit` rows and merged in key order.
  Abort snapshot_scan(TableId t, Key from, Key to, size_t limit, Rows* out);
  // Up to `limit` rows of [from, to] in one partition, appended to *out,
  // in chunks; *exhausted when the partition has no further row <= to.
  Abort snapshot_scan_part(TableId t, const Locator::ScanPart& p, Key from, Key to, size_t limit,
                           Rows* out, bool* exhausted);
  // get_fields() of a snapshot (fields.cc): the rows of this node that the
  // transaction has not read, in place, header and field only; the others
  // by snapshot_fetch (kept in the transaction).
  Abort snapshot_fields(std::span<const TableKey> keys, Field f, uint8_t* out);
  // One partition's part of a snapshot scan run in place, when `primary`
  // is this node and the worker runs local work directly: false (and
  // nothing appended) otherwise, or when a row is locked (the RPC waits).
  bool scan_here(const Locator::ScanPart& p, TableId t, Key from, Key to, uint32_t limit, Rows* out,
                 bool* exhausted);
  // Rows read in place count toward the worker's yield streak (Co::charge)
  // as a quarter of a local operation batch each: what one costs, roughly.
  void charge_rows(size_t rows) { co_.charge(static_cast<uint32_t>(rows / 4)); }
  Abort run_snapshot(const Procedure& proc);
  Abort run_attempt(const Procedure& proc, Kind kind);
  bool epoch_moved() const { return gate_ != nullptr && gate_->epoch() != begin_epoch_; }
  // Validate's timestamp steps: commit_ts_ from the local clock and every
  // timestamp met (RW1); claims of scanned ranges at it.
  void compute_commit_ts(uint64_t collected);
  Abort claim_scans();
  // GTS (dst/oracle.h): commit_ts_ from the oracle (FAA) in Validate; the
  // timestamp is then owed an INSTALL, sent by finish() whether the
  // transaction commits or aborts (StableTS waits for every one).
  Abort take_gts();
  // GTS: the oracle's StableTS for a snapshot.
  Abort fetch_stable(uint64_t* out);
  Abort validate_scans(CheckPath check);
  Abort log();
  void commit();
  void release(bool passive);
  Abort finish(Abort a);
  void tell_prepared();
  void crash_point(CrashPoint p) {
    if (crash_) crash_(p);
  }
  // Remembers `t` as the table `r` (a failure) was found on, unless an
  // earlier failure of this transaction was; returns `r`.
  Abort blame(Abort r, TableId t) {
    if (r != Abort::kNone && blamed_ == Abort::kNone) blamed_ = r, blamed_table_ = t;
    return r;
  }
  // A record found locked with `lock` fails the transaction with `r` —
  // unless the holder is a node removed from the cluster: its locks stay
  // until this node's failover repaired the record, so the transaction
  // fails as one that needs a moved partition does (kNodeFailure: its
  // caller waits for the failover, or runs other transactions meanwhile)
  // instead of retrying into the same lock.
  Abort held_by(uint64_t lock, Abort r) const {
    if (lock == 0 || lock == store::kOwnerLockWord) return r;
    return co_.worker().is_member(store::lock_node(lock)) ? r : Abort::kNodeFailure;
  }

  r2::Co& co_;
  Locator& loc_;
  Replicator* rep_;
  Policy policy_;
  uint8_t* arena_;
  size_t arena_bytes_, used_ = 0;
  uint8_t poison_ = 0;
  TestFault fault_ = TestFault::kNone;
  struct KeptBlock {
    std::unique_ptr<uint64_t[]> words;
    size_t bytes;
  };
  std::vector<KeptBlock> kept_;            // keep()'s blocks
  size_t kept_block_ = 0, kept_used_ = 0;  // the block in use and its bytes taken
  uint64_t lock_word_;                     // this transaction's (changes every run)
  uint64_t txn_seq_ = 0;                   // transactions run by this engine
  Kind kind_ = Kind::kReadWrite;
  std::vector<Access> set_;
  KeyIndex index_;        // set_'s keys -> positions
  size_t next_find_ = 0;  // find(): the position after the last entry found
  // post_ahead() / snapshot_fetch(): the keys of the batch taken so far
  KeyIndex ahead_keys_;
  std::vector<ScanSet> scans_;
  std::vector<Ahead> ahead_;                              // outstanding read_ahead() reads
  std::vector<std::pair<TableKey, Abort>> ahead_errors_;  // reported by get()
  r2::OpBatch ahead_batch_;                               // the posted READs
  // Reused across calls (no allocation per transaction once warm).
  std::vector<Ahead> ahead_done_;  // await_ahead()'s batch being checked
  std::vector<uint8_t> value_tmp_;
  std::vector<TableKey> miss_;  // prefetch(): keys without a cached address
  std::vector<RecordRef> miss_refs_;
  std::vector<uint8_t*> miss_copies_;
  std::vector<Abort> miss_results_;
  struct LogGroup {  // log(): the records one backup receives
    r2::NodeId node = 0;
    std::vector<RedoRecord> recs;
  };
  std::vector<LogGroup> log_groups_;
  std::vector<BackupEntry> log_entries_;
  r2::OpBatch batch_;                                    // reused by every phase
  std::vector<std::pair<uint64_t*, LockState*>> slots_;  // lock results
  std::vector<uint32_t> lock_ops_;      // each lock's first op in batch_ (kDirectLock: taken here)
  std::vector<LockState*> states_;      // check results
  std::vector<RecordRef> refs_;         // scratch for list RPCs
  std::vector<ItemResult> results_;     // scratch for list RPCs
  std::vector<const uint8_t*> images_;  // scratch for RPC commits
  std::vector<Reservation> reservations_;  // scratch for reserve
  std::vector<HeldRecord> held_;           // scratch for remove_held
  std::vector<Key> scan_keys_;             // scratch for scans
  std::vector<uint8_t> scan_values_;
  std::vector<RecordRef> scan_refs_;
  std::vector<uint32_t> scan_incs_;
  LogBuffers log_;
  TxnStats stats_;
  ReadWait read_wait_;
  dst::MvccNode* mvcc_ = nullptr;
  // Snapshot scans of this node's copies, run in place (snapshot.cc).
  std::unique_ptr<SnapshotServer> here_;
  uint64_t commit_ts_ = 0;   // RW under MVCC: this transaction's (Validate)
  uint64_t read_ts_ = 0;     // RO under MVCC: the snapshot's
  uint64_t session_ts_ = 0;  // the last commit timestamp of this coroutine
  bool gts_owed_ = false;    // GTS: commit_ts_ was taken and not installed yet
  std::vector<SnapshotRow> snap_rows_;
  std::vector<SnapshotRow> snap_rpc_rows_;  // the rows left for the RPC
  std::vector<size_t> snap_rest_;           // ... their indices in snap_rows_
  std::vector<size_t> snap_todo_;           // rows the direct reads left
  struct DirectRow {                        // snapshot_direct.cc
    size_t row;                             // index in the rows
    dst::MvccNode::Record rec;              // the record slot here
    uint32_t incarnation;                   // ... and the tenant the cache names
  };
  std::vector<DirectRow> snap_direct_;
  std::vector<SnapshotRow> field_rows_;  // snapshot_fields: the rows read in place
  std::vector<size_t> field_at_;         // ... their indices in the keys
  std::vector<uint8_t> field_done_;      // per key: its field was copied out
  std::vector<TableKey> field_fetch_;    // keys for snapshot_fetch
  std::vector<uint64_t> field_images_;   // a slot image per row (header and field filled)
  struct OneSidedRow {                   // snapshot_onesided.cc
    size_t row;                          // index in the rows
    r2::RemoteAddr addr;                 // the record's cached address
    uint32_t incarnation;                // ... and the tenant it names
    uint64_t* words;                     // [ts READ][CAS result][lock READ][holder word, ts READ]
    uint8_t* image;                      // the record READ
  };
  std::vector<OneSidedRow> snap_onesided_;
  std::vector<size_t> snap_lookup_;  // snapshot rows missing from the location cache
  std::vector<TableKey> snap_lookup_keys_;
  std::vector<RecordRef> snap_lookup_refs_;
  std::vector<uint8_t*> snap_lookup_copies_;
  std::vector<Abort> snap_lookup_results_;
  std::vector<MvccLockResult> mvcc_locks_;    // scratch for MVCC lock results
  std::vector<MvccCheckResult> mvcc_checks_;  // scratch for MVCC check results
  // One-sided MVCC: per record to update (set_ order), where it is and the
  // words its lock READ (mvcc_onesided.cc); the lane room reserved.
  struct LaneItem {
    size_t access;                // index in set_
    const dst::CopyLayout* copy;  // its copy at the primary
    uint64_t slot;                // its slot in the copy's heap
    uint64_t* words;  // CAS result / link, ts (lock words apart), chain head, hold[2], spare
    uint8_t* image;   // the record, READ under the lock
    // The record and its version store when the primary is this node and
    // the worker runs local operations directly (here.rec != nullptr):
    // its steps are this CPU's loads and stores, not fabric ops.
    dst::MvccNode::Record here;
    uint32_t op;  // its lock CAS in batch_ (remote records only)
  };
  // The lock step of a record of this node (LaneItem::here), as its ops.
  void mvcc_lock_here(LaneItem& it, uint32_t bytes);
  std::vector<LaneItem> lane_items_;
  bool publish_holds_ = false;  // lane_items_' holder entries go with the next check batch
  struct RangeClaim {
    const dst::CopyLayout* copy;
    uint64_t* old;  // the CAS's result
  };
  std::vector<RangeClaim> claims_;             // claim_onesided
  std::vector<Locator::ScanPart> scan_parts_;  // snapshot_scan, claim_scans
  std::vector<PartitionClaim> part_claims_;    // claim_scans
  std::vector<dst::LaneCursor*> lane_reserved_;
  std::vector<std::pair<dst::LaneCursor*, uint64_t*>> lane_refresh_;
  std::vector<size_t> check_items_, check_pending_, check_again_;
  std::vector<uint64_t> check_expect_;
  bool overflow_ = false;
  Abort blamed_ = Abort::kNone;  // blame(): the first failure and its table
  TableId blamed_table_ = kNoTable;
  TableId abort_table_ = kNoTable;
  uint64_t rng_;
  CommitObserver* observer_ = nullptr;
  std::vector<CommitObserver::Write> observed_;
  CrashHook crash_;
  const store::tables::LockPlan* locks_ = nullptr;  // set_lock_plan()
  FailoverGate* gate_ = nullptr;                    // set_gate()
  LocalHolds* holds_ = nullptr;                     // set_local_holds()
  std::vector<TableKey> my_holds_;                  // recorded in holds_ by this attempt
  size_t gate_slot_ = 0;
  uint64_t begin_epoch_ = 0;
};

}  // namespace drtmx::txn
