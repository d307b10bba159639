// MVCC in the engine: read-only transactions as snapshots (DEP_READ by
// RPC at a read timestamp; no validation, no abort), and the timestamp
// steps of read-write transactions' Validate (RW1: the commit timestamp;
// claims of scanned ranges). Thesis §5.2 / Table 6-1; dst/README.md.
#include <algorithm>
#include <cstring>

#include "store/record.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {

Abort Engine::run_snapshot(const Procedure& proc) {
  // RO1: the local timestamp, and at least the coroutine's last commit
  // (read-your-writes); the floor may raise it (never below a published
  // floor, so GC keeps what it reads).
  // GTS: the oracle's StableTS (no read-your-writes: fetch_stable); the
  // floor's base never exceeds a StableTS this node has seen, so begin()
  // keeps it stable.
  dst::Timestamp proposed = 0;
  if (gts()) {
    if (Abort a = fetch_stable(&proposed); a != Abort::kNone) return finish(a);
  } else {
    proposed = std::max(mvcc_->clock(co_.thread()).now(), session_ts_);
  }
  read_ts_ = mvcc_->floor().begin(co_.thread(), co_.id(), proposed);
  Abort r = proc(*this);
  mvcc_->floor().end(co_.thread(), co_.id());
  if (overflow_ && r == Abort::kNone) r = Abort::kNotSupported;  // arena too small
  return finish(r);
}

Abort Engine::snapshot_fetch(std::span<const TableKey> keys,
                             std::vector<std::pair<TableKey, Abort>>* errors) {
  snap_rows_.clear();
  ahead_keys_.clear();
  for (const TableKey& tk : keys) {
    if (find(tk.table, tk.key) != nullptr) continue;
    if (ahead_keys_.find(tk.table, tk.key) != KeyIndex::kAbsent) continue;  // twice in `keys`
    ahead_keys_.put(tk.table, tk.key, 0);
    const uint32_t vs = loc_.value_size(tk.table);
    if (vs == 0) return blame(Abort::kNotSupported, tk.table);
    uint8_t* copy = alloc(store::record_slot_size(vs));
    if (copy == nullptr) return Abort::kNotSupported;
    SnapshotRow row;
    row.tk = tk;
    row.primary = loc_.primary(tk.table, tk.key);
    row.value = copy + store::kValueOffset;
    snap_rows_.push_back(row);
  }
  if (snap_rows_.empty()) return Abort::kNone;
  stats_.snapshot_reads += snap_rows_.size();
  // This node's rows in place; then, where that is safe, one-sided; the
  // rest by the DEP_READ RPC.
  snapshot_direct(&snap_rows_, &snap_todo_);
  snap_rest_.clear();
  if (mvcc_onesided_on() && !snap_todo_.empty()) {
    snapshot_onesided(&snap_rows_, snap_todo_, &snap_rest_);
  } else {
    snap_rest_.swap(snap_todo_);
  }
  if (!snap_rest_.empty()) {
    std::vector<SnapshotRow>& rows = snap_rpc_rows_;
    rows.clear();
    for (size_t i : snap_rest_) rows.push_back(snap_rows_[i]);
    ReadWait w;
    Status s = rpc_snapshot_get(co_, rows, read_ts_, snapshot_mode(), &w);
    read_wait_.blocked_reads += w.blocked_reads;
    read_wait_.wait_ns += w.wait_ns;
    if (!s.is_ok()) return blame(Abort::kNodeFailure, rows.front().tk.table);
    for (size_t j = 0; j < snap_rest_.size(); ++j) {
      const SnapshotRow& r = rows[j];
      // The next snapshot of this row reads it without the RPC.
      if (r.offset != 0)
        loc_.remember_address(r.tk.table, r.tk.key, r.primary, r.offset, r.incarnation);
      snap_rows_[snap_rest_[j]] = r;
    }
  }
  Abort first = Abort::kNone;
  for (const SnapshotRow& row : snap_rows_) {
    if (!row.found) {
      if (errors != nullptr) {
        errors->push_back({row.tk, Abort::kRecordMissing});
      } else if (first == Abort::kNone) {
        first = blame(Abort::kRecordMissing, row.tk.table);
      }
      continue;
    }
    // The value was read into its copy's value part: its header makes the
    // copy a record image (version, identity) so later get()s serve it.
    // Not sealed: a read-only transaction's copies are never checked nor
    // written anywhere (the seal was a hash of every value read).
    uint8_t* copy = row.value - store::kValueOffset;
    const uint32_t vs = loc_.value_size(row.tk.table);
    store::RecordHeader h{};
    h.version = row.version;
    h.key = row.tk.key;
    h.flags = store::kLive;
    std::memcpy(copy, &h, sizeof h);
    Access a{};
    a.table = row.tk.table;
    a.key = row.tk.key;
    a.ref.value_size = vs;
    a.ref.version = row.version;
    a.copy = copy;
    add_access(a);
  }
  return first;
}

Abort Engine::snapshot_scan(TableId t, Key from, Key to, size_t limit, Rows* out) {
  if (!loc_.scannable(t)) return blame(Abort::kNotSupported, t);
  loc_.scan_parts(t, from, to, &scan_parts_);
  if (!loc_.scan_merges(t, from, to)) {
    // Key order is partition order: until the limit.
    for (const Locator::ScanPart& p : scan_parts_) {
      bool exhausted = false;
      const Abort r = snapshot_scan_part(t, p, from, to, limit - out->keys.size(), out, &exhausted);
      if (r != Abort::kNone) return r;
      if (!exhausted || out->keys.size() >= limit) break;
    }
    return Abort::kNone;
  }
  // The partitions' keys interleave: the `limit` smallest keys of each,
  // merged. A key lives in one partition, so no key comes twice.
  const uint32_t vs = loc_.value_size(t);
  Rows all;
  for (const Locator::ScanPart& p : scan_parts_) {
    bool exhausted = false;
    if (Abort r = snapshot_scan_part(t, p, from, to, limit, &all, &exhausted); r != Abort::kNone) {
      return r;
    }
  }
  std::vector<uint32_t> order(all.keys.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t n = std::min(limit, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](uint32_t x, uint32_t y) { return all.keys[x] < all.keys[y]; });
  for (size_t i = 0; i < n; ++i) {
    out->keys.push_back(all.keys[order[i]]);
    const uint8_t* v = all.values.data() + size_t{order[i]} * vs;
    out->values.insert(out->values.end(), v, v + vs);
  }
  return Abort::kNone;
}

Abort Engine::snapshot_scan_part(TableId t, const Locator::ScanPart& p, Key from, Key to,
                                 size_t limit, Rows* out, bool* exhausted) {
  const uint32_t vs = loc_.value_size(t);
  const size_t first = out->keys.size();
  Key cur = from;
  *exhausted = false;
  for (size_t chunks = 0; chunks < size_t{1} << 24; ++chunks) {
    const size_t got = out->keys.size() - first;
    if (got >= limit) return Abort::kNone;
    const uint32_t want = static_cast<uint32_t>(std::min<size_t>(limit - got, 1u << 16));
    const size_t had = out->keys.size();
    bool done = false;
    if (!scan_here(p, t, cur, to, want, out, &done)) {
      ReadWait w;
      Status s = rpc_snapshot_scan(co_, p.primary, t, p.part, cur, to, want, vs, read_ts_,
                                   snapshot_mode(), &out->keys, &out->values, &done, &w);
      read_wait_.blocked_reads += w.blocked_reads;
      read_wait_.wait_ns += w.wait_ns;
      if (!s.is_ok()) return blame(Abort::kNodeFailure, t);
    }
    if (done) {
      *exhausted = true;
      return Abort::kNone;
    }
    // The chunk's limit was reached: on from its last key.
    if (out->keys.size() == had || out->keys.back() >= to) return Abort::kNone;
    cur = out->keys.back() + 1;
  }
  return Abort::kNone;
}

bool Engine::scan_here(const Locator::ScanPart& p, TableId t, Key from, Key to, uint32_t limit,
                       Rows* out, bool* exhausted) {
  const r2::NodeId primary = p.primary;
  if (here_ == nullptr || primary != co_.node() || !co_.direct(primary)) return false;
  struct ToRows : SnapshotSink {
    Rows* out;
    uint32_t value_size;
    void row(uint64_t key, const SnapshotHit&, const uint8_t* value) override {
      out->keys.push_back(key);
      out->values.insert(out->values.end(), value, value + value_size);
    }
  } sink;
  sink.out = out;
  sink.value_size = loc_.value_size(t);
  const size_t keys = out->keys.size(), bytes = out->values.size();
  uint64_t blocked = 0;
  std::string err;
  const bool ok = here_->scan(t, p.part, from, to, limit, read_ts_, snapshot_mode(), &sink,
                              exhausted, &blocked, &err);
  if (!ok || blocked != 0) {
    // The RPC waits for the lock holders (or reports the error).
    out->keys.resize(keys);
    out->values.resize(bytes);
    return false;
  }
  charge_rows(out->keys.size() - keys);  // done without suspending
  return true;
}

void Engine::compute_commit_ts(uint64_t collected) {
  // RW1: above the local timestamp and every timestamp met — the versions
  // read (their wts) and the tuple timestamps seen in Execute, the ones
  // collected under the locks and the reserved partitions' range
  // timestamps (`collected`).
  uint64_t ts = mvcc_->clock(co_.thread()).now();
  if (collected != 0) ts = std::max(ts, collected + 1);
  for (const Access& a : set_) {
    if (a.copy == nullptr) continue;
    store::RecordHeader h;
    std::memcpy(&h, a.copy, sizeof h);
    ts = std::max({ts, h.wts + 1, h.ts + 1});
  }
  commit_ts_ = ts;
}

Abort Engine::claim_scans() {
  // A scanned range is claimed at the commit timestamp before its phantom
  // check, like a read record (raise, then check): an insert into it
  // either shows in the re-scan or commits above us. Every partition the
  // range may reach is claimed (an insert lands in one of them).
  std::vector<PartitionClaim>& parts = part_claims_;
  parts.clear();
  for (const ScanSet& sc : scans_) {
    loc_.scan_parts(sc.table, sc.from, sc.to, &scan_parts_);
    for (const Locator::ScanPart& p : scan_parts_) parts.push_back({p.primary, sc.table, p.part});
  }
  if (parts.empty()) return Abort::kNone;
  if (mvcc_onesided_on()) return claim_onesided(parts);
  Status s = rpc_range_claim(co_, parts, commit_ts_);
  return s.is_ok() ? Abort::kNone : blame(Abort::kNodeFailure, parts.front().table);
}

Abort Engine::take_gts() {
  auto* word = reinterpret_cast<uint64_t*>(alloc(8));
  if (word == nullptr) return Abort::kNotSupported;
  Result<uint64_t> ts = gts_next(co_, word);
  if (!ts.is_ok()) return blame(Abort::kNodeFailure, kNoTable);
  commit_ts_ = *ts;
  gts_owed_ = true;
  return Abort::kNone;
}

Abort Engine::fetch_stable(uint64_t* out) {
  // Not at least session_ts_: StableTS may lag this coroutine's last
  // commit by the transactions still in flight, and waiting for it (a spin
  // on the oracle) cost 37x in throughput on a 2-core machine (SmallBank,
  // docs/design-notes.md). The thesis's GTS baseline does not wait either:
  // its snapshots are serializable, not read-your-writes.
  auto* word = reinterpret_cast<uint64_t*>(alloc(8));
  if (word == nullptr) return Abort::kNotSupported;
  Result<uint64_t> s = gts_stable(co_, word);
  if (!s.is_ok()) return blame(Abort::kNodeFailure, kNoTable);
  mvcc_->observe_stable(*s);
  *out = *s;
  return Abort::kNone;
}

}  // namespace drtmx::txn
