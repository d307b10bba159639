// The Execute phase and the transaction driver.
#include <algorithm>
#include <cstring>

#include "r2/common/clock.h"
#include "store/record.h"
#include "store/record_io.h"
#include "store/word_copy.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {

const char* abort_name(Abort a) {
  switch (a) {
    case Abort::kNone:
      return "committed";
    case Abort::kLockHeld:
      return "lock held";
    case Abort::kVersionChanged:
      return "version changed";
    case Abort::kRecordMissing:
      return "record missing";
    case Abort::kDuplicateInsert:
      return "duplicate insert";
    case Abort::kLogFull:
      return "log full";
    case Abort::kNodeFailure:
      return "node failure";
    case Abort::kUserAbort:
      return "user abort";
    case Abort::kTornRead:
      return "torn read";
    case Abort::kNotSupported:
      return "not supported";
    case Abort::kVersionStoreFull:
      return "version store full";
    case Abort::kOutOfMemory:
      return "out of memory";
  }
  return "?";
}

Engine::Engine(r2::Co& co, Locator& loc, Replicator* replicator, const Policy& policy,
               uint8_t* arena, size_t arena_bytes, dst::MvccNode* mvcc)
    : co_(co),
      loc_(loc),
      rep_(replicator),
      policy_(policy),
      arena_(arena),
      arena_bytes_(arena_bytes),
      lock_word_(store::lock_word(co.node(), co.thread(), co.id())),
      mvcc_(mvcc) {
  rng_ =
      (uint64_t{co.node()} << 32 | uint64_t{co.thread()} << 16 | co.id()) * 0x9E3779B97F4A7C15ull +
      1;
  if (rep_ != nullptr && arena_bytes_ > rep_->image_bytes()) {
    arena_bytes_ -= rep_->image_bytes();
    log_.images = arena_ + arena_bytes_;
  }
  if (mvcc_ != nullptr) here_ = std::make_unique<SnapshotServer>(*mvcc_, mvcc_->store());
}

uint8_t* Engine::alloc(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  if (used_ + bytes > arena_bytes_) {
    overflow_ = true;
    return nullptr;
  }
  uint8_t* p = arena_ + used_;
  used_ += bytes;
  return p;
}

uint8_t* Engine::keep(size_t bytes) {
  // Blocks of 256 KiB (or one row's worth when larger): a 10 000-row scan
  // of 100-byte rows takes a handful, allocated once per engine.
  constexpr size_t kBlock = 256 * 1024;
  bytes = (bytes + 7) & ~size_t{7};
  while (kept_block_ < kept_.size() && kept_used_ + bytes > kept_[kept_block_].bytes) {
    ++kept_block_;
    kept_used_ = 0;
  }
  if (kept_block_ == kept_.size()) {
    const size_t n = std::max(kBlock, bytes);
    kept_.push_back({std::make_unique<uint64_t[]>(n / 8), n});
    kept_used_ = 0;
  }
  uint8_t* p = reinterpret_cast<uint8_t*>(kept_[kept_block_].words.get()) + kept_used_;
  kept_used_ += bytes;
  return p;
}

Engine::Access* Engine::find(TableId t, Key k) {
  // Keys are unique in set_, so the entry after the last one found, when
  // it holds (t, k), is the one the index names: procedures read what they
  // read ahead in the same order (Stock-Level's stock rows, a New-Order's
  // items), and that costs a compare instead of a probe of a large index.
  if (next_find_ < set_.size()) {
    Access& a = set_[next_find_];
    if (a.key == k && a.table == t) {
      ++next_find_;
      return &a;
    }
  }
  const uint32_t i = index_.find(t, k);
  if (i == KeyIndex::kAbsent) return nullptr;
  next_find_ = i + 1;
  return &set_[i];
}

void Engine::await_sibling(TableId t, Key k) {
  // Bounded: a holder normally finishes within a log round trip; one stuck
  // behind a failed node must not hold its siblings longer than this. Not
  // less: with three node processes on two cores a log round trip can take
  // a scheduler time slice or two, and a waiter that gives up reads the
  // locked record and aborts (2 ms cost 10 % of TPC-C's Payments on 3
  // nodes, docs/design-notes.md).
  constexpr uint64_t kSiblingWaitNs = 10'000'000;
  if (holds_ == nullptr) return;
  uint16_t h = holds_->holder(t, k);
  if (h == LocalHolds::kNobody || h == co_.id()) return;
  const uint64_t start = r2::now_ns();
  const uint64_t deadline = start + kSiblingWaitNs;
  bool in_time = true;
  do {
    holds_->add_waiter(h, co_.id());
    in_time = co_.park_until(deadline);  // drop_holds() of the holder wakes us
    h = holds_->holder(t, k);
  } while (in_time && h != LocalHolds::kNobody && h != co_.id());
  ++stats_.sibling_waits;
  stats_.sibling_wait_ns += r2::now_ns() - start;
}

void Engine::note_holds() {
  if (holds_ == nullptr) return;
  // Until the attempt ends, this coroutine runs before the others whenever
  // its ops complete: siblings wait for what it holds.
  co_.set_urgent(true);
  for (const Access& a : set_) {
    if (a.write && !a.insert && holds_->hold(a.table, a.key, co_.id())) {
      my_holds_.push_back({a.table, a.key});
    }
  }
}

void Engine::drop_holds() {
  for (const TableKey& tk : my_holds_) holds_->drop(tk.table, tk.key, co_.id());
  my_holds_.clear();
  std::vector<uint16_t>& w = holds_->waiters_of(co_.id());
  for (const uint16_t c : w) co_.unpark(c);
  w.clear();
}

void Engine::add_access(const Access& a) {
  index_.put(a.table, a.key, static_cast<uint32_t>(set_.size()));
  set_.push_back(a);
}

Abort Engine::read_ahead(std::span<const TableKey> keys, bool for_update) {
  if (for_update && kind_ == Kind::kReadOnly) return Abort::kNotSupported;
  // A snapshot reads them all in one round trip now; errors wait for get().
  if (snapshot()) return snapshot_fetch(keys, &ahead_errors_);
  await_ahead();  // one posted batch at a time (Co::post)
  post_ahead(keys, for_update, nullptr);
  return Abort::kNone;
}

void Engine::post_ahead(std::span<const TableKey> keys, bool for_update,
                        std::vector<TableKey>* uncached) {
  ahead_batch_.clear();
  // Every caller awaited the previous batch: ahead_ holds only this call's
  // keys, and ahead_keys_ tells which keys it already took (or left for
  // `uncached`).
  ahead_keys_.clear();
  if (holds_ != nullptr && holds_->size() != 0) {
    for (const TableKey& tk : keys) {
      if (find(tk.table, tk.key) == nullptr) await_sibling(tk.table, tk.key);
    }
  }
  // The location-cache lookups below are DRAM misses each: start them all.
  if (keys.size() > 1) {
    for (const TableKey& tk : keys) loc_.prefetch_address(read_path(), tk.table, tk.key);
  }
  for (const TableKey& tk : keys) {
    if (Access* a = find(tk.table, tk.key)) {
      a->write |= for_update && !a->insert;
      continue;
    }
    if (ahead_keys_.find(tk.table, tk.key) != KeyIndex::kAbsent) continue;
    ahead_keys_.put(tk.table, tk.key, 0);
    Ahead x{tk, for_update, {}, 0, nullptr};
    if (loc_.address_of(read_path(), tk.table, tk.key, &x.addr, &x.incarnation)) {
      const uint32_t vs = loc_.value_size(tk.table);
      const auto bytes = static_cast<uint32_t>(store::record_slot_size(vs));
      // No arena room: the key takes the ordinary path at first use.
      x.buf = alloc(bytes);
      // A record of this node's is loaded by this CPU at await_ahead() —
      // what the fabric's local READ does (prefetch at post, copy at
      // completion), without its request, queue and completion. Verified
      // there like a READ's copy.
      if (x.buf != nullptr) {
        x.here = loc_.local_slot(co_, x.addr, vs);
        x.local = x.here.rec;
      }
      if (x.local != nullptr) {
        store::prefetch_lines(x.local, bytes);
        ++stats_.reads_ahead_direct;
      } else if (x.buf != nullptr) {
        ahead_batch_.read(x.addr, x.buf, bytes);
      }
    } else if (uncached != nullptr) {
      uncached->push_back(tk);
      continue;
    }
    ahead_.push_back(x);
  }
  if (!ahead_batch_.empty()) {
    stats_.reads_ahead += ahead_batch_.size();
    co_.post(ahead_batch_);  // returns at once; await_ahead() waits
  }
}

void Engine::await_ahead() {
  if (ahead_.empty()) return;
  const bool posted = co_.posted();
  const r2::OpStatus st = posted ? co_.wait_posted() : r2::OpStatus::kOk;
  // Taken out first: read() below may run await_ahead() again (a no-op).
  ahead_done_.clear();
  ahead_done_.swap(ahead_);
  // This node's records (post_ahead): copied now, as the fabric copies a
  // local READ at its completion. The acquire fence: what other threads
  // and processes published before is visible to the loads (a copy racing
  // a writer is caught by verify() below, as a torn READ is — or, where
  // the node's memory allows, by the quiet copy's own check, which needs
  // no hash of the value).
  size_t local = 0;
  const bool quiet = loc_.quiet_copies();
  for (Ahead& x : ahead_done_) {
    if (x.local == nullptr) continue;
    if (local++ == 0) std::atomic_thread_fence(std::memory_order_acquire);
    const size_t bytes = store::record_slot_size(loc_.value_size(x.tk.table));
    if (quiet) {
      x.quiet = store::copy_quiet(x.buf, x.local, bytes);
    } else {
      store::load_words(x.buf, x.local, bytes);
    }
  }
  // Done without suspending: counts toward the yield streak as a batch of
  // local ops would (r2::Worker::wait_batch).
  if (local != 0 && !posted) co_.charge(1);
  size_t op = 0;
  for (const Ahead& x : ahead_done_) {
    const uint32_t vs = loc_.value_size(x.tk.table);
    bool done = false;
    if (x.buf != nullptr) {
      const bool ok = x.local != nullptr || st == r2::OpStatus::kOk ||
                      ahead_batch_.status(op) == r2::OpStatus::kOk;
      if (x.local == nullptr) ++op;
      // The READ verified: the record as it was (a consistent, current
      // image of the cached address's record). Version 0 is an
      // uncommitted insert: like read(), kLockHeld.
      if (ok && (x.quiet ? store::verify_quiet(x.buf, x.tk.key, x.incarnation)
                         : store::verify(x.buf, vs, x.tk.key, x.incarnation)) ==
                    store::RecordCheck::kOk) {
        store::RecordHeader h;
        std::memcpy(&h, x.buf, sizeof h);
        if (h.version == 0) {
          ahead_errors_.push_back({x.tk, Abort::kLockHeld});
          continue;
        }
        Access a{};
        a.table = x.tk.table;
        a.key = x.tk.key;
        a.ref = RecordRef{x.addr, vs, h.version};
        a.here = x.here;  // looked up by post_ahead for this address
        a.here_known = true;
        a.incarnation = h.incarnation;
        a.copy = x.buf;
        a.write = x.for_update;
        add_access(a);
        done = true;
      }
    }
    if (!done) {
      // No address, a failed READ, a torn copy or a stale cache entry: the
      // ordinary read path (which also refreshes the cache).
      value_tmp_.resize(vs);
      if (Abort r = read(x.tk.table, x.tk.key, value_tmp_.data(), x.for_update);
          r != Abort::kNone) {
        ahead_errors_.push_back({x.tk, r});
      }
    }
  }
}

Abort Engine::read(TableId t, Key k, void* out, bool for_update) {
  if (for_update && kind_ == Kind::kReadOnly) return Abort::kNotSupported;
  await_ahead();
  for (size_t i = 0; i < ahead_errors_.size(); ++i) {
    if (ahead_errors_[i].first.table == t && ahead_errors_[i].first.key == k) {
      const Abort r = ahead_errors_[i].second;
      ahead_errors_.erase(ahead_errors_.begin() + static_cast<ptrdiff_t>(i));
      return blame(r, t);
    }
  }
  const uint32_t vs = loc_.value_size(t);
  Access* a = find(t, k);
  if (snapshot() && a == nullptr) {
    const TableKey tk{t, k};
    if (Abort r = snapshot_fetch({&tk, 1}, nullptr); r != Abort::kNone) return r;
    a = find(t, k);
  }
  if (a != nullptr) {  // read again: serve from the transaction
    if (a->remove) return blame(Abort::kRecordMissing, t);  // deleted by this transaction
    a->write |= for_update;
    std::memcpy(out, a->new_value ? a->new_value : a->copy + sizeof(store::RecordHeader), vs);
    return Abort::kNone;
  }
  uint8_t* copy = alloc(store::record_slot_size(vs));
  if (copy == nullptr) return Abort::kNotSupported;
  await_sibling(t, k);
  Access n{};
  n.table = t;
  n.key = k;
  n.copy = copy;
  n.write = for_update;
  Abort r = loc_.read(co_, read_path(), t, k, &n.ref, copy);
  if (r != Abort::kNone) return blame(r, t);
  // Version 0: another transaction's insert, reserved but not committed
  // (index_ops.h). It cannot validate; do not hand its value out.
  if (n.ref.version == 0) return blame(Abort::kLockHeld, t);
  store::RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  n.incarnation = h.incarnation;
  add_access(n);
  std::memcpy(out, copy + sizeof h, vs);
  return Abort::kNone;
}

Abort Engine::prefetch(std::span<const TableKey> keys, bool for_update) {
  if (for_update && kind_ == Kind::kReadOnly) return Abort::kNotSupported;
  if (snapshot()) return snapshot_fetch(keys, nullptr);
  await_ahead();
  // Keys whose record address the location cache knows: one batch of READs
  // for all of them (one doorbell per peer), verified as read_ahead's are;
  // the others (and any READ that fails) through the locator's read_many.
  // Keys the transaction already read, or named twice, are skipped.
  miss_.clear();
  post_ahead(keys, for_update, &miss_);
  await_ahead();
  if (!ahead_errors_.empty()) {
    const auto [tk, r] = ahead_errors_.front();
    ahead_errors_.clear();
    return blame(r, tk.table);
  }
  if (miss_.empty()) return Abort::kNone;
  const size_t n = miss_.size();
  miss_refs_.resize(n);
  miss_copies_.resize(n);
  miss_results_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    miss_copies_[i] = alloc(store::record_slot_size(loc_.value_size(miss_[i].table)));
    if (miss_copies_[i] == nullptr) return Abort::kNotSupported;
  }
  loc_.read_many(co_, read_path(), miss_, miss_refs_.data(), miss_copies_.data(),
                 miss_results_.data());
  for (size_t i = 0; i < n; ++i) {
    if (miss_results_[i] != Abort::kNone) return blame(miss_results_[i], miss_[i].table);
    // An uncommitted insert (see read()).
    if (miss_refs_[i].version == 0) return blame(Abort::kLockHeld, miss_[i].table);
    Access a{};
    a.table = miss_[i].table;
    a.key = miss_[i].key;
    a.ref = miss_refs_[i];
    a.copy = miss_copies_[i];
    a.write = for_update;
    store::RecordHeader h;
    std::memcpy(&h, miss_copies_[i], sizeof h);
    a.incarnation = h.incarnation;
    add_access(a);
  }
  return Abort::kNone;
}

Abort Engine::get(TableId t, Key k, void* out) {
  return read(t, k, out, false);
}
Abort Engine::get_for_update(TableId t, Key k, void* out) {
  return read(t, k, out, true);
}

Abort Engine::put(TableId t, Key k, const void* value) {
  if (kind_ == Kind::kReadOnly) return Abort::kNotSupported;
  await_ahead();
  Access* a = find(t, k);
  if (a != nullptr && a->remove) return Abort::kRecordMissing;
  if (a == nullptr) {
    // A blind write: read it first so Validate has its address and version.
    std::vector<uint8_t> tmp(loc_.value_size(t));
    if (Abort r = read(t, k, tmp.data(), true); r != Abort::kNone) return r;
    a = find(t, k);
  }
  const uint32_t vs = loc_.value_size(t);
  if (a->new_value == nullptr) {
    a->new_value = alloc(vs);
    if (a->new_value == nullptr) return Abort::kNotSupported;
  }
  std::memcpy(a->new_value, value, vs);
  a->write = true;
  return Abort::kNone;
}

Abort Engine::insert(TableId t, Key k, const void* value) {
  if (kind_ == Kind::kReadOnly) return Abort::kNotSupported;
  await_ahead();  // the key may be among them (then it exists)
  const uint32_t vs = loc_.value_size(t);
  if (vs == 0) return Abort::kNotSupported;  // unknown table
  if (Access* a = find(t, k)) {
    if (!a->remove) return blame(Abort::kDuplicateInsert, t);  // read, written or inserted here
    // Deleted in this transaction, inserted again: an update of the record.
    a->remove = false;
    return put(t, k, value);
  }
  Access a{};
  a.table = t;
  a.key = k;
  a.ref.value_size = vs;
  a.new_value = alloc(vs);
  if (a.new_value == nullptr) return Abort::kNotSupported;
  std::memcpy(a.new_value, value, vs);
  a.write = true;
  a.insert = true;
  add_access(a);
  return Abort::kNone;
}

Abort Engine::remove(TableId t, Key k) {
  if (kind_ == Kind::kReadOnly || !loc_.deletes(t)) return Abort::kNotSupported;
  await_ahead();
  Access* a = find(t, k);
  if (a != nullptr && a->remove) return Abort::kRecordMissing;
  if (a != nullptr && a->insert) {
    // Inserted in this transaction: nothing reaches the store.
    set_.erase(set_.begin() + (a - set_.data()));
    index_.clear();  // positions moved
    for (size_t i = 0; i < set_.size(); ++i) {
      index_.put(set_[i].table, set_[i].key, static_cast<uint32_t>(i));
    }
    return Abort::kNone;
  }
  if (a == nullptr) {
    std::vector<uint8_t> tmp(loc_.value_size(t));
    if (Abort r = read(t, k, tmp.data(), true); r != Abort::kNone) return r;
    a = find(t, k);
  }
  a->write = true;
  a->remove = true;
  return Abort::kNone;
}

Abort Engine::scan(TableId t, Key from, Key to, size_t limit, Rows* out) {
  out->keys.clear();
  out->values.clear();
  await_ahead();
  if (from > to || limit == 0) return Abort::kNone;
  // A snapshot scan: the rows at the read timestamp, nothing to validate.
  if (snapshot()) return snapshot_scan(t, from, to, limit, out);
  const uint32_t vs = loc_.value_size(t);
  Abort r = loc_.scan(co_, read_path(), t, from, to, limit, &scan_keys_, &scan_values_, &scan_refs_,
                      &scan_incs_);
  if (r != Abort::kNone) return blame(r, t);
  // The range the store answered for: up to `to`, or up to the last row
  // when the limit cut it. Validate scans exactly this range again.
  const Key covered = scan_keys_.size() == limit ? scan_keys_.back() : to;
  scans_.push_back({t, from, covered, scan_keys_});
  // Every row joins the read set (a row read before keeps that copy: if the
  // two differ, validation of it fails anyway).
  for (size_t i = 0; i < scan_keys_.size(); ++i) {
    if (scan_refs_[i].version == 0) return blame(Abort::kLockHeld, t);  // an uncommitted insert
    if (find(t, scan_keys_[i]) != nullptr) continue;
    Access a{};
    a.table = t;
    a.key = scan_keys_[i];
    a.ref = scan_refs_[i];
    a.incarnation = scan_incs_[i];
    // Rebuilt from the store's answer, never a fabric op's buffer: in
    // ordinary memory, so a scan's size is not bounded by the arena.
    a.copy = keep(store::record_slot_size(vs));
    build_copy(a.copy, a.key, a.incarnation, a.ref.version, scan_values_.data() + i * vs, vs);
    add_access(a);
  }
  // What the procedure sees: the store's rows overlaid with this
  // transaction's own writes — its puts, its deletes (left out) and its
  // inserts inside the covered range — ascending, at most `limit`.
  std::vector<Key> mine;
  for (const Access& a : set_) {
    if (a.table == t && a.insert && a.key >= from && a.key <= covered) mine.push_back(a.key);
  }
  std::sort(mine.begin(), mine.end());
  size_t i = 0, j = 0;
  while ((i < scan_keys_.size() || j < mine.size()) && out->keys.size() < limit) {
    Key k;
    if (j == mine.size() || (i < scan_keys_.size() && scan_keys_[i] <= mine[j])) {
      k = scan_keys_[i++];
      if (j < mine.size() && mine[j] == k) ++j;
    } else {
      k = mine[j++];
    }
    const Access* a = find(t, k);
    if (a == nullptr || a->remove) continue;
    const uint8_t* v = a->new_value ? a->new_value : a->copy + sizeof(store::RecordHeader);
    out->keys.push_back(k);
    out->values.insert(out->values.end(), v, v + vs);
  }
  return Abort::kNone;
}

namespace {
// How long a transaction that failed for a removed node waits for its node
// to serve the moved partitions (Failover's own steps time out sooner).
constexpr uint64_t kSettleWaitNs = 20'000'000'000;
}  // namespace

Abort Engine::run_with_retry(const Procedure& proc, const RetryPolicy& p, Kind kind) {
  Abort r = Abort::kNone;
  for (uint32_t attempt = 1; attempt <= p.max_attempts; ++attempt) {
    r = run(proc, kind);
    if (r == Abort::kNone || r == Abort::kUserAbort || r == Abort::kRecordMissing ||
        r == Abort::kDuplicateInsert || r == Abort::kNotSupported || r == Abort::kOutOfMemory) {
      return r;  // final: retrying cannot change them
    }
    // A node failure while this node reconfigures for the epoch the attempt
    // ran under: it needed a partition whose primary was removed, which is
    // served again once the node has promoted (a retry before fails the
    // same way).
    if (r == Abort::kNodeFailure && settling()) await_settled();
    if (attempt < p.max_attempts) backoff(attempt, p);
  }
  return r;
}

bool Engine::settling() const {
  return gate_ != nullptr && gate_->settled_epoch() < begin_epoch_;
}

void Engine::await_settled() {
  if (gate_ != nullptr) gate_->await_settled(co_, begin_epoch_, kSettleWaitNs);
}

void Engine::backoff(uint32_t attempt, const RetryPolicy& p) {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const uint32_t k = attempt < p.max_backoff_log2 ? attempt : p.max_backoff_log2;
  const uint64_t base = p.backoff_base_ns == 0 ? 1 : p.backoff_base_ns;
  const uint64_t until = r2::now_ns() + base + rng_ % (base << k);
  do {
    co_.yield_idle();
  } while (r2::now_ns() < until);
}

Abort Engine::finish(Abort a) {
  if (holds_ != nullptr) {
    co_.set_urgent(false);
    if (!my_holds_.empty()) drop_holds();
  }
  if (gts_owed_) {
    // Committed (its versions are in place) or aborted: either way the
    // oracle may move StableTS past it. A lost INSTALL (node failure)
    // stops StableTS: the GTS baseline's single point of failure.
    gts_owed_ = false;
    (void)gts_install(co_, commit_ts_);
  }
  abort_table_ = a != Abort::kNone && a == blamed_ ? blamed_table_ : kNoTable;
  if (a == Abort::kNone) {
    ++stats_.committed;
  } else {
    ++stats_.aborts[static_cast<int>(a)];
  }
  return a;
}

Abort Engine::run(const Procedure& proc, Kind kind) {
  co_.yield_at_boundary();  // other coroutines' turns between transactions
  // A read-only transaction leads its worker's coroutines (Co::set_leading):
  // its periodic yields let the loop poll, and then it goes on. A long one (a
  // 20-district Stock-Level reads ~6 000 rows) otherwise waits a turn of
  // every other coroutine at each yield, and the longer it runs, the more
  // writers commit under it: under OCC it aborts at validation, and a
  // snapshot holds the version store's low-water mark back.
  const bool lead = kind == Kind::kReadOnly;
  if (lead) co_.set_leading(true);
  Abort r = Abort::kNodeFailure;  // failover failed
  if (gate_ == nullptr) {
    r = run_attempt(proc, kind);
  } else if (gate_->enter(co_, gate_slot_, &begin_epoch_)) {
    r = run_attempt(proc, kind);
    gate_->leave(gate_slot_);
  }
  if (lead) co_.set_leading(false);
  return r;
}

Abort Engine::run_attempt(const Procedure& proc, Kind kind) {
  // Passive ACK: the previous attempt's unsignaled ops (commit images,
  // unlock WRITEs, release CASes and their results) use the arena until
  // they retire; on an RNIC that is after the post returned. Usually they
  // have (later signaled ops of the worker retired them); otherwise this
  // waits for them before the arena is reused (r2/sched/co.h).
  if (co_.settle_unsignaled() != r2::OpStatus::kOk) return finish(Abort::kNodeFailure);
  if (poison_ != 0) std::memset(arena_, poison_, arena_bytes_);
  // A fresh lock word per transaction (store/record.h: a passive commit of
  // the previous one may still hold its locks).
  lock_word_ = store::lock_word(co_.node(), co_.thread(), co_.id(), ++txn_seq_);
  set_.clear();
  index_.clear();
  scans_.clear();
  ahead_.clear();
  ahead_errors_.clear();
  used_ = 0;
  kept_block_ = 0;
  kept_used_ = 0;
  overflow_ = false;
  blamed_ = Abort::kNone;
  blamed_table_ = kNoTable;
  read_wait_ = {};
  kind_ = kind;
  commit_ts_ = 0;
  if (snapshot()) return run_snapshot(proc);
  Abort r = proc(*this);
  // Reads still in flight are waited for (their buffers are in the arena);
  // an error among them that no get() reported aborts the transaction.
  await_ahead();
  if (r == Abort::kNone && !ahead_errors_.empty()) {
    r = blame(ahead_errors_.front().second, ahead_errors_.front().first.table);
  }
  if (overflow_ && r == Abort::kNone) r = Abort::kNotSupported;  // arena too small
  if (r != Abort::kNone) return finish(r);                       // nothing is locked in Execute
  bool writes = false;
  for (const Access& a : set_) writes |= a.write;
  // A single-key read-only transaction is consistent as read (one verified
  // record image); a scan is not (many leaves and records).
  if (!writes && set_.size() <= 1 && scans_.empty()) return finish(Abort::kNone);
  // A membership change since the start: what was read may come from a
  // node that is gone, and the placement is about to move.
  if (epoch_moved()) return finish(Abort::kNodeFailure);
  if (Abort v = validate(); v != Abort::kNone) return finish(v);
  if (!writes) return finish(Abort::kNone);
  if (observer_ != nullptr) tell_prepared();
  crash_point(CrashPoint::kValidated);
  if (epoch_moved()) {
    if (observer_ != nullptr) observer_->logged(false);
    release(policy_.passive_ack);
    return finish(Abort::kNodeFailure);
  }
  if (Abort l = log(); l != Abort::kNone) {
    if (observer_ != nullptr) observer_->logged(false);
    release(policy_.passive_ack);
    return finish(l);
  }
  crash_point(CrashPoint::kLogged);
  if (observer_ != nullptr) observer_->logged(true);
  crash_point(CrashPoint::kAcknowledged);
  commit();
  crash_point(CrashPoint::kCommitted);
  return finish(Abort::kNone);
}

void Engine::tell_prepared() {
  observed_.clear();
  for (const Access& a : set_) {
    if (!a.write) continue;
    const RedoOp op = a.insert ? RedoOp::kInsert : a.remove ? RedoOp::kDelete : RedoOp::kUpdate;
    observed_.push_back({a.table, op, a.key, a.ref.version + 1});
  }
  observer_->prepared(observed_);
}

}  // namespace drtmx::txn
