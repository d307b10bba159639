// The per-record steps of MVCC under DST (thesis §5.2, Table 6-1), as the
// primary's CPU runs them on a record in its local memory (store/record.h)
// — what the two-sided Validate, Commit and DEP_READ requests do per item.
// Pure functions of the record's words and its partition's VersionStore:
// the RPC wrappers (txn) resolve addresses and batch items.
//
// A record is a store::SlotRef: its slot and its lock and ts words — the
// slot's own, or apart in DRAM on a durable node (store/record.h, H8). The
// orders below are between those two words and the slot's version and
// wts, wherever they live: each access is a sequentially consistent atomic.
//
// Ordering (why these are correct; dst/README.md has the protocol):
//   lock_and_collect   CAS lock, THEN load ts          (store; load)
//   raise_and_check    raise ts, THEN load lock        (store; load)
// Both sides store then load with sequentially consistent atomics, so a
// reader's check and a writer's lock cannot both miss each other: either
// the check sees the lock (the reader's transaction aborts) or the writer's
// collected ts includes the reader's commit timestamp (the writer commits
// above it). DEP_READ (read_at) is a raise followed by a lock check too,
// against the writer's lock then collect.
#pragma once

#include <cstdint>

#include "dst/timestamp.h"
#include "dst/version_store.h"
#include "store/record_io.h"

namespace drtmx::dst {

struct LockCollect {
  bool locked = false;   // we hold the lock now
  bool valid = false;    // locked and the version is the one expected
  bool no_room = false;  // the version store is full: not locked
  Timestamp ts = 0;      // max(ts, wts) after the lock (RW1)
};

// Validate, write set: locks `rec` with `lock_word`, checks its version,
// reserves room for the version the commit will push (a record at version 0
// — a reservation of an insert — needs none), raises ts to `now` (the
// primary's clock) and collects its timestamps, and publishes the
// collected value with the holder (VersionStore::hold at `slot`): the
// holder will commit above it. Without room the lock is released again and
// no_room is set.
LockCollect lock_and_collect(const store::SlotRef& rec, uint64_t lock_word,
                             uint64_t expected_version, VersionStore* vs, uint64_t slot,
                             Timestamp now);

// Validate, read set: raises ts to `commit_ts` (RW2 for reads), then valid
// iff unlocked, still at `expected_version`, and that version's wts is
// below commit_ts (RW1 for a read whose wts the coordinator did not see:
// kBehind, with *wts, so it can choose a larger commit timestamp). A raise by a transaction
// that then aborts is harmless (it only pushes later timestamps up).
enum class Check : uint8_t {
  kValid,    // unlocked, unchanged, its version written below commit_ts
  kInvalid,  // locked or changed: abort
  kBehind,   // unlocked and unchanged, but its version's wts >= commit_ts
             // (the coordinator did not see that wts): check again above it
};
Check raise_and_check(const store::SlotRef& rec, Timestamp commit_ts, uint64_t expected_version,
                      Timestamp* wts);

// Commit, one record we hold locked: pushes the version in place (unless
// it is an insert's reservation, version 0) into `vs` superseded at
// `commit_ts` (using the reservation lock_and_collect made), writes
// `image` (a full slot image: header with the new version and wts =
// commit_ts, sealed, and the value) except the lock and ts words, raises
// ts to commit_ts, and unlocks.
void install(const store::SlotRef& rec, const uint8_t* image, uint32_t value_size,
             Timestamp commit_ts, VersionStore* vs, uint64_t slot);

// Abort: releases our lock (CAS lock_word -> 0: only ours) and the room
// lock_and_collect reserved. False when the lock was not ours.
bool release(const store::SlotRef& rec, uint64_t lock_word, VersionStore* vs, uint64_t slot);

// DEP_READ of one record at read timestamp `read_ts`.
enum class ReadAt : uint8_t {
  kValue,      // *info and value_out: the newest version with wts <= read_ts
  kAbsent,     // the record (this incarnation) did not exist at read_ts
  kLocked,     // a writer holds it (or is writing it): ask again later
  kMoved,      // not the expected record any more (deleted, slot reused):
               // look the key up again (index, then the graveyard)
  kReclaimed,  // the version needed was garbage-collected (a read below
               // the low-water mark: a bug, reported as an error)
};
// How a snapshot reads.
//   kDst   raise ts to read_ts first (never lower it), then wait (kLocked)
//          while a writer holds the lock — unless the holder published a
//          collected timestamp >= read_ts (it commits above read_ts:
//          nothing it writes is visible here, so the read goes past its
//          lock). The primary raised ts to its clock when the holder
//          locked, so a holder that locked after the snapshot began is
//          never waited for.
//   kGts   at a stable timestamp: raise nothing and read past a lock (its
//          holder commits above every stable timestamp).
//   kDstSkipRaiseUnsafe  kDst without the raise — UNSAFE, for the test
//          that shows the read-only anomaly DST's raise prevents.
// All wait for a torn image.
enum class SnapshotMode : uint8_t { kDst, kGts, kDstSkipRaiseUnsafe };
// The record is loaded into `image` (record_slot_size(value_size) bytes,
// 8-aligned); on kValue the value read is at image + store::kValueOffset
// (the header is the version in place's, even when the value is an older
// version's: *info says which), so a caller that keeps the slot image or
// hands the value on needs no second copy. `quiet`: the record's node
// allows quiet copies (store/record_io.h; StoreNode::quiet_copies()), so a
// copy that raced no writer needs no seal check. `part` (quiet copies
// only): the caller needs only those value words — a quiet copy loads just
// them and the header; on kValue only they (and the header) are meant to
// be read from `image`, though an older version or a copy that had to be
// verified fills it whole.
ReadAt read_at(const store::SlotRef& rec, uint64_t key, uint32_t incarnation, uint32_t value_size,
               Timestamp read_ts, SnapshotMode mode, const VersionStore* vs, uint64_t slot,
               uint8_t* image, VersionInfo* info, bool quiet = false, store::SlotPart part = {});

}  // namespace drtmx::dst
