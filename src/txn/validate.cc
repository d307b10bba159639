// The Validate phase: lock the write set, then check the read set.
#include "store/record.h"
#include "txn/engine.h"

namespace drtmx::txn {

Abort Engine::validate() {
  bool writes = false;
  for (const Access& a : set_) writes |= a.write;
  const LockPath lock = policy_.lock;
  const CheckPath check = writes ? policy_.validate : policy_.ro_validate;
  Abort failure = Abort::kNone;

  // 1. Lock every record to write (and check it did not change since read).
  if (writes && lock == LockPath::kCas) {
    batch_.clear();
    slots_.clear();
    for (Access& a : set_) {
      if (!a.write) continue;
      auto* old = reinterpret_cast<uint64_t*>(alloc(8));
      auto* st = reinterpret_cast<LockState*>(alloc(sizeof(LockState)));
      if (old == nullptr || st == nullptr) return Abort::kNotSupported;
      *old = ~uint64_t{0};  // "not acquired" unless the CAS ran
      add_lock(batch_, a.ref, lock_word_, old, st);
      slots_.push_back({old, st});
    }
    (void)co_.run(batch_);
    size_t i = 0;
    for (Access& a : set_) {
      if (!a.write) continue;
      const size_t op = 2 * i;  // add_lock queues CAS then READ
      auto [old, st] = slots_[i++];
      const bool cas_ok = batch_.status(op) == r2::OpStatus::kOk;
      const bool read_ok = batch_.status(op + 1) == r2::OpStatus::kOk;
      a.held = cas_ok && lock_acquired(*old);
      if (failure != Abort::kNone) continue;
      if (!cas_ok || !read_ok) {
        failure = Abort::kNodeFailure;
      } else if (!a.held) {
        failure = Abort::kLockHeld;
      } else if (!unchanged(*st, a.ref, lock_word_)) {
        failure = Abort::kVersionChanged;
      }
    }
  } else if (writes) {
    refs_.clear();
    for (const Access& a : set_) {
      if (a.write) refs_.push_back(a.ref);
    }
    Status s = rpc_lock(co_, refs_, lock_word_, &results_);
    size_t i = 0;
    for (Access& a : set_) {
      if (!a.write) continue;
      const ItemResult r = s.is_ok() ? results_[i++] : ItemResult{};
      // After a failed call some primaries may have locked: release them
      // all — the RPC unlock clears only a lock that holds our lock word.
      a.held = s.is_ok() ? r.locked : true;
      if (failure != Abort::kNone) continue;
      if (!s.is_ok()) {
        failure = Abort::kNodeFailure;
      } else if (!r.locked) {
        failure = Abort::kLockHeld;
      } else if (!r.valid) {
        failure = Abort::kVersionChanged;
      }
    }
  }
  if (failure != Abort::kNone) {
    release(policy_.passive_ack);
    return failure;
  }

  // 2. Check every record only read: unchanged and not locked by others.
  size_t reads = 0;
  for (const Access& a : set_) reads += !a.write;
  if (reads == 0) return Abort::kNone;
  if (check == CheckPath::kRead) {
    batch_.clear();
    std::vector<LockState*>& states = states_;
    states.clear();
    for (const Access& a : set_) {
      if (a.write) continue;
      auto* st = reinterpret_cast<LockState*>(alloc(sizeof(LockState)));
      if (st == nullptr) {
        release(policy_.passive_ack);
        return Abort::kNotSupported;
      }
      add_check(batch_, a.ref, st);
      states.push_back(st);
    }
    if (co_.run(batch_) != r2::OpStatus::kOk) {
      failure = Abort::kNodeFailure;
    } else {
      size_t i = 0;
      for (const Access& a : set_) {
        if (a.write) continue;
        if (!unchanged(*states[i++], a.ref, lock_word_)) failure = Abort::kVersionChanged;
      }
    }
  } else {
    refs_.clear();
    for (const Access& a : set_) {
      if (!a.write) refs_.push_back(a.ref);
    }
    Status s = rpc_check(co_, refs_, lock_word_, &results_);
    if (!s.is_ok()) {
      failure = Abort::kNodeFailure;
    } else {
      for (const ItemResult& r : results_) {
        if (!r.valid) failure = Abort::kVersionChanged;
      }
    }
  }
  if (failure != Abort::kNone) release(policy_.passive_ack);
  return failure;
}

void Engine::release(bool passive) {
  auto* zero = reinterpret_cast<uint64_t*>(alloc(8));
  if (policy_.lock == LockPath::kCas && zero != nullptr) {
    *zero = 0;
    batch_.clear();
    for (Access& a : set_) {
      if (a.held) add_unlock(batch_, a.ref, zero, passive);
    }
    (void)co_.run(batch_);
  } else {
    refs_.clear();
    for (Access& a : set_) {
      if (a.held) refs_.push_back(a.ref);
    }
    if (!refs_.empty()) (void)rpc_unlock(co_, refs_, lock_word_, passive);
  }
  for (Access& a : set_) a.held = false;
}

}  // namespace drtmx::txn
