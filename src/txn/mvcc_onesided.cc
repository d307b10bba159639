// MVCC Validate and Commit with one-sided operations (policy.h,
// mvcc_onesided()): on a fabric whose atomics are coherent with the CPU's,
// the steps dst/record_mvcc.h runs at a primary are done by the coordinator
// with CAS, READ and WRITE on the primary's memory, and the version a commit
// replaces goes into the coordinator's own lane of the primary's version
// store (dst/version_store.h, "Lanes").
//
//   lock   per record to update: CAS the lock word, then (same channel,
//          FIFO, so after the CAS) READ the whole record and its chain
//          head. Collected: max(ts, wts) — RW1 under the
//          lock, as lock_and_collect. Room for the version the commit
//          pushes is reserved in the lane beforehand (this thread's
//          LaneCursor: the lane is written by no one else).
//   check  per record only read: CAS ts from what we believe it is to the
//          commit timestamp (raise; only when below it), then READ the
//          lock word, then READ [version .. wts] — raise then check, as
//          raise_and_check. A CAS that finds ts moved is retried with the
//          value found (ts only grows, so this ends). DST: the first
//          round's batch also publishes, in each locked record's holder
//          entry, the timestamp we commit above (commit_ts - 1; WRITE ts,
//          then the lock word), as lock_and_collect publishes it, so a
//          snapshot at or below it reads past our lock instead of waiting.
//          It rides in a batch that runs anyway: a transaction without
//          reads publishes nothing (its readers wait for the unlock, which
//          follows after one more round). Entries are never cleared: one
//          is read only while the record's lock word equals the entry's,
//          and lock words are per transaction (version_store.h, holders).
//   commit per record updated: WRITE the lane slot (the record as READ
//          under the lock — not Execute's copy, which an RPC read returns
//          without its wts; its position word in the same WRITE),
//          WRITE the chain head, then the record
//          and its unlock (record_ops.h add_commit), one channel. The new
//          version's wts is the commit timestamp, so a later writer
//          collects it from wts — ts need not be raised for written
//          records. The lane header's head word is a bound written once
//          kBoundSlack pushes ahead (dst/mvcc_node.h, LaneCursor).
// Deletes keep the two-sided steps (the graveyard is the owner's): records
// to remove are locked, unlocked and removed by RPC.
//
// A record whose primary is the coordinator's own node, on a worker that
// runs local operations directly (Co::direct, Locator::local_slot): each
// step above is run at once by this CPU on the node's memory, in the order
// the queued ops would run — mvcc_lock_here, dst::raise_and_check (what
// rpc_mvcc_check runs at a primary), VersionStore::hold, lane_header,
// raise_lane_bound and push_lane.
#include <algorithm>
#include <cstring>

#include "store/record.h"
#include "store/word_copy.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {

namespace {

constexpr size_t kWordsPerCheck = 7;  // old, lock, [version .. wts] (5)
constexpr size_t kWtsWord = offsetof(store::RecordHeader, wts) / 8;
constexpr size_t kVersionWord = offsetof(store::RecordHeader, version) / 8;

}  // namespace

Abort Engine::mvcc_lock_onesided(uint64_t* collected) {
  lane_items_.clear();
  publish_holds_ = false;
  lane_reserved_.clear();
  const uint16_t worker = co_.thread();
  const uint32_t lane = mvcc_->lane_of(worker);
  // 1. Where each record's copy and chain head are; room in our lanes.
  for (size_t i = 0; i < set_.size(); ++i) {
    const Access& a = set_[i];
    if (!a.write || a.insert || a.remove) continue;
    const dst::CopyLayout* l = mvcc_->copy_at(a.ref.addr.node, a.table, a.ref.addr.offset);
    uint64_t slot = 0;
    if (l == nullptr || !l->slot_at(a.ref.addr.offset, &slot)) {
      return blame(Abort::kNodeFailure, a.table);  // an address no copy holds
    }
    // [CAS result / link][ts][chain head][hold: word, ts][spare], then
    // the record.
    uint8_t* buf = alloc(48 + l->slot_bytes);
    if (buf == nullptr) return Abort::kNotSupported;
    LaneItem it{i, l, slot, reinterpret_cast<uint64_t*>(buf), buf + 48, {}, 0};
    // This node's record: its steps are run here (mvcc_lock_here).
    if (local_of(a).rec != nullptr) {
      dst::MvccNode::Record r;
      if (mvcc_->resolve(a.ref.addr.region, a.ref.addr.offset, a.ref.value_size, &r) &&
          r.slot == slot && r.vs != nullptr) {
        it.here = r;
      }
    }
    lane_items_.push_back(it);
  }
  // Lanes to (re)read: never read by this thread, or short of room by
  // the tail last seen (GC may have moved it since).
  batch_.clear();
  std::vector<std::pair<dst::LaneCursor*, uint64_t*>>& refresh = lane_refresh_;
  refresh.clear();
  for (const LaneItem& it : lane_items_) {
    dst::LaneCursor& c = mvcc_->cursor(worker, it.copy->id);
    uint64_t need = 0;
    for (const LaneItem& o : lane_items_) need += o.copy == it.copy;
    const bool seen =
        std::any_of(refresh.begin(), refresh.end(), [&](const auto& r) { return r.first == &c; });
    if (seen || (c.synced && c.used() + need <= it.copy->vs.lane_capacity)) continue;
    auto* hdr = reinterpret_cast<uint64_t*>(alloc(16));
    if (hdr == nullptr) return Abort::kNotSupported;
    if (it.here.rec != nullptr) {
      hdr[0] = it.here.vs->lane_header(lane, 0);
      hdr[1] = it.here.vs->lane_header(lane, 1);
    } else {
      batch_.read(it.copy->version_addr(dst::VersionStore::lane_header_offset(it.copy->vs, lane)),
                  hdr, 16);
    }
    refresh.push_back({&c, hdr});
  }
  if (!batch_.empty() && co_.run(batch_) != r2::OpStatus::kOk) {
    return blame(Abort::kNodeFailure, set_[lane_items_.front().access].table);
  }
  for (auto [c, hdr] : refresh) {
    // [tail][head bound]. A restarted thread resumes at the bound: after
    // whatever its lane holds.
    if (!c->synced) c->head = std::max({c->head, hdr[0], hdr[1]});
    c->synced = true;
    c->tail = std::max(c->tail, hdr[0]);
  }
  for (const LaneItem& it : lane_items_) {
    dst::LaneCursor& c = mvcc_->cursor(worker, it.copy->id);
    if (c.used() + 1 > it.copy->vs.lane_capacity) {
      return blame(Abort::kVersionStoreFull, set_[it.access].table);
    }
    ++c.reserved;
    lane_reserved_.push_back(&c);
  }

  // 2. Lock, then read what the lock protects.
  batch_.clear();
  size_t direct = 0;
  for (LaneItem& it : lane_items_) {
    const Access& a = set_[it.access];
    uint64_t* w = it.words;
    w[0] = ~uint64_t{0};  // "not acquired" unless the CAS ran
    const r2::RemoteAddr rec = a.ref.addr;
    const auto bytes = static_cast<uint32_t>(it.copy->slot_bytes);
    if (it.here.rec != nullptr) {
      mvcc_lock_here(it, bytes);
      ++direct;
      continue;
    }
    it.op = static_cast<uint32_t>(batch_.size());
    if (locks_ != nullptr) {
      batch_.cas(lock_word_of(rec), 0, lock_word_, &w[0], /*signaled=*/false);
      std::memset(it.image, 0, 8);
      batch_.read({rec.node, rec.region, rec.offset + 8}, it.image + 8, bytes - 8);
      batch_.read(ts_word_of(rec), &w[1], 8);
    } else {
      batch_.cas(rec, 0, lock_word_, &w[0], /*signaled=*/false);
      batch_.read(rec, it.image, bytes);
    }
    batch_.read(it.copy->version_addr(dst::VersionStore::chain_head_offset(it.copy->vs, it.slot)),
                &w[2], 8);
  }
  stats_.mvcc_steps_direct += direct;
  // The lanes' head bounds: every position this thread may push at before
  // its next lock batch — head + reserved — is below the bound in the
  // lane header before the commit's WRITEs start (this batch completes
  // first; a bound of this node's lane is stored here, before any push).
  for (const LaneItem& it : lane_items_) {
    const dst::CopyLayout* l = it.copy;
    dst::LaneCursor& c = mvcc_->cursor(worker, l->id);
    if (c.head + c.reserved <= c.published) continue;  // also skips repeats of a copy
    c.published = c.head + c.reserved + dst::LaneCursor::kBoundSlack;
    if (it.here.rec != nullptr) {
      it.here.vs->raise_lane_bound(lane, c.published);
      continue;
    }
    auto* bound = reinterpret_cast<uint64_t*>(alloc(8));
    if (bound == nullptr) return Abort::kNotSupported;
    *bound = c.published;
    batch_.write(l->version_addr(dst::VersionStore::lane_header_offset(l->vs, lane) + 8), bound, 8,
                 false);
  }
  bool ran = true;
  if (!batch_.empty()) {
    ran = co_.run(batch_) == r2::OpStatus::kOk;
  } else if (direct != 0) {
    co_.charge(1);  // a batch of local work for the yield streak
  }
  Abort failure = Abort::kNone;
  for (const LaneItem& it : lane_items_) {
    Access& a = set_[it.access];
    const uint64_t* w = it.words;
    store::RecordHeader h;
    std::memcpy(&h, it.image, sizeof h);
    if (locks_ != nullptr) h.ts = w[1];
    const bool here = it.here.rec != nullptr;
    const bool cas_ok = here || batch_.status(it.op) == r2::OpStatus::kOk;
    a.held = cas_ok && lock_acquired(w[0]);
    if (a.held) *collected = std::max({*collected, h.ts, h.wts});
    if (failure != Abort::kNone) continue;
    if ((!here && !ran) || !cas_ok) {
      failure = blame(Abort::kNodeFailure, a.table);
    } else if (!a.held) {
      failure = blame(Abort::kLockHeld, a.table);
    } else if (h.version != a.ref.version) {
      failure = blame(Abort::kVersionChanged, a.table);
    }
  }
  if (failure != Abort::kNone) return failure;
  publish_holds_ = !gts();  // with the read checks' first batch

  // 3. Records to delete: the two-sided lock (the owner reserves room for
  // the version it buries).
  return mvcc_lock_by_rpc(/*removes_only=*/true, collected);
}

void Engine::mvcc_lock_here(LaneItem& it, uint32_t bytes) {
  // The queued ops' order: the CAS, then (when it took the lock) the
  // record and its ts, then the chain head — all stable while we hold the
  // lock except ts, which readers raise (one untorn word).
  uint64_t* w = it.words;
  uint64_t seen = 0;
  __atomic_compare_exchange_n(it.here.lock, &seen, lock_word_, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  w[0] = seen;
  if (seen != 0) {
    std::memset(it.image, 0, sizeof(store::RecordHeader));
    return;  // not ours: nothing it protects is read
  }
  if (locks_ != nullptr) {
    std::memset(it.image, 0, 8);
    store::load_words(it.image + 8, it.here.rec + 8, bytes - 8);
    w[1] = __atomic_load_n(it.here.ts, __ATOMIC_SEQ_CST);
  } else {
    store::load_words(it.image, it.here.rec, bytes);
  }
  w[2] = it.here.vs->chain_head(it.here.slot);
}

Status Engine::mvcc_check_onesided(std::vector<MvccCheckResult>* out) {
  size_t n = 0;
  for (const Access& a : set_) n += !a.write;
  out->assign(n, {});
  std::vector<size_t>& reads = check_items_;  // set_ indices of the reads
  reads.clear();
  std::vector<uint64_t>& expect = check_expect_;
  expect.clear();
  for (size_t i = 0; i < set_.size(); ++i) {
    const Access& a = set_[i];
    if (a.write) continue;
    reads.push_back(i);
    // What we believe ts is: the Execute copy's (0 when it lives apart).
    uint64_t ts = 0;
    if (locks_ == nullptr && a.copy != nullptr) {
      std::memcpy(&ts, a.copy + store::kTsOffset, 8);
    }
    expect.push_back(ts);
  }
  // The checks' words are CAS and READ destinations: registered, in the
  // arena. A read set larger than its free room is checked in windows that
  // reuse it (each check is its record's own raise-then-check; the order
  // and grouping of the checks do not matter).
  const size_t mark = used_;
  for (size_t k0 = 0; k0 < n || (n == 0 && k0 == 0);) {
    used_ = mark;
    const size_t window = std::min(n - k0, arena_room(8 * kWordsPerCheck));
    if (n != 0 && window == 0) return exhausted("transaction arena full");
    uint64_t* words =
        window == 0 ? nullptr : reinterpret_cast<uint64_t*>(alloc(8 * kWordsPerCheck * window));
    if (window != 0 && words == nullptr) return exhausted("transaction arena full");
    const size_t k1 = k0 + window;
    std::vector<size_t>& pending = check_pending_;
    pending.clear();
    // This node's records: the owner's raise-then-check (dst/record_mvcc.h,
    // what rpc_mvcc_check runs at the primary), here and now.
    size_t direct = 0;
    for (size_t k = k0; k < k1; ++k) {
      const Access& a = set_[reads[k]];
      const store::SlotRef here = local_of(a);
      if (here.rec == nullptr) {
        pending.push_back(k);
        continue;
      }
      MvccCheckResult& r = (*out)[k];
      r.check = dst::raise_and_check(here, commit_ts_, a.ref.version, &r.wts);
      ++direct;
    }
    stats_.mvcc_steps_direct += direct;
    // Holder entries: with the first batch of checks; with none to run,
    // only this node's (the others' readers wait for the unlock).
    if (publish_holds_ && pending.empty()) add_holds(/*remote=*/false);
    if (pending.empty() && direct != 0) co_.charge(1);  // local work for the yield streak
    // Each round either settles a record or learns a larger ts for it; ts
    // moves only up, so few rounds do (a record whose ts keeps moving under
    // us is treated as changed: the transaction aborts and retries).
    for (int round = 0; round < 8 && !pending.empty(); ++round) {
      batch_.clear();
      if (publish_holds_) add_holds(/*remote=*/true);
      for (size_t j = 0; j < pending.size(); ++j) {
        const size_t k = pending[j];
        const Access& a = set_[reads[k]];
        uint64_t* w = words + kWordsPerCheck * (k - k0);
        const r2::RemoteAddr rec = a.ref.addr;
        w[0] = expect[k];
        if (expect[k] < commit_ts_) {
          batch_.cas(ts_word_of(rec), expect[k], commit_ts_, &w[0], /*signaled=*/false);
        }
        batch_.read(lock_word_of(rec), &w[1], 8);  // the lock FIRST (record_ops.h, add_check)
        batch_.read({rec.node, rec.region, rec.offset + store::kBodyOffset}, &w[2],
                    store::kValueOffset - store::kBodyOffset);  // version .. wts
      }
      if (co_.run(batch_) != r2::OpStatus::kOk) {
        used_ = mark;
        return unavailable("one-sided MVCC check failed");
      }
      std::vector<size_t>& again = check_again_;
      again.clear();
      for (size_t j = 0; j < pending.size(); ++j) {
        const size_t k = pending[j];
        const Access& a = set_[reads[k]];
        const uint64_t* w = words + kWordsPerCheck * (k - k0);
        if (expect[k] < commit_ts_ && w[0] != expect[k] && w[0] < commit_ts_) {
          expect[k] = w[0];  // ts moved, still below: raise from there
          again.push_back(k);
          continue;
        }
        MvccCheckResult& r = (*out)[k];
        const uint64_t version = w[2], wts = w[2 + (kWtsWord - kVersionWord)];
        if (w[1] != 0 || version != a.ref.version) {
          r.check = dst::Check::kInvalid;
        } else if (wts >= commit_ts_) {
          r.check = dst::Check::kBehind;
          r.wts = wts;
        } else {
          r.check = dst::Check::kValid;
        }
      }
      pending.swap(again);
    }
    for (size_t k : pending) (*out)[k].check = dst::Check::kInvalid;
    k0 = k1;
    if (n == 0) break;
  }
  used_ = mark;
  return Status::ok();
}

Abort Engine::claim_onesided(const std::vector<PartitionClaim>& parts) {
  // Each part's word: CAS from what this thread last saw it hold up to
  // commit_ts_; a CAS that finds another value below commit_ts_ is retried
  // from it (the word only grows, so few rounds do).
  std::vector<RangeClaim>& claims = claims_;
  claims.clear();
  for (const PartitionClaim& pc : parts) {
    const dst::CopyLayout* l =
        mvcc_->copy_of(static_cast<store::NodeId16>(pc.primary), pc.table, pc.part);
    if (l == nullptr) return blame(Abort::kNodeFailure, pc.table);  // no such copy there
    bool dup = false;
    for (const RangeClaim& c : claims) dup |= c.copy == l;
    if (dup) continue;
    auto* old = reinterpret_cast<uint64_t*>(alloc(8));
    if (old == nullptr) return Abort::kNotSupported;
    claims.push_back({l, old});
  }
  const uint16_t worker = co_.thread();
  for (int round = 0; round < 8 && !claims.empty(); ++round) {
    batch_.clear();
    for (const RangeClaim& c : claims) {
      const uint64_t guess = mvcc_->cursor(worker, c.copy->id).range_seen;
      *c.old = guess;
      if (guess >= commit_ts_) continue;  // raised past us already, as far as we know
      batch_.cas(c.copy->version_addr(dst::VersionStore::range_word_offset(c.copy->vs)), guess,
                 commit_ts_, c.old, /*signaled=*/false);
    }
    if (!batch_.empty() && co_.run(batch_) != r2::OpStatus::kOk) {
      return blame(Abort::kNodeFailure, parts.front().table);
    }
    size_t keep = 0;
    for (const RangeClaim& c : claims) {
      dst::LaneCursor& cur = mvcc_->cursor(worker, c.copy->id);
      const uint64_t guess = cur.range_seen;
      // The CAS returns the word's value: ours went in when that was the
      // guess; a value at or above commit_ts_ is a claim at least as late.
      if (guess >= commit_ts_ || *c.old == guess) {
        cur.range_seen = std::max(guess, commit_ts_);
        continue;
      }
      cur.range_seen = *c.old;
      if (*c.old < commit_ts_) claims[keep++] = c;  // moved, still below: again
    }
    claims.resize(keep);
  }
  return claims.empty() ? Abort::kNone : blame(Abort::kVersionChanged, parts.front().table);
}

void Engine::add_holds(bool remote) {
  publish_holds_ = false;
  // Our thread's clock passes what we publish, so whatever this thread
  // commits later is above it — a stale entry's promise holds for a lock
  // word that comes back (version_store.h, hold()).
  mvcc_->clock(co_.thread()).observe(commit_ts_);
  for (const LaneItem& it : lane_items_) {
    if (it.here.rec != nullptr) {
      it.here.vs->hold(it.here.slot, lock_word_, commit_ts_ - 1);  // ts, then the word
      continue;
    }
    if (!remote) continue;
    uint64_t* hold = it.words + 3;
    hold[0] = lock_word_;
    hold[1] = commit_ts_ - 1;  // we commit above it (commit_ts_ only grows)
    const uint64_t at = dst::VersionStore::holder_offset(it.copy->vs, it.slot);
    batch_.write(it.copy->version_addr(at + 8), &hold[1], 8, false);  // ts, then the word
    batch_.write(it.copy->version_addr(at), &hold[0], 8, false);
  }
}

void Engine::mvcc_push_onesided(size_t item) {
  const LaneItem& it = lane_items_[item];
  const dst::CopyLayout& l = *it.copy;
  dst::LaneCursor& c = mvcc_->cursor(co_.thread(), l.id);
  const uint32_t lane = mvcc_->lane_of(co_.thread());
  const uint64_t bytes = dst::VersionStore::slot_bytes(l.vs.value_size);
  const uint64_t pos = c.head++;  // below the bound; the reservation goes at the end
  // The record as READ under the lock becomes its version slot in place;
  // the CAS result's word holds the link.
  uint8_t* slot = it.image;
  uint64_t* link = &it.words[0];
  *link = dst::VersionStore::lane_link(lane, pos);
  dst::VersionStore::build_lane_slot(slot, *link, it.image, commit_ts_, it.words[2],
                                     l.vs.value_size);
  if (it.here.rec != nullptr) {
    // This node's lane: the same three stores, in order, before the
    // record's write-back is queued.
    it.here.vs->push_lane(lane, pos, slot, it.here.slot);
    return;
  }
  const uint64_t at = dst::VersionStore::lane_slot_offset(l.vs, lane, pos);
  // One WRITE, its position word included (version_store.h, "Position
  // words"), then the chain head: FIFO, so a reader that follows the link
  // finds the slot whole.
  batch_.write(l.version_addr(at), slot, static_cast<uint32_t>(bytes), false);
  batch_.write(l.version_addr(dst::VersionStore::chain_head_offset(l.vs, it.slot)), link, 8, false);
}

void Engine::mvcc_unreserve_lanes() {
  for (dst::LaneCursor* c : lane_reserved_) --c->reserved;
  lane_reserved_.clear();
  lane_items_.clear();
}

}  // namespace drtmx::txn
