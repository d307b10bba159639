// The Commit phase: write back and unlock at the primaries.
#include <algorithm>

#include "r2/common/clock.h"
#include "rdpma/persist_op.h"
#include "store/record.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {
namespace {

// Durable logs with failover (txn/failover_durable.h): whether a settling
// transaction's write-backs (or their flushing READs, or its commit RPCs)
// failed only because a primary was removed from the cluster. Its entries
// are then at every backup still a member (settle_later: each such record
// has backups), one of which becomes the primary and applies it: the
// transaction may settle. Without that it would hold the coordinator's
// decision watermark back for good and gate every later entry of this
// worker. The fabric fences a removed node a moment before this worker's
// view moves: wait for the view (bounded) as Replicator::log() does.
// `failed(i)`: op i failed (i < n), and `node(i)` its target.
template <class Failed, class Node>
bool only_removed_failed(r2::Co& co, size_t n, Failed&& failed, Node&& node) {
  r2::Worker& w = co.worker();
  auto explained = [&] {
    if (!w.is_member(w.node())) return false;
    for (size_t i = 0; i < n; ++i) {
      if (failed(i) && w.is_member(node(i))) return false;
    }
    return true;
  };
  const uint64_t until = r2::now_ns() + 5'000'000'000ull;
  while (!explained() && w.is_member(w.node()) && r2::now_ns() < until) co.yield_idle();
  return explained();
}

bool target_failure(r2::OpStatus s) {
  return s == r2::OpStatus::kFenced || s == r2::OpStatus::kTransportError;
}

// A batch that failed only at removed primaries (see above).
bool batch_failed_at_removed(r2::Co& co, const r2::OpBatch& b) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.status(i) != r2::OpStatus::kOk && !target_failure(b.status(i))) return false;
  }
  return only_removed_failed(
      co, b.size(), [&](size_t i) { return b.status(i) != r2::OpStatus::kOk; },
      [&](size_t i) { return b.op(i).remote.node; });
}

}  // namespace

void Engine::add_unlocks(const uint64_t* zero) {
  for (const RecordRef& r : refs_) add_unlock(batch_, lock_word_of(r.addr), zero, false);
}

void Engine::commit() {
  auto* zero = reinterpret_cast<uint64_t*>(alloc(8));
  if (zero != nullptr) *zero = 0;
  refs_.clear();
  images_.clear();
  batch_.clear();
  held_.clear();
  const bool onesided = mvcc_onesided_on();
  size_t item = 0;  // one-sided MVCC: the next lane item (set_ order)
  const bool durable = rep_ != nullptr && rep_->durable();
  // Durable: own records written back here (flushed, to be fenced before
  // the transaction settles) and whether any went through the fabric.
  bool flushed_here = false, fabric_here = false;
  for (Access& a : set_) {
    if (!a.write) continue;
    if (a.remove) {
      // The primary marks it kDeleted (new version), unlinks and unlocks it.
      held_.push_back({a.table, a.key, a.ref.addr, a.incarnation});
      a.held = false;
      continue;
    }
    // Updates, and inserts (reserved at version 0: written as version 1).
    const uint32_t vs = a.ref.value_size;
    uint8_t* image = alloc(store::record_slot_size(vs));
    if (image == nullptr || zero == nullptr) {
      // Cannot happen with a sane arena (Execute checked its size); the
      // records stay locked rather than being written half.
      continue;
    }
    // An entry read for update but never put keeps its value: write it back
    // with a new version anyway (it was locked; the version tells readers).
    const uint8_t* value = a.new_value ? a.new_value : a.copy + sizeof(store::RecordHeader);
    build_copy(image, a.key, a.incarnation, a.ref.version + 1, value, vs);
    // MVCC: the new version carries the commit timestamp (under the seal,
    // computed once).
    if (mvcc_on()) reinterpret_cast<store::RecordHeader*>(image)->wts = commit_ts_;
    store::seal(image, vs);
    if (onesided && !a.insert) {
      // The replaced version into our lane, before the record's write.
      while (item < lane_items_.size() && &set_[lane_items_[item].access] != &a) ++item;
      if (item < lane_items_.size()) mvcc_push_onesided(item++);
    }
    if (policy_.commit == CommitPath::kWrite) {
      // This node's record: written back and unlocked here (commit_here),
      // after its version went into our lane. On a durable node the lines
      // are then written back to the pool (PersistOps::flush) and fenced
      // once before the transaction settles below — what the fabric's
      // persistent WRITE and flushing READ do for a remote primary. The
      // unlock comes before the fence there too: persistence of a primary's
      // copy only gates the release of the backups' log entries (settle).
      const store::SlotRef here =
          !crash_ && (!mvcc_on() || onesided) ? local_of(a) : store::SlotRef{};
      if (here.rec == nullptr && a.ref.addr.node == co_.node()) fabric_here = true;
      if (here.rec != nullptr) {
        commit_here(here, image, vs, /*keep_ts=*/onesided);
        if (durable) {
          rep_->persist().flush(here.rec, store::record_slot_size(vs));
          flushed_here = true;
        }
        ++stats_.writes_direct;
      } else if (crash_ && (!mvcc_on() || onesided)) {
        // Tests: the write-backs first, the unlocks after the crash point
        // (leaving the ts word alone where remote raises change it).
        if (onesided && locks_ == nullptr) {
          add_write_back_keep_ts(batch_, a.ref, image, /*passive=*/false);
        } else {
          add_write_back(batch_, a.ref, image, /*passive=*/false);
        }
        refs_.push_back(a.ref);
      } else if (locks_ != nullptr) {
        add_commit(batch_, a.ref, locks_->lock_of(a.ref.addr), image, zero,
                   policy_.passive_ack && !gts());
      } else if (onesided) {
        add_commit_keep_ts(batch_, a.ref, image, zero, policy_.passive_ack && !gts());
      } else {
        add_commit(batch_, a.ref, image, zero, policy_.passive_ack && !gts());
      }
    } else {
      refs_.push_back(a.ref);
      images_.push_back(image);
    }
    a.held = false;
  }
  if (mvcc_on()) {
    // GTS: INSTALL(TS) may only follow the writes at every primary (a
    // snapshot at a StableTS >= TS must find them): no passive ACK.
    const bool passive = policy_.passive_ack && !gts();
    if (onesided) {
      mvcc_unreserve_lanes();  // the pushes took the room they reserved
      if (!batch_.empty()) (void)co_.run(batch_);
      if (flushed_here) rep_->persist().drain();
      if (crash_ && !refs_.empty()) {
        // Tests: versions pushed and records written back, not unlocked.
        crash_point(CrashPoint::kWrittenBack);
        batch_.clear();
        add_unlocks(zero);
        (void)co_.run(batch_);
      }
      refs_.clear();
    }
    if (!refs_.empty()) (void)rpc_mvcc_commit(co_, refs_, images_, commit_ts_, passive);
    if (!held_.empty()) (void)rpc_mvcc_remove(co_, held_, lock_word_, commit_ts_, passive);
    // LocalTS = max(LocalTS, TS); later snapshots of this coroutine read
    // at least at TS (read-your-writes).
    mvcc_->clock(co_.thread()).observe(commit_ts_);
    session_ts_ = std::max(session_ts_, commit_ts_);
    return;
  }
  // Durable logs, records whose primaries received no log entry (log.cc):
  // the write-backs are made persistent here, then the transaction may
  // join the decision watermark (the backups then release its entries).
  const bool settle = rep_ != nullptr && log_.settle_later;
  if (policy_.commit == CommitPath::kWrite) {
    // One flushing READ per primary after its write-backs, same channel
    // (H9): when it completes they are persistent.
    uint64_t* flush = settle ? reinterpret_cast<uint64_t*>(alloc(8)) : nullptr;
    auto add_flushes = [&] {
      for (size_t i = 0; i < set_.size(); ++i) {
        const Access& a = set_[i];
        if (!a.write || a.remove) continue;
        // Written back here (commit_here): fenced below, not by a READ.
        if (a.ref.addr.node == co_.node() && !fabric_here) continue;
        bool first = true;  // one READ per primary node
        for (size_t j = 0; j < i && first; ++j) {
          first = !set_[j].write || set_[j].remove || set_[j].ref.addr.node != a.ref.addr.node;
        }
        // Any address of the primary works (the READ flushes the channel):
        // the lock word this thread just cleared is in its cache, while the
        // record's lines were stored non-temporally (on shm the issuer's CPU
        // reads: the record would come back from memory).
        if (first) {
          rdpma::add_flushing_read(batch_, lock_word_of(a.ref.addr), flush);
        }
      }
    };
    bool ok = settle && flush != nullptr;
    if (ok && !crash_) add_flushes();
    if (!batch_.empty()) {
      const bool ran =
          co_.run(batch_) == r2::OpStatus::kOk ||
          (ok && co_.worker().membership() != nullptr && batch_failed_at_removed(co_, batch_));
      ok = ran && ok;
    }
    if (crash_ && !refs_.empty()) {
      // Tests: written back, neither persistent (durable) nor unlocked yet.
      crash_point(CrashPoint::kWrittenBack);
      batch_.clear();
      add_unlocks(zero);
      if (ok) add_flushes();
      ok = co_.run(batch_) == r2::OpStatus::kOk && ok;
    }
    // This node's write-backs: persistent once the fence returns.
    if (flushed_here) rep_->persist().drain();
    // A failed write-back (a primary failed) leaves the transaction out of
    // the watermark for good: recovery decides it from the backups' rings.
    if (ok) rep_->settle(log_.txn);
  } else if (!refs_.empty()) {
    // The owner flushes and fences before it replies (record_ops.h): wait
    // for the replies then, passive ACK or not.
    const Status st = rpc_commit(co_, refs_, images_, policy_.passive_ack && !settle);
    // Every primary got its list (rpc_commit): a failure at a removed one
    // (failover) leaves the others' commits done.
    const bool ok =
        st.is_ok() || (settle && co_.worker().membership() != nullptr &&
                       only_removed_failed(
                           co_, refs_.size(),
                           [&](size_t i) { return !co_.worker().is_member(refs_[i].addr.node); },
                           [&](size_t i) { return refs_[i].addr.node; }) &&
                       std::any_of(refs_.begin(), refs_.end(), [&](const RecordRef& r) {
                         return !co_.worker().is_member(r.addr.node);
                       }));
    if (settle && ok) rep_->settle(log_.txn);
  }
  if (!held_.empty()) (void)loc_.remove_held(co_, held_, lock_word_, policy_.passive_ack);
}

}  // namespace drtmx::txn
