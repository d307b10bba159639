// The Log phase: replicate the redo records to every backup.
#include "store/record.h"
#include "txn/engine.h"

namespace drtmx::txn {

Abort Engine::log() {
  if (rep_ == nullptr || fault_ == TestFault::kSkipLog) return Abort::kNone;
  // Each backup receives the records of the partitions it backs up — never
  // records it is the primary of (it must not apply over a locked primary).
  // Durable logs: a record's primary receives it too, marked with where
  // Commit writes it back — it does not apply it, it makes the write-back
  // persistent before the entry is released (replication.h) — unless the
  // record has backups and Commit writes it back (one-sided WRITE, or the
  // commit RPC; not MVCC, not a delete): then Commit makes the write-back
  // persistent itself (a flushing READ after it; the RPC's reply, which the
  // owner sends after flushing) and only then lets the transaction join the
  // decision watermark
  // (LogBuffers::settle_later), so the backups keep every entry until the
  // primary's copy is persistent, and recovery ships committed records from
  // their rings to the primaries (recovery.h).
  // Groups are reused across transactions (their vectors keep capacity).
  const bool durable = rep_->durable();
  const bool flushed_writeback = durable && !mvcc_on();
  log_.settle_later = false;
  size_t groups = 0;
  auto add_to = [&](r2::NodeId node, const RedoRecord& r) {
    size_t g = 0;
    while (g < groups && log_groups_[g].node != node) ++g;
    if (g == groups) {
      if (groups == log_groups_.size()) log_groups_.emplace_back();
      log_groups_[g].node = node;
      log_groups_[g].recs.clear();
      ++groups;
    }
    log_groups_[g].recs.push_back(r);
  };
  for (const Access& a : set_) {
    if (!a.write) continue;
    RedoRecord r;
    r.table = a.table;
    r.op = a.insert ? RedoOp::kInsert : a.remove ? RedoOp::kDelete : RedoOp::kUpdate;
    r.key = a.key;
    r.version = a.ref.version + 1;  // an insert: 1 (reserved at version 0)
    r.ts = mvcc_on() ? commit_ts_ : 0;
    if (!a.remove) {
      // Read for update but never put: the old value with the new version,
      // exactly what Commit writes back.
      const uint8_t* v = a.new_value ? a.new_value : a.copy + sizeof(store::RecordHeader);
      r.value = {v, a.ref.value_size};
    }
    r2::NodeId mine[8];
    const size_t n = loc_.backups(a.table, a.key, mine, 8);
    for (size_t i = 0; i < n; ++i) add_to(mine[i], r);
    if (!durable) continue;
    if (n > 0 && flushed_writeback && !a.remove) {
      log_.settle_later = true;
      continue;
    }
    r.at_primary = a.ref.addr.offset + 1;
    r.incarnation = a.incarnation;
    add_to(a.ref.addr.node, r);
  }
  if (groups == 0) return Abort::kNone;
  if (log_.images == nullptr) return Abort::kNotSupported;  // arena too small for log images
  log_entries_.clear();
  for (size_t g = 0; g < groups; ++g)
    log_entries_.push_back({log_groups_[g].node, log_groups_[g].recs});
  Status s = rep_->log(co_, log_entries_, log_);
  if (s.is_ok()) return Abort::kNone;
  // Full for the whole back-pressure wait, or an entry larger than a ring
  // could ever hold: both are the log's capacity.
  return s.code() == drtmx::Code::kResourceExhausted || s.code() == drtmx::Code::kOutOfRange
             ? Abort::kLogFull
             : Abort::kNodeFailure;
}

}  // namespace drtmx::txn
