#include "dst/record_mvcc.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "store/record.h"
#include "store/record_io.h"
#include "store/word_copy.h"

namespace drtmx::dst {

namespace {

uint64_t load_seq(const uint8_t* rec, size_t off) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(rec + off), __ATOMIC_SEQ_CST);
}
uint64_t load_seq(const uint64_t* w) {
  return __atomic_load_n(w, __ATOMIC_SEQ_CST);
}
constexpr size_t kVersionOff = offsetof(store::RecordHeader, version);
constexpr size_t kWtsOff = offsetof(store::RecordHeader, wts);

}  // namespace

LockCollect lock_and_collect(const store::SlotRef& rec, uint64_t lock_word,
                             uint64_t expected_version, VersionStore* vs, uint64_t slot,
                             Timestamp now) {
  LockCollect r;
  uint64_t expected = 0;
  if (!__atomic_compare_exchange_n(rec.lock, &expected, lock_word, false, __ATOMIC_SEQ_CST,
                                   __ATOMIC_SEQ_CST)) {
    return r;
  }
  const uint64_t version = load_seq(rec.rec, kVersionOff);
  if (version != 0 && vs != nullptr && !vs->reserve(1)) {
    __atomic_store_n(rec.lock, 0, __ATOMIC_RELEASE);
    r.no_room = true;
    return r;
  }
  r.locked = true;
  r.valid = version == expected_version;
  store::atomic_max_ts(rec.ts, now);
  const uint64_t ts = load_seq(rec.ts), wts = load_seq(rec.rec, kWtsOff);
  r.ts = ts > wts ? ts : wts;
  if (vs != nullptr) vs->hold(slot, lock_word, r.ts);
  return r;
}

Check raise_and_check(const store::SlotRef& rec, Timestamp commit_ts, uint64_t expected_version,
                      Timestamp* wts) {
  store::atomic_max_ts(rec.ts, commit_ts);
  // The lock word, then the version (record_ops.h, add_check: the order
  // that makes two loads one instant of the check).
  if (load_seq(rec.lock) != 0 || load_seq(rec.rec, kVersionOff) != expected_version) {
    return Check::kInvalid;
  }
  *wts = load_seq(rec.rec, kWtsOff);
  return *wts < commit_ts ? Check::kValid : Check::kBehind;
}

void install(const store::SlotRef& rec, const uint8_t* image, uint32_t value_size,
             Timestamp commit_ts, VersionStore* vs, uint64_t slot) {
  const size_t bytes = store::record_slot_size(value_size);
  // We hold the lock: the record in place is stable (only ts moves).
  if (vs != nullptr && load_seq(rec.rec, kVersionOff) != 0) {
    thread_local std::vector<uint64_t> old;
    old.resize(bytes / 8);
    store::load_words(old.data(), rec.rec, bytes);
    vs->push(slot, reinterpret_cast<const uint8_t*>(old.data()), commit_ts, /*reserved=*/true);
  }
  // The push is visible before any word of the new version: a GTS reader
  // that reads past our lock and meets the new wts finds the old version
  // in the chain (its acquire fence in read_at pairs with this one).
  std::atomic_thread_fence(std::memory_order_release);
  store::store_words(rec.rec + store::kBodyOffset, image + store::kBodyOffset,
                     bytes - store::kBodyOffset);
  store::atomic_max_ts(rec.ts, commit_ts);
  if (vs != nullptr) vs->unhold(slot);
  // The data and ts are in place before the lock is free.
  __atomic_store_n(rec.lock, 0, __ATOMIC_RELEASE);
}

bool release(const store::SlotRef& rec, uint64_t lock_word, VersionStore* vs, uint64_t slot) {
  // Unpublished while the lock is still ours (after the unlock a new
  // holder may publish; clearing that would only make readers wait).
  if (vs != nullptr && load_seq(rec.lock) == lock_word) vs->unhold(slot);
  uint64_t expected = lock_word;
  if (!__atomic_compare_exchange_n(rec.lock, &expected, 0, false, __ATOMIC_RELEASE,
                                   __ATOMIC_RELAXED)) {
    return false;
  }
  if (vs != nullptr && load_seq(rec.rec, kVersionOff) != 0) vs->unreserve(1);
  return true;
}

ReadAt read_at(const store::SlotRef& rec, uint64_t key, uint32_t incarnation, uint32_t value_size,
               Timestamp read_ts, SnapshotMode mode, const VersionStore* vs, uint64_t slot,
               uint8_t* image, VersionInfo* info, bool quiet, store::SlotPart part) {
  if (mode == SnapshotMode::kDst) store::atomic_max_ts(rec.ts, read_ts);
  if (mode != SnapshotMode::kGts) {
    // Wait only for a writer that holds the lock (thesis Fig 5-9, line 3)
    // and may commit at or below read_ts: one that collected ts before our
    // raise. A holder whose published collected ts is >= read_ts commits
    // above it (record_mvcc.h).
    const uint64_t holder = load_seq(rec.lock);
    if (holder != 0 && (vs == nullptr || vs->holder_ts(slot, holder) < read_ts)) {
      return ReadAt::kLocked;
    }
  }
  // GTS: a lock holder's timestamp is above a stable read_ts (dst/oracle.h),
  // so the versions <= read_ts are all in place — read past the lock; only
  // a torn image (the holder writing now) waits.
  const size_t bytes = store::record_slot_size(value_size);
  if (quiet && rec.lock == reinterpret_cast<uint64_t*>(rec.rec)) {
    quiet = store::copy_quiet(image, rec.rec, bytes, part);
    // A part that is not quiet is verified whole: the seal covers it all.
    if (!quiet && !part.whole()) store::load_words(image, rec.rec, bytes);
  } else {
    quiet = false;
    store::load_words(image, rec.rec, bytes);
  }
  switch (quiet ? store::verify_quiet(image, key, incarnation)
                : store::verify(image, value_size, key, incarnation)) {
    case store::RecordCheck::kOk:
      break;
    case store::RecordCheck::kTorn:
      return ReadAt::kLocked;  // a writer is mid-write: it holds the lock
    default:
      return ReadAt::kMoved;
  }
  store::RecordHeader h;
  std::memcpy(&h, image, sizeof h);
  if (h.version == 0) return ReadAt::kLocked;  // an insert's reservation
  if (h.wts <= read_ts) {
    *info = {h.wts, h.version, h.incarnation, false};
    return ReadAt::kValue;
  }
  if (vs == nullptr) return ReadAt::kAbsent;
  std::atomic_thread_fence(std::memory_order_acquire);  // see install()
  switch (vs->find(slot, read_ts, image + store::kValueOffset, info)) {
    case Found::kVersion:
      return ReadAt::kValue;
    case Found::kNone:
      return ReadAt::kAbsent;
    case Found::kReclaimed:
      break;
  }
  return ReadAt::kReclaimed;
}

}  // namespace drtmx::dst
