// VersionStore: the older versions of the records of one partition copy
// (primary or backup) under MVCC (thesis chapter 5; docs/architecture.md). The
// newest version of a record stays in place in its record slot
// (store/record.h, with its commit timestamp `wts`); every commit that
// replaces it first pushes the replaced version here, linked in front of
// the record's chain, so a record's versions are newest first:
//
//   record slot (in place, wts W3)  ->  [wts W2 | superseded at W3]
//                                   ->  [wts W1 | superseded at W2] -> none
//
// Memory: a ring of `capacity` fixed-size version slots in an area of a
// registered region (bytes_for), filled at `head`, reclaimed at `tail`.
// A version superseded at timestamp S can be read only by snapshots with
// read timestamp in [wts, S): once the cluster's low-water mark of active
// and future read timestamps (floor.h) reaches S, nobody can read it, and
// gc(lwm) frees ring slots from the tail while their `superseded_at` <=
// lwm. The ring is filled in commit order, which follows timestamp order
// up to clock skew, so the tail advances steadily; a slot whose
// superseded_at is still above the lwm holds back the ones behind it (the
// bound is then the capacity). Chain heads live beside the ring, one word
// per record slot of the partition's heap's address space (reserved: a
// page is memory once a slot on it has a chain; with lanes, in the
// growable version region, backed as the heap grows: MvccNode).
//
// Bounded: pushes never exceed `capacity`. A primary reserves room when a
// transaction locks a record it will write (reserve(); an abort gives it
// back with unreserve()), so a commit — which cannot fail once logged —
// always has a slot; a lock that finds no room aborts the transaction
// (txn::Abort::kVersionStoreFull) and it retries once GC freed slots. A
// backup that finds no room defers the redo record (its applier retries).
//
// Deleted keys: a delete pushes the record's last version (superseded at
// the delete's timestamp) and moves the record's chain into the graveyard,
// a map key -> chains of deleted incarnations, newest first; snapshots
// older than the delete find the key there (find_buried, buried_in), and
// GC forgets an entry once its newest version is reclaimed.
//
// Readers (snapshot reads, any owner thread) take no lock. They never
// touch a reclaimed slot: a reader with read timestamp R >= lwm walks a
// chain only past versions with wts > R, i.e. superseded at > R >= lwm, and
// stops at the first version with wts <= R, whose successor's wts (its
// superseded_at) is > R. Each slot records its ring position, written
// last, so a reader that would meet a reused slot anyway (a snapshot read
// below the lwm: a bug) detects it (kReclaimed) instead of returning
// another record's bytes.
//
// Thread safety: push/reserve/unreserve/bury/gc/stats and the graveyard
// under one lock per store, a SpinLock (base/spin_lock.h): its sections are
// a few dozen stores, and nearly never contended (a partition copy's
// pushes come from its node's worker threads, usually one); find/detach
// without it, from any thread.
//
// Lanes: versions pushed by coordinators with one-sided WRITEs (`lanes` >
// 0; txn/mvcc_onesided.cc, on fabrics whose atomics are coherent with the
// CPU's). Beside the owner's ring the area then holds, in this order:
//
//   lane headers   lanes x 64 B: [tail][head bound] — tail written by gc()
//                  (the owner), the bound by the lane's coordinator: above
//                  every position it wrote or is about to write (raised
//                  ahead of its pushes, a few dozen at a time)
//   lane rings     lanes x lane_capacity slots
//   chain heads    record_slots x 8 B (in the area, not calloc'ed: remote
//                  coordinators READ and WRITE them)
//   holders        record_slots x 16 B [lock word][collected ts] (hold()):
//                  a one-sided lock holder WRITEs the ts, then the word,
//                  after its CAS succeeded (with its read checks), and
//                  leaves them: an entry counts only while the record's
//                  lock word is the entry's (see hold())
//   range word     64 B, its first word the partition copy's range
//                  timestamp (dst/mvcc_node.h): coordinators raise it
//                  with CAS when they claim a scanned range
//
// Each lane belongs to one coordinator thread of the cluster (lane =
// node x workers + worker), which alone writes it, so a push needs no
// remote atomic: the coordinator knows its lane's head, reserves room
// against the tail it last READ (its own bookkeeping; a stale tail only
// under-estimates the room), and under the record's lock READs the chain
// head (with the lock), then WRITEs, in one doorbell on one channel (FIFO):
// the slot, the record's chain head, then the record and its unlock.
//
// Position words: a slot's first word is position_word(link, superseded_at)
// — its link bound to the timestamp it was superseded at — not the bare
// link. A lane slot arrives in ONE WRITE whose words may land in any order
// (an RNIC orders nothing inside a WRITE; on shm it is a word copy), so
// gc() may meet the new position word beside the previous lap's
// superseded_at, or the old position beside the new timestamp. Either pair
// fails the check (up to a 2^-64 chance), so gc() stops at the slot as
// "still being written"; a pair that passes is the write's own, and
// superseded_at is all gc() decides by. Readers reach a slot through a link
// stored after it (FIFO) and check the pair before and after their copy.
// gc() frees a lane's slots from its tail while their pairs match and they
// were superseded at or below the low-water mark — a slot still being
// written stops it. Links name the ring: lane_link(); the owner's ring
// keeps links = position + 1.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "base/spin_lock.h"
#include "base/status.h"
#include "dst/timestamp.h"
#include "store/record.h"

namespace drtmx::dst {

struct VersionStoreOptions {
  std::string name;            // "stock/p2", for errors
  uint32_t value_size = 0;     // the table's value size
  uint64_t record_slots = 0;   // chain heads: the heap's slot count
  uint64_t capacity = 0;       // versions the ring holds (> 0)
  uint32_t lanes = 0;          // one-sided coordinators' lanes (see above); 0: none
  uint64_t lane_capacity = 0;  // versions each lane holds (> 0 with lanes)
};

struct VersionStoreStats {
  uint64_t capacity = 0;
  uint64_t in_use = 0;     // pushed and not reclaimed
  uint64_t reserved = 0;   // promised to locked writers
  uint64_t peak = 0;       // most in_use + reserved seen
  uint64_t pushed = 0;     // versions pushed
  uint64_t reclaimed = 0;  // versions freed by gc
  uint64_t gc_runs = 0;    // gc() calls that freed something
  uint64_t full = 0;       // reserve()/push() refused for lack of room
  uint64_t buried = 0;     // deleted keys in the graveyard now
  uint64_t bytes = 0;      // ring bytes
};

// What find() returns of a version.
struct VersionInfo {
  Timestamp wts = 0;
  uint64_t version = 0;
  uint32_t incarnation = 0;
  bool deleted = false;  // the key did not exist from wts on (graveyard)
};

enum class Found : uint8_t {
  kVersion,    // a version with wts <= the read timestamp
  kNone,       // every version of the chain is newer (or the chain is empty)
  kReclaimed,  // the chain reached a reused slot (read below the lwm)
};

class VersionStore {
 public:
  static uint64_t slot_bytes(uint32_t value_size);
  static uint64_t bytes_for(uint64_t capacity, uint32_t value_size) {
    return capacity * slot_bytes(value_size);
  }
  // The area a store with lanes needs (bytes_for without lanes).
  static uint64_t area_bytes(const VersionStoreOptions& o);
  // Offsets in the area (remote coordinators compute them from the options).
  static uint64_t lane_header_offset(const VersionStoreOptions& o, uint32_t lane);
  static uint64_t lane_slot_offset(const VersionStoreOptions& o, uint32_t lane, uint64_t pos);
  static uint64_t chain_head_offset(const VersionStoreOptions& o, uint64_t record_slot);
  static uint64_t holder_offset(const VersionStoreOptions& o, uint64_t record_slot);
  static uint64_t range_word_offset(const VersionStoreOptions& o);
  // The link of position `pos` of lane `lane` (never 0).
  static uint64_t lane_link(uint32_t lane, uint64_t pos) {
    return (uint64_t{lane + 1u} << kLinkRingShift) | (pos + 1);
  }
  // The offset of a ring slot's position word (its first word).
  static constexpr uint64_t kPositionOffset = 0;
  // The position word of a slot that holds the version at `link`,
  // superseded at `superseded_at` (see "Position words" above); 0 only by
  // a 2^-64 chance, so a zeroed slot does not match.
  static uint64_t position_word(uint64_t link, Timestamp superseded_at);
  // Builds, at `out` (slot_bytes(value_size) bytes), the slot at lane link
  // `link` of the version `rec` (a record image: header + value)
  // superseded at `superseded_at`, whose next older version is `older` (the
  // chain head READ under the lock), its position word included: the
  // coordinator WRITEs the whole slot at once. `out` may be
  // `rec` itself (a record slot and a version slot of a value size have
  // the same size, the value at the same offset): then only the header is
  // rewritten.
  static void build_lane_slot(uint8_t* out, uint64_t link, const uint8_t* rec,
                              Timestamp superseded_at, uint64_t older, uint32_t value_size);
  // `area`: bytes_for(capacity, value_size) bytes (64-byte aligned) of
  // registered memory this store owns. kInvalidArgument naming the field
  // when the options or the area do not fit.
  static Result<std::unique_ptr<VersionStore>> create(std::span<uint8_t> area,
                                                      const VersionStoreOptions& o);
  ~VersionStore();

  // Room for `n` pushes that must not fail later; false (and counted) when
  // the ring is full even after gc() with the last lwm.
  bool reserve(uint32_t n);
  void unreserve(uint32_t n);
  // Pushes the version `rec` (a record image: header + value) that record
  // slot `slot` holds now, superseded at `superseded_at`, in front of the
  // slot's chain. `reserved`: consumes a reservation (never fails);
  // otherwise false when there is no room.
  bool push(uint64_t slot, const uint8_t* rec, Timestamp superseded_at, bool reserved);
  // A hint: brings in the lines a push for record slot `slot` will write
  // (its chain head, the ring slot at the head).
  void prefetch_push(uint64_t slot) const;
  // Record slot `slot` is deleted at `deleted_at`: pushes its last version
  // `rec` (as push) and moves its chain to the graveyard under `key`; the
  // slot's chain is empty afterwards. False (nothing changed) when there
  // is no reservation and no room.
  bool bury(uint64_t slot, uint64_t key, const uint8_t* rec, Timestamp deleted_at);
  // Record slot `slot` is handed to a new tenant: forgets its chain (the
  // versions stay until GC; nobody reaches them through this slot).
  void detach(uint64_t slot);

  // The newest version of slot's chain with wts <= ts: value to
  // `value_out` (value_size bytes).
  Found find(uint64_t slot, Timestamp ts, uint8_t* value_out, VersionInfo* info) const;
  // The state of a deleted key at ts: kVersion with info->deleted when it
  // was deleted at or before ts (no value), kVersion with the value of the
  // newest deleted incarnation's version <= ts, kNone when the graveyard
  // has nothing of the key at ts.
  Found find_buried(uint64_t key, Timestamp ts, uint8_t* value_out, VersionInfo* info) const;
  // Keys in [from, to] whose state at ts comes from the graveyard and is a
  // value (deleted after ts), ascending: f(key, value, info).
  void buried_in(uint64_t from, uint64_t to, Timestamp ts,
                 const std::function<void(uint64_t, const uint8_t*, const VersionInfo&)>& f) const;

  // The lock holder of record slot `slot` and the timestamp it collected
  // under the lock (its commit timestamp will be above it) — published by
  // lock_and_collect so DEP_READ need not wait for a holder that commits
  // above the read timestamp (record_mvcc.h). holder_ts() is that
  // timestamp when `lock_word` is the holder published, else 0. Stale
  // entries (a holder that unlocked without unhold(), as one-sided holders
  // do) are harmless: a lock word names one transaction, so a later holder
  // of the record has another word until it publishes its own. Even a
  // word that comes back (its 27-bit sequence wrapped) is safe: a
  // publisher first raises its thread's clock above what it publishes
  // (txn/mvcc_onesided.cc), so the stale timestamp is below anything the
  // word's coroutine commits at later.
  void hold(uint64_t slot, uint64_t lock_word, Timestamp collected) {
    if (slot >= o_.record_slots) return;
    holders_[slot].ts.store(collected, std::memory_order_relaxed);
    holders_[slot].word.store(lock_word, std::memory_order_release);
  }
  void unhold(uint64_t slot) {
    if (slot < o_.record_slots) holders_[slot].word.store(0, std::memory_order_release);
  }
  Timestamp holder_ts(uint64_t slot, uint64_t lock_word) const {
    if (slot >= o_.record_slots || lock_word == 0) return 0;
    if (holders_[slot].word.load(std::memory_order_acquire) != lock_word) return 0;
    return holders_[slot].ts.load(std::memory_order_relaxed);
  }

  // Lanes, a coordinator on this node (txn/mvcc_onesided.cc, the records
  // and copies of its own node): its one-sided steps on this area as this
  // CPU's loads and stores, in the order the one-sided ops run. `lane` <
  // lanes, `record_slot` < record_slots (else nothing is touched: 0).
  //   lane_header  word 0 the lane's tail, word 1 the head bound (READ;
  //                the bound is raised with a release store)
  //   chain_head   the record's chain head (READ under its lock)
  //   push_lane    the slot image at `pos` (build_lane_slot), its
  //                position word last, then the record's chain head
  //                (lane_link(lane, pos)), release stores
  uint64_t lane_header(uint32_t lane, int word) const;
  void raise_lane_bound(uint32_t lane, uint64_t bound);
  uint64_t chain_head(uint64_t record_slot) const;
  void push_lane(uint32_t lane, uint64_t pos, const uint8_t* slot_image, uint64_t record_slot);

  // Frees ring slots from the tail while superseded at <= lwm; returns how
  // many. Remembers lwm for reserve()/push()'s own attempts.
  uint64_t gc(Timestamp lwm);
  VersionStoreStats stats() const;
  const VersionStoreOptions& options() const { return o_; }
  // With lanes: the word of the area that holds the partition copy's range
  // timestamp (remote coordinators raise it); nullptr without lanes.
  std::atomic<uint64_t>* range_word() const { return range_word_; }

 private:
  struct Slot;  // version_store.cc
  static constexpr unsigned kLinkRingShift = 48;
  VersionStore(std::span<uint8_t> area, const VersionStoreOptions& o);
  Slot* at(uint64_t pos) const;  // the owner's ring
  // The header of the slot of version `rec` (position 0).
  static Slot slot_header(const uint8_t* rec, Timestamp superseded_at, uint64_t older,
                          bool deleted);
  // The slot a link names and whether it was reclaimed already (its
  // position is below its ring's tail); nullptr for a malformed link.
  const Slot* slot_of(uint64_t link, bool* reclaimed) const;
  std::atomic<uint64_t>* lane_word(uint32_t lane, int word) const;
  uint64_t gc_lanes_locked();
  uint64_t push_locked(uint64_t older, const uint8_t* rec, Timestamp superseded_at, bool deleted);
  uint64_t gc_locked(Timestamp lwm);
  // Walks a chain from position+1 `link`; see find().
  Found walk(uint64_t link, Timestamp ts, uint8_t* value_out, VersionInfo* info) const;

  std::span<uint8_t> area_;
  VersionStoreOptions o_;
  uint64_t slot_bytes_;
  std::atomic<uint64_t>* heads_;  // per record slot: link of the newest old version, 0 none
  bool heads_owned_ = false;      // heads_ and holders_ mapped here (no lanes) or in the area
  uint64_t owned_bytes_ = 0;      // heads_owned_: the mapping of heads_ and holders_
  struct Holder {
    std::atomic<uint64_t> word, ts;
  };
  Holder* holders_;                              // per record slot: hold()
  std::atomic<uint64_t>* range_word_ = nullptr;  // in the area (lanes only)
  mutable SpinLock mu_;                          // see "Thread safety" above
  std::atomic<uint64_t> head_{0}, tail_{0};
  uint64_t reserved_ = 0;
  Timestamp last_lwm_ = 0;
  uint64_t lane_reclaimed_ = 0;
  // Graveyard: key -> positions + 1 of the last versions of its deleted
  // incarnations, newest first; `graves_` lists them in push order for GC.
  std::map<uint64_t, std::deque<uint64_t>> graveyard_;
  std::deque<std::pair<uint64_t, uint64_t>> graves_;  // (position, key)
  VersionStoreStats st_;
};

}  // namespace drtmx::dst
