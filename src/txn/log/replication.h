// The Log phase and its backup side, on top of the log rings (log_ring.h).
//
// Coordinator: Replicator::log() encodes the transaction's redo records into
// one log entry and WRITEs it into this worker's ring on every backup — one
// doorbell per backup, all backups at once — and returns when every WRITE
// has completed: then the entry is in every backup's memory and the
// transaction is committed (thesis §4.1: committed iff all log acks are in).
// A full ring on some backup is back-pressure: log() yields until that
// backup reclaims space, and fails with kLogFull after `full_timeout`.
//
// Backup: BackupApplier polls, on each worker thread t, the rings written by
// coordinator threads t of every node (thread t of a node writes only to
// rings read by thread t of its backups, like its QPs). It installs each
// redo record through the `install` callback — which must keep the newest
// version per record, so entries of different coordinators may be applied
// in any interleaving and still leave every record at its last committed
// version — zeroes the entry, and reports the freed space to the writer
// with a one-way message every `reclaim_every` bytes.
//
// Durable logs (ReplicationConfig::durable; the whole protocol: src/txn/README.md, "Durability"):
// the caller may also send entries to the primaries of written records (which then only make the
// write-back persistent; the engine does so where a record has no backup or is not written back by
// a flushed one-sided WRITE), every WRITE is followed by a flushing READ on the same channel
// (thesis H9: the entry is persistent when the READ completes), entries carry the transaction's
// number and the coordinator's decision watermark (decisions.h), and the applier is gated: nothing
// of an entry is applied or released before the entry's transaction is known committed, and an
// entry is released only once what it wrote here and that knowledge (in the ring's header) are
// persistent.
//
// Threading: a Replicator and a BackupApplier belong to one worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/sched/co.h"
#include "r2/sched/worker.h"
#include "txn/crash_point.h"
#include "txn/log/decisions.h"
#include "txn/log/key_order.h"
#include "txn/log/log_ring.h"

namespace drtmx::txn {

enum class RedoOp : uint8_t { kUpdate = 1, kInsert = 2, kDelete = 3 };

struct RedoRecord {
  uint16_t table = 0;
  RedoOp op = RedoOp::kUpdate;
  uint64_t key = 0;
  uint64_t version = 0;
  std::span<const uint8_t> value;  // empty for kDelete
  uint64_t ts = 0;                 // MVCC: the commit timestamp (0 without MVCC)
  // Durable logs, a record sent to the primary of its partition: where the
  // coordinator writes it back (offset in the table's region + 1; 0 = a
  // record for a backup copy) and the incarnation it holds there.
  uint64_t at_primary = 0;
  uint32_t incarnation = 0;
};

// Entry payload: a sequence of {table u16, op u8, flags u8, value_len u32,
// key u64, version u64, ts u64, [at_primary u64, incarnation u32, pad u32
// when flags & 1], value (padded to 8)}.
void encode_redo(std::span<const RedoRecord> records, std::vector<uint8_t>* out);
// False on a malformed payload (nothing is installed from it).
bool decode_redo(const uint8_t* p, uint32_t len, std::vector<RedoRecord>* out);

constexpr uint16_t kRpcLogReclaim = 110;
constexpr uint16_t kRpcLogDecided = 111;

// How a durable node makes its own stores persistent (its pools' mode:
// cache-line write-back + fence, or msync). flush() starts writing back
// [p, p + n); drain() returns when every range flushed before it on this
// thread is persistent.
struct PersistOps {
  std::function<void(const void* p, size_t n)> flush;
  std::function<void()> drain;
  void persist(const void* p, size_t n) const {
    flush(p, n);
    drain();
  }
};

struct ReplicationConfig {
  LogRingLayout layout;
  r2::RegionId log_region = 0;
  uint32_t reclaim_every = 0;  // bytes; 0 = ring_bytes / 4
  uint32_t full_timeout_ms = 2000;
  // Failover: how long log() waits for this worker's membership view to
  // explain WRITEs the fabric refused as fenced (see log()).
  uint32_t fence_wait_ms = 5000;
  // Durable logs (see the top). `persist` must be set then.
  bool durable = false;
  PersistOps persist;
  // Durable logs: a coordinator whose watermark advanced sends it to the
  // targets its later entries have not carried it to after this long.
  uint32_t decided_delay_us = 20;
  // Durable logs: shared by a node's appliers; a delete's entry is released
  // only after the entries of the key's earlier changes (key_order.h).
  // Null: no such order (tests of one ring).
  std::shared_ptr<UnreleasedChanges> unreleased;
};

// What one coroutine needs to log: images in registered memory (one per
// backup, written concurrently) and room to encode the payloads. Each
// coroutine owns one; a coroutine may yield inside log().
struct LogBuffers {
  uint8_t* images = nullptr;  // registered, Replicator::image_bytes(cfg) long
                              // (durable logs: the flushing READs land there too)
  std::vector<std::vector<uint8_t>> payloads;
  // Durable logs. In: the transaction is decided only once the caller says
  // so with Replicator::settle() (its write-back at primaries that received
  // no entry is persistent), not when its entries are. Out: its number.
  bool settle_later = false;
  uint64_t txn = 0;
  // log()'s scratch: the target of each op of its batch.
  std::vector<r2::NodeId> op_nodes;
};

// The records one backup must receive (those of the partitions it backs up).
struct BackupEntry {
  r2::NodeId node;
  std::span<const RedoRecord> records;
};

class Replicator {
 public:
  Replicator(r2::Worker& w, const ReplicationConfig& cfg);
  static size_t image_bytes(const ReplicationConfig& cfg);
  size_t image_bytes() const { return image_bytes(cfg_); }
  // Registers the reclaim handler on the worker (durable logs: and the
  // poller that sends decision watermarks).
  Status attach();
  bool durable() const { return cfg_.durable; }
  // Durable: how this node's own stores into its pools become persistent.
  const PersistOps& persist() const { return cfg_.persist; }

  // The Log phase for one transaction: one entry per backup (each with its
  // own records), all WRITEs in one batch, returns when all completed.
  // Errors: kResourceExhausted ("log full") after the back-pressure
  // timeout, kOutOfRange for an entry above the ring's limit, fabric errors
  // as kUnavailable.
  Status log(r2::Co& co, std::span<const BackupEntry> entries, LogBuffers& buffers);
  // The same records to every node of `backups`.
  Status log(r2::Co& co, std::span<const r2::NodeId> backups, std::span<const RedoRecord> records,
             LogBuffers& buffers);

  // Durable logs, a transaction logged with LogBuffers::settle_later: what
  // makes it committed for good besides its entries is now persistent (the
  // coordinator's write-back at the primaries it sent no entry to); it may
  // join the decision watermark. `txn` 0 (nothing logged) is ignored.
  void settle(uint64_t txn) {
    if (txn != 0) decisions_.complete(txn);
  }

  uint64_t entries() const { return entries_; }      // entries written (one per backup)
  uint64_t log_bytes() const { return log_bytes_; }  // their payload bytes
  uint64_t full_waits() const { return full_waits_; }
  const std::vector<LogWriter>& writers() const { return writers_; }
  const Decisions& decisions() const { return decisions_; }
  // Tests: CrashPoint::kLogPartial is called after the first target's
  // WRITEs completed and before the others are posted.
  void set_crash_hook(CrashHook h) { crash_ = std::move(h); }

 private:
  bool send_decided();
  r2::Worker& w_;
  ReplicationConfig cfg_;
  // Where the flushing READs of durable logs read (in every target's log
  // region): this writer's ring header's spare word.
  uint64_t flush_offset_;
  std::vector<LogWriter> writers_;  // by backup node
  uint64_t entries_ = 0, full_waits_ = 0, log_bytes_ = 0;
  // Durable logs: transaction numbers and the watermark, and per target
  // the last transaction logged there and the watermark it has been told.
  Decisions decisions_;
  std::vector<uint64_t> last_txn_, told_;
  uint64_t pending_since_ = 0;  // when the watermark passed what a target was told
  uint64_t volatile_txn_ = 0;   // volatile logs: this worker's transactions logged
  uint32_t polls_ = 0;
  CrashHook crash_;
};

// Failover: what a backup remembers of one applied log entry.
struct LoggedRecord {
  uint16_t table = 0;
  RedoOp op = RedoOp::kUpdate;
  uint64_t key = 0;
  uint64_t version = 0;
};
struct LoggedTxn {
  uint64_t txn = 0;      // the coordinator thread's transaction number
  uint64_t targets = 0;  // bit n: node n received an entry of it
  std::vector<LoggedRecord> records;
};

class BackupApplier {
 public:
  using Install = std::function<void(const RedoRecord&)>;
  // As Install, and may answer "not yet" (false): the record is not the
  // next change of its key on this copy — an earlier one, logged by another
  // coordinator into another ring, has not been applied yet. The applier
  // keeps a copy of such a record and offers it again, in arrival order,
  // on every later poll until it is taken; its entry counts as applied only
  // then. Since a transaction logs only after the transactions it depends
  // on committed (their entries are already in the rings), whatever a
  // deferred record waits for is in some ring and arrives: no deadlock.
  using TryInstall = std::function<bool(const RedoRecord&)>;
  // `log_base`: this node's log region. Registers itself as a poller
  // (durable logs: and the handler of decision watermarks, and reads from
  // where each ring's RingHeader says it was released up to).
  BackupApplier(r2::Worker& w, const ReplicationConfig& cfg, uint8_t* log_base, Install install);
  BackupApplier(r2::Worker& w, const ReplicationConfig& cfg, uint8_t* log_base, TryInstall install);

  // Optional: called for every record of an entry before any of them is
  // installed, so the installer can prefetch what it will touch (a backup's
  // buckets are DRAM misses; an entry's records then overlap them).
  using Prefetch = std::function<void(const RedoRecord&)>;
  void set_prefetch(Prefetch p) { prefetch_ = std::move(p); }
  // Optional: records are installed one poll after they are taken, not at
  // once (durable logs: an entry is released only once all its records
  // are installed, as for deferred ones). At the take, `prefetch` (above)
  // brings what the record's lookup reads first (an index bucket); at the
  // next poll `second` may follow that (the record slot the bucket points
  // to) for all staged records, and only then are they installed. A
  // backup's buckets and records are cold, and most entries hold one or two
  // records: without the wait each install stalls on two DRAM misses in a
  // row. The poll in between is one turn of the worker loop. A staged
  // record counts as deferred (oldest_deferred, stuck, drained_since) until
  // it is installed, and keeps its arrival order among the records taken
  // after it.
  // `second` must not be empty (an empty one leaves staging off).
  void set_staged_prefetch(Prefetch second) { second_prefetch_ = std::move(second); }
  // Tests: CrashPoint::kApplied is called after a durable entry's records
  // were offered (installed, deferred or staged) and before it is released.
  void set_crash_hook(CrashHook h) { crash_ = std::move(h); }

  // Entries installed so far; readable from any thread (release/acquire:
  // a reader that sees n also sees the first n entries installed).
  uint64_t applied() const { return applied_.load(std::memory_order_acquire); }
  // Data entries taken from the ring written by `node` (any thread): every
  // one of them is applied, or waits in deferred() until it can be.
  uint64_t taken_from(uint16_t node) const {
    return node < readers_.size() ? taken_from_[node].load(std::memory_order_acquire) : 0;
  }
  // True when a ring held an entry that is not the next in sequence or a
  // payload that does not decode: the applier stopped that ring.
  bool corrupt() const { return corrupt_.load(std::memory_order_acquire); }
  // What was wrong, for the error report (worker thread, or after it stopped).
  const std::string& corrupt_reason() const { return corrupt_reason_; }
  // Records waiting for an earlier change of their key (worker thread only).
  size_t deferred() const { return deferred_.size(); }

  // --- failover (txn/failover.h), volatile logs ------------------------------
  // Keeps, per coordinator node, what the last `per_ring` entries from its
  // ring held (transaction number, targets, record keys and versions): a
  // removed coordinator's in-flight transactions are decided from it.
  void keep_history(size_t per_ring);
  // The history of the ring written by `node` (any thread; a copy).
  std::vector<LoggedTxn> history(uint16_t node) const;
  // Whether that history already dropped older entries.
  bool history_full(uint16_t node) const;
  // Stops reading the rings of the nodes whose bit is set (removed nodes,
  // once their entries were resolved): a late write of theirs is ignored.
  void retire(uint64_t nodes) { retired_.fetch_or(nodes, std::memory_order_acq_rel); }
  // Applies what the rings of these (removed) writers hold beyond a hole:
  // an entry their writer reserved and never wrote, followed by complete
  // ones (LogReader::skip_hole). Done once, by the next polls.
  void skip_holes(uint64_t nodes) { skip_.fetch_or(nodes, std::memory_order_acq_rel); }
  // Polls that found nothing to apply and nothing deferred, in a row since
  // the last one that did work (any thread): quiet() > 1 after a moment
  // when no coordinator logs means every complete entry was applied.
  uint64_t quiet() const { return quiet_.load(std::memory_order_acquire); }
  // Polls so far (any thread).
  uint64_t polls() const { return polls_.load(std::memory_order_acquire); }
  // Drained as seen from another thread: since `polls()` was `p0`, at
  // least 4 polls ran and the last 4 found nothing (no hole left to skip).
  bool drained_since(uint64_t p0) const {
    const uint64_t q = quiet();
    return q >= 4 && polls() >= p0 + 4 && skip_.load(std::memory_order_acquire) == 0;
  }
  // Failover while transactions run (no pause): a drain mark. After
  // request_mark() returns m (any thread), marked(m) becomes true once
  // every entry that was complete in a ring when the request was made is
  // applied: each ring not retired was seen with nothing more in order at
  // a poll after the request (so every entry before the request was
  // taken), and every entry taken until then is installed (none deferred
  // or staged), and no removed writer's hole is left to skip. Entries
  // written after the request (live coordinators go on logging) do not
  // hold it up. Volatile logs only (durable appliers are gated).
  uint64_t request_mark() { return mark_req_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  bool marked(uint64_t m) const {
    return mark_done_.load(std::memory_order_acquire) >= m &&
           skip_.load(std::memory_order_acquire) == 0;
  }
  // --- failover, durable logs (txn/failover_durable.h) -----------------------
  // Bit n: the ring written by node n held, at the last poll, a complete
  // entry still waiting for its writer's decision watermark (gated). Rings
  // of retired writers are not looked at. Any thread.
  uint64_t gated() const { return gated_.load(std::memory_order_acquire); }
  // The decision watermark known here for the ring written by `node`
  // (entries, messages, the ring's header). Any thread.
  uint64_t known_decided(uint16_t node) const {
    return node < readers_.size() && known_pub_ ? known_pub_[node].load(std::memory_order_acquire)
                                                : 0;
  }
  // Durable logs drained as far as the live writers go, as seen from
  // another thread: since `polls()` was `p0`, at least 4 polls ran, the
  // last 4 took nothing, and nothing is gated but in the rings of the
  // writers in `removed` (bit n: node n). Records may still wait
  // (deferred): for an earlier change of their key that a removed
  // writer's undecided entry holds, or for a removed writer's write-back.
  bool settled_since(uint64_t p0, uint64_t removed) const {
    return idle_.load(std::memory_order_acquire) >= 4 && polls() >= p0 + 4 &&
           (gated() & ~removed) == 0;
  }
  // The failover decided the entries of the ring written by `node` (a
  // removed writer) that this applier does not know committed: those whose
  // transaction is in `committed` (sorted) are applied, the others dropped
  // unapplied; from then on the ring's entries are released as soon as
  // they may be (not in batches), header persisted. Any thread.
  void resolve_removed(uint16_t node, std::vector<uint64_t> committed);
  // True once every entry of that ring up to the first one missing (the
  // end, or a hole its dead writer left) was taken: applied (or waiting to
  // be: deferred) or dropped. Any thread.
  bool stopped(uint16_t node) const {
    return node < 64 && ((stopped_.load(std::memory_order_acquire) >> node) & 1) != 0;
  }
  // ... and every one of them released (persistent here, zeroed, the
  // ring's header persisted past them). Any thread.
  bool resolved(uint16_t node) const {
    return node < 64 && ((resolved_.load(std::memory_order_acquire) >> node) & 1) != 0;
  }
  // The sequence number at which the applier stopped in that ring (valid
  // once stopped()): entries at or above it were not taken here.
  uint64_t resolved_at(uint16_t node) const {
    return node < readers_.size() && stop_seq_ ? stop_seq_[node].load(std::memory_order_acquire)
                                               : 0;
  }

  // Why it is not drained, for an error message (any thread): records
  // waiting for an earlier change of their key (the oldest one named),
  // holes still to skip, quiet polls.
  std::string stuck() const;
  // The oldest record deferred now, if any (any thread; for error messages).
  bool oldest_deferred(uint16_t* table, uint64_t* key, uint64_t* version) const {
    if (deferred_count_.load(std::memory_order_acquire) == 0) return false;
    *table = static_cast<uint16_t>(stuck_table_.load(std::memory_order_relaxed));
    *key = stuck_key_.load(std::memory_order_relaxed);
    *version = stuck_version_.load(std::memory_order_relaxed);
    return true;
  }

 private:
  struct Deferred {
    RedoRecord rec;  // value points into `value`
    std::vector<uint8_t> value;
    uint64_t entry;  // index into waiting_
  };
  bool poll();
  bool poll_gated(uint16_t ring, bool deferred_progress);
  bool retry_deferred();
  // Installs the records staged by the last poll (set_staged_prefetch);
  // those not taken are deferred. True when there were any.
  bool install_staged();
  // Keeps a copy of `rec` (entry `entry`) to offer again at later polls.
  void defer(const RedoRecord& rec, uint64_t entry);
  // One fewer record of `entry` waits; entry_done() when none does.
  void one_installed(uint64_t entry);
  void entry_done();
  // Offers the decoded records of entry `entry`; defers what is not taken.
  void offer(uint64_t entry);
  r2::Worker& w_;
  ReplicationConfig cfg_;
  TryInstall install_;
  Prefetch prefetch_;
  std::vector<Deferred> deferred_;
  // Staged records (set_staged_prefetch): values back to back in
  // staged_bytes_ (each record's value is re-pointed at install: the
  // buffer may move while records are added).
  struct Staged {
    RedoRecord rec;
    size_t value_at;
    uint64_t entry;
  };
  Prefetch second_prefetch_;  // set: records are staged
  std::vector<Staged> staged_;
  std::vector<uint8_t> staged_bytes_;
  std::vector<std::pair<uint64_t, uint32_t>> waiting_;  // (entry id, records deferred)
  uint64_t next_entry_ = 0;
  std::vector<LogReader> readers_;  // by coordinator node (thread = this worker's)
  // Durable logs: per ring, its persistent header and the watermark
  // learned (from entries and messages) but maybe not persisted yet.
  std::vector<RingHeader*> headers_;
  std::vector<uint64_t> known_;
  uint64_t release_every_ = 0;  // bytes (the reclaim report's period)
  std::vector<RedoRecord> decoded_;
  // Durable logs with `cfg_.unreleased`: the backup records of each taken,
  // unreleased entry (by entry id), and per ring whether its release waits
  // for another ring's.
  struct KeyChange {
    uint16_t table;
    bool del;
    uint64_t key, version;
  };
  std::unordered_map<uint64_t, std::vector<KeyChange>> changes_;
  std::vector<uint8_t> waits_;  // per ring
  void note_changes(uint64_t entry);
  bool may_release(uint64_t entry) const;
  void released(LogReader& r, size_t n);
  std::atomic<uint64_t> applied_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> taken_from_;  // by writer node
  void took(uint16_t node) {
    taken_from_[node].store(taken_from_[node].load(std::memory_order_relaxed) + 1,
                            std::memory_order_release);
  }
  // Failover history (keep_history).
  size_t history_per_ring_ = 0;
  mutable std::mutex history_mu_;
  // By coordinator node: a ring of history_per_ring_ slots reused in
  // place (their vectors keep their capacity: no allocation per entry),
  // the oldest at `first`, `count` in use.
  struct History {
    std::vector<LoggedTxn> slots;
    size_t first = 0, count = 0;
    bool dropped = false;  // older entries were overwritten
  };
  std::vector<History> history_;
  std::atomic<uint64_t> retired_{0};
  std::atomic<uint64_t> gated_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> known_pub_;  // by writer node
  void learned(uint16_t node) { known_pub_[node].store(known_[node], std::memory_order_release); }
  uint64_t gated_now_ = 0;         // poll(): the rings found gated so far
  std::atomic<uint64_t> idle_{0};  // polls in a row that did no work (waiting records or not)
  // resolve_removed(): handed over under decide_mu_, taken by the next poll.
  std::mutex decide_mu_;
  std::atomic<bool> decide_pending_{false};
  std::vector<std::pair<uint16_t, std::vector<uint64_t>>> decide_in_;
  std::vector<std::vector<uint64_t>> committed_;  // per ring (worker thread)
  std::vector<uint8_t> resolving_;                // per ring (worker thread)
  std::atomic<uint64_t> stopped_{0}, resolved_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> stop_seq_;  // by writer node
  std::atomic<uint64_t> skip_{0};
  // Drain marks (request_mark): the request seen by poll(), the rings not
  // yet seen with nothing more in order since, and the entry count when
  // the last of them was (kNoMark: not yet).
  static constexpr uint64_t kNoMark = ~uint64_t{0};
  std::atomic<uint64_t> mark_req_{0}, mark_done_{0};
  uint64_t mark_seen_ = 0, mark_rings_ = 0, mark_entry_ = kNoMark;
  void advance_mark();
  std::atomic<uint64_t> quiet_{0};
  std::atomic<uint64_t> polls_{0};
  // stuck(): the oldest deferred record, published by poll() while some wait.
  std::atomic<uint64_t> deferred_count_{0}, stuck_table_{0}, stuck_key_{0}, stuck_version_{0};
  void remember(uint16_t node, const LogMark& m);
  void stop_corrupt(std::string reason);
  std::atomic<bool> corrupt_{false};  // set once, after corrupt_reason_ (release)
  std::string corrupt_reason_;
  CrashHook crash_;
};

}  // namespace drtmx::txn
