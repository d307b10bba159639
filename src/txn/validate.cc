// The Validate phase: lock the write set, reserve the inserts, re-scan the
// scanned ranges (phantoms), then check the read set.
#include <algorithm>

#include "store/record.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {

// Inserts: one reserve RPC per primary (index_ops.h). A reserved record is
// locked with our lock word, so from here on it is `held` like a locked
// record; release() drops it again.
Abort Engine::reserve_inserts() {
  reservations_.clear();
  for (const Access& a : set_) {
    if (a.insert) reservations_.push_back({a.table, a.key, 0, Abort::kNodeFailure, {}, 0});
  }
  if (reservations_.empty()) return Abort::kNone;
  Status s = loc_.reserve(co_, reservations_, lock_word_);
  Abort failure = s.is_ok() ? Abort::kNone : Abort::kNodeFailure;
  size_t i = 0;
  for (Access& a : set_) {
    if (!a.insert) continue;
    const Reservation& r = reservations_[i++];
    if (r.result == Abort::kNone) {
      a.ref.addr = r.addr;
      a.here_known = false;            // local_of() looks the new address up
      a.ref.version = r.base_version;  // Commit writes base + 1
      a.incarnation = r.incarnation;
      a.held = true;
    } else if (failure == Abort::kNone) {
      failure = blame(r.result, a.table);
    }
  }
  return failure;
}

Abort Engine::mvcc_lock_by_rpc(bool removes_only, uint64_t* collected) {
  auto mine = [&](const Access& a) { return a.write && !a.insert && (a.remove || !removes_only); };
  refs_.clear();
  for (const Access& a : set_) {
    if (mine(a)) refs_.push_back(a.ref);
  }
  if (refs_.empty()) return Abort::kNone;
  std::vector<MvccLockResult>& lr = mvcc_locks_;
  Status s = rpc_mvcc_lock(co_, refs_, lock_word_, &lr);
  Abort failure = Abort::kNone;
  size_t i = 0;
  for (Access& a : set_) {
    if (!mine(a)) continue;
    const MvccLockResult r = s.is_ok() ? lr[i++] : MvccLockResult{};
    // After a failed call some primaries may have locked: release all
    // (the unlock clears only our own lock word).
    a.held = s.is_ok() ? r.locked : true;
    if (r.locked) *collected = std::max(*collected, r.ts);
    if (failure != Abort::kNone) continue;
    if (!s.is_ok()) {
      failure = blame(Abort::kNodeFailure, a.table);
    } else if (r.no_room) {
      failure = blame(Abort::kVersionStoreFull, a.table);
    } else if (!r.locked) {
      failure = blame(Abort::kLockHeld, a.table);
    } else if (!r.valid) {
      failure = blame(Abort::kVersionChanged, a.table);
    }
  }
  return failure;
}

Abort Engine::validate() {
  bool writes = false;
  for (const Access& a : set_) writes |= a.write;
  const LockPath lock = policy_.lock;
  const CheckPath check = writes ? policy_.validate : policy_.ro_validate;
  Abort failure = Abort::kNone;
  uint64_t collected = 0;  // MVCC: the largest timestamp met under the locks

  // 1. Lock every record to write (and check it did not change since read).
  // Before the inserts are reserved: a lock held by another or a changed
  // version — the common conflicts — then abort without the reserve and
  // remove round trips (both steps only acquire, so their order is free).
  // Siblings about to read one of them wait for this attempt to end
  // (local_holds.h) — recorded before the locks are requested: a local lock
  // is taken at once, while the batch may wait for remote ones.
  if (writes) note_holds();
  if (writes && mvcc_onesided_on()) {
    failure = mvcc_lock_onesided(&collected);
  } else if (writes && lock == LockPath::kCas) {
    constexpr uint32_t kDirectLock = UINT32_MAX;
    batch_.clear();
    slots_.clear();
    lock_ops_.clear();
    size_t direct = 0;
    for (Access& a : set_) {
      if (!a.write || a.insert) continue;
      auto* old = reinterpret_cast<uint64_t*>(alloc(8));
      auto* st = reinterpret_cast<LockState*>(alloc(sizeof(LockState)));
      if (old == nullptr || st == nullptr) {
        release(policy_.passive_ack);
        return Abort::kNotSupported;
      }
      *old = ~uint64_t{0};  // "not acquired" unless the CAS ran
      slots_.push_back({old, st});
      // This node's record: locked at once (lock_here); released, written
      // back and unlocked through the fabric like any other.
      if (const store::SlotRef here = local_of(a); here.rec != nullptr) {
        lock_here(here, lock_word_, old, st);
        lock_ops_.push_back(kDirectLock);
        ++direct;
        continue;
      }
      lock_ops_.push_back(static_cast<uint32_t>(batch_.size()));
      if (locks_ != nullptr) {
        add_lock(batch_, a.ref, locks_->lock_of(a.ref.addr), lock_word_, old, st);
      } else {
        add_lock(batch_, a.ref, lock_word_, old, st);
      }
    }
    if (!batch_.empty()) {
      (void)co_.run(batch_);
    } else if (direct != 0) {
      co_.charge(1);  // a batch of local work for the yield streak
    }
    size_t i = 0;
    for (Access& a : set_) {
      if (!a.write || a.insert) continue;
      const uint32_t op = lock_ops_[i];  // add_lock queues CAS then READ (either form)
      auto [old, st] = slots_[i++];
      const bool cas_ok = op == kDirectLock || batch_.status(op) == r2::OpStatus::kOk;
      const bool read_ok = op == kDirectLock || batch_.status(op + 1) == r2::OpStatus::kOk;
      a.held = cas_ok && lock_acquired(*old);
      if (failure != Abort::kNone) continue;
      if (!cas_ok || !read_ok) {
        failure = blame(Abort::kNodeFailure, a.table);
      } else if (!a.held) {
        failure = blame(held_by(*old, Abort::kLockHeld), a.table);
      } else if (!unchanged(*st, a.ref, lock_word_)) {
        failure = blame(Abort::kVersionChanged, a.table);
      }
    }
  } else if (writes && mvcc_on()) {
    // MVCC: lock + collect the records' timestamps + reserve room for the
    // versions Commit pushes (mvcc_ops.h).
    failure = mvcc_lock_by_rpc(/*removes_only=*/false, &collected);
  } else if (writes) {
    refs_.clear();
    for (const Access& a : set_) {
      if (a.write && !a.insert) refs_.push_back(a.ref);
    }
    Status s = refs_.empty() ? Status::ok() : rpc_lock(co_, refs_, lock_word_, &results_);
    size_t i = 0;
    for (Access& a : set_) {
      if (!a.write || a.insert) continue;
      const ItemResult r = s.is_ok() ? results_[i++] : ItemResult{};
      // After a failed call some primaries may have locked: release them
      // all — the RPC unlock clears only a lock that holds our lock word.
      a.held = s.is_ok() ? r.locked : true;
      if (failure != Abort::kNone) continue;
      if (!s.is_ok()) {
        failure = blame(Abort::kNodeFailure, a.table);
      } else if (!r.locked) {
        failure = blame(Abort::kLockHeld, a.table);
      } else if (!r.valid) {
        failure = blame(Abort::kVersionChanged, a.table);
      }
    }
  }
  if (failure != Abort::kNone) {
    release(policy_.passive_ack);
    return failure;
  }

  // 1b. Reserve the inserted keys (they are then held like locked records).
  if (Abort r = reserve_inserts(); r != Abort::kNone) {
    release(policy_.passive_ack);
    return r;
  }

  // 1c. MVCC: the commit timestamp (RW1), then the scanned ranges are
  // claimed at it before their phantom check.
  const bool ts_steps = writes && mvcc_on() && !gts();
  if (writes && gts()) {
    // GTS: TS from the oracle now — with the write set locked, before the
    // read checks. A writer of a record we read that gets a smaller TS
    // locked it before taking its TS, so before our check: we see its lock
    // or its version and abort. A reader of a record we write that gets a
    // larger TS checks after our lock: it aborts. So TS order is the
    // serialization order, and a snapshot at a StableTS sees a prefix of it.
    if (Abort r = take_gts(); r != Abort::kNone) {
      release(policy_.passive_ack);
      return r;
    }
  }
  if (ts_steps) {
    for (const Access& a : set_) {
      if (a.insert && a.held) {
        for (const Reservation& r : reservations_) {
          if (r.table == a.table && r.key == a.key) collected = std::max(collected, r.range_ts);
        }
      }
    }
    compute_commit_ts(collected);
    if (Abort r = claim_scans(); r != Abort::kNone) {
      release(policy_.passive_ack);
      return r;
    }
  }

  if (fault_ == TestFault::kSkipReadValidation) return Abort::kNone;  // tests: broken on purpose

  // 2. Phantoms: the scanned ranges, before the read checks (see
  // validate_scans for why this order).
  if (Abort r = validate_scans(check); r != Abort::kNone) return r;

  // 3. Check every record only read: unchanged and unlocked. Not "or
  // locked by us": we lock only the write set, and a lock with our lock
  // word on a record we only read is left by an earlier transaction of this
  // coroutine whose release or delete is still in flight (passive ACK) —
  // that record is about to change.
  size_t reads = 0;
  for (const Access& a : set_) reads += !a.write;
  if (reads == 0) return Abort::kNone;
  if (ts_steps) {
    // Raise each read record's ts to the commit timestamp, then check it
    // (RW2 for reads; dst/record_mvcc.h for why in this order).
    refs_.clear();
    for (const Access& a : set_) {
      if (!a.write) refs_.push_back(a.ref);
    }
    // A read whose version's wts Execute did not see (rows of scans and
    // RPC reads carry none) may be at or above the commit timestamp: then
    // the timestamp goes above it and every read is checked again (raises
    // with the lower one are harmless). Bounded: each round raises TS past
    // every wts it met.
    std::vector<MvccCheckResult>& res = mvcc_checks_;
    for (int round = 0; round < 4; ++round) {
      Status s = mvcc_onesided_on() ? mvcc_check_onesided(&res)
                                    : rpc_mvcc_check(co_, refs_, commit_ts_, &res);
      if (!s.is_ok()) {
        failure = Abort::kNodeFailure;
        break;
      }
      uint64_t behind = 0;
      size_t i = 0;
      for (const Access& a : set_) {
        if (a.write) continue;
        const MvccCheckResult& r = res[i++];
        if (r.check == dst::Check::kInvalid) failure = blame(Abort::kVersionChanged, a.table);
        if (r.check == dst::Check::kBehind) behind = std::max(behind, r.wts);
      }
      if (failure != Abort::kNone || behind == 0) break;
      if (!scans_.empty()) {
        // The ranges were claimed (and re-scanned) at the lower timestamp;
        // claiming again would have to precede a new re-scan. Rare (a
        // scanned row written above our clock): abort and retry.
        failure = blame(Abort::kVersionChanged, scans_.front().table);
        break;
      }
      commit_ts_ = behind + 1;
      if (round == 3) failure = blame(Abort::kVersionChanged, set_.front().table);
    }
  } else if (check == CheckPath::kRead) {
    // The checks READ into lock states, which must be registered: in the
    // arena. A read set larger than its free room (a scan of thousands of
    // rows) is checked in windows that reuse the same room, one round
    // trip each. Every check still runs after the locks are taken and the
    // ranges re-scanned, so each read is current at that instant as before.
    const size_t mark = used_;
    std::vector<LockState*>& states = states_;
    size_t next = 0;  // the first access of the next window
    while (failure == Abort::kNone && next < set_.size()) {
      used_ = mark;
      size_t want = 0;
      for (size_t i = next; i < set_.size(); ++i) want += !set_[i].write;
      if (want == 0) break;
      const size_t window = std::min(want, arena_room(sizeof(LockState)));
      auto* room =
          window == 0 ? nullptr : reinterpret_cast<LockState*>(alloc(window * sizeof(LockState)));
      if (room == nullptr) {
        used_ = mark;
        release(policy_.passive_ack);
        return Abort::kNotSupported;  // not even one check fits
      }
      batch_.clear();
      states.clear();
      const size_t first = next;
      size_t direct = 0;  // read checks of this node's records, loaded here
      for (; next < set_.size() && states.size() < window; ++next) {
        const Access& a = set_[next];
        if (a.write) continue;
        LockState* st = room + states.size();
        states.push_back(st);
        // This node's record: checked at once (check_here).
        if (const store::SlotRef here = local_of(a); here.rec != nullptr) {
          check_here(here, st);
          ++direct;
          continue;
        }
        if (locks_ != nullptr) {
          add_check(batch_, a.ref, locks_->lock_of(a.ref.addr), st);  // two READs, lock first
        } else {
          add_check(batch_, a.ref, st);
        }
      }
      // Done without suspending: a batch of local work for the yield streak.
      if (batch_.empty() && direct != 0) co_.charge(1);
      if (!batch_.empty() && co_.run(batch_) != r2::OpStatus::kOk) {
        failure = Abort::kNodeFailure;
        break;
      }
      size_t i = 0;
      for (size_t x = first; x < next; ++x) {
        const Access& a = set_[x];
        if (a.write) continue;
        const LockState& st = *states[i++];
        if (!unchanged(st, a.ref, /*my_lock=*/0)) {
          failure = blame(held_by(st.lock, Abort::kVersionChanged), a.table);
        }
      }
    }
    used_ = mark;
  } else {
    refs_.clear();
    for (const Access& a : set_) {
      if (!a.write) refs_.push_back(a.ref);
    }
    Status s = rpc_check(co_, refs_, /*my_lock=*/0, &results_);
    if (!s.is_ok()) {
      failure = Abort::kNodeFailure;
    } else {
      size_t i = 0;
      for (const Access& a : set_) {
        if (a.write) continue;
        if (!results_[i++].valid) failure = blame(Abort::kVersionChanged, a.table);
      }
    }
  }
  if (failure != Abort::kNone) release(policy_.passive_ack);
  return failure;
}

// Phantoms: scan every scanned range again, after the write set is locked
// and the inserts reserved. The keys must be those seen in Execute, apart
// from this transaction's own reservations. A key another transaction
// inserted (committed, or reserved and locked: it may commit before us) or
// deleted since makes the range differ: kVersionChanged.
//
// Order: this re-scan runs after every Execute read and before the read
// checks. Then its end is one instant at which every read is current: the
// range holds exactly the keys seen (a key inserted and deleted again
// between Execute and the re-scan is invisible to a key-set comparison,
// but whatever it changed elsewhere — a counter — is checked after this
// instant and fails), and each record read is unchanged from its read to
// its check, hence at that instant. Checking records first and re-scanning
// after would leave no such instant.
Abort Engine::validate_scans(CheckPath check) {
  const ReadPath path = check == CheckPath::kRpc ? ReadPath::kRpc : ReadPath::kOneSidedCached;
  for (const ScanSet& sc : scans_) {
    size_t mine = 0;
    for (const Access& a : set_) {
      mine += a.insert && a.table == sc.table && a.key >= sc.from && a.key <= sc.to;
    }
    // One row more than expected is enough to see a difference.
    // The index's keys suffice: the rows' versions are the read checks'
    // (step 3), so no record is read again here.
    Abort r =
        loc_.scan_keys(co_, path, sc.table, sc.from, sc.to, sc.keys.size() + mine + 1, &scan_keys_);
    if (r == Abort::kNone) {
      size_t j = 0;
      for (Key k : scan_keys_) {
        if (j < sc.keys.size() && sc.keys[j] == k) {
          ++j;
          continue;
        }
        const Access* a = find(sc.table, k);
        if (a != nullptr && a->insert) continue;  // our own reservation
        r = Abort::kVersionChanged;               // inserted by another
        break;
      }
      if (j != sc.keys.size()) r = Abort::kVersionChanged;  // deleted by another
    }
    if (r != Abort::kNone) {
      release(policy_.passive_ack);
      return blame(r, sc.table);
    }
  }
  return Abort::kNone;
}

void Engine::release(bool passive) {
  // Reservations go: the primary unpublishes and frees them (a reader may
  // hold the address; it finds kDeleted with version 1).
  held_.clear();
  for (const Access& a : set_) {
    if (a.held && a.insert) held_.push_back({a.table, a.key, a.ref.addr, a.incarnation});
  }
  if (!held_.empty()) (void)loc_.remove_held(co_, held_, lock_word_, passive);
  size_t locks = 0;
  for (const Access& a : set_) locks += a.held && !a.insert;
  auto* olds = reinterpret_cast<uint64_t*>(alloc(8 * (locks + 1)));
  // Two-sided MVCC releases every lock here, with its version-store room;
  // one-sided MVCC only its deletes (the lane room goes at the end).
  const bool mvcc_rpc = mvcc_on() && !mvcc_onesided_on();
  if (mvcc_on()) {
    refs_.clear();
    for (Access& a : set_) {
      if (a.held && !a.insert && (a.remove || mvcc_rpc)) refs_.push_back(a.ref);
    }
    if (!refs_.empty()) (void)rpc_mvcc_unlock(co_, refs_, lock_word_, passive);
  }
  if (mvcc_rpc) {
    // Nothing else is locked.
  } else if (policy_.lock == LockPath::kCas && olds != nullptr) {
    // CAS, not WRITE 0: a lock taken on a slot whose record was deleted
    // meanwhile may have been overwritten by the slot's next tenant
    // (record_ops.h, add_release).
    batch_.clear();
    size_t i = 0;
    for (Access& a : set_) {
      if (!a.held || a.insert || (a.remove && mvcc_on())) continue;
      if (locks_ != nullptr) {
        add_release(batch_, locks_->lock_of(a.ref.addr), lock_word_, &olds[i++], passive);
      } else {
        add_release(batch_, a.ref, lock_word_, &olds[i++], passive);
      }
    }
    if (!batch_.empty()) (void)co_.run(batch_);
  } else {
    refs_.clear();
    for (Access& a : set_) {
      if (a.held && !a.insert) refs_.push_back(a.ref);
    }
    if (!refs_.empty()) (void)rpc_unlock(co_, refs_, lock_word_, passive);
  }
  if (mvcc_on()) mvcc_unreserve_lanes();
  for (Access& a : set_) a.held = false;
}

}  // namespace drtmx::txn
