// A record in registered memory, as every node sees it through one-sided
// READs, and the protocol that lets one READ tell a consistent copy from a
// torn or stale one.
//
// Layout of one record slot (all offsets from the slot start, 8-byte words):
//
//   +0   lock         8 B   0 = free; otherwise the holder (see lock_word()).
//                           The one-sided CAS target. NOT covered by the seal.
//   +8   ts           8 B   MVCC: the tuple timestamp (thesis §5.2): raised
//                           (never lowered) by snapshot reads and by the
//                           commit of every transaction that read or wrote
//                           the record. NOT covered by the seal: it changes
//                           by atomic max independently of the data, and no
//                           write of the record body under MVCC stores it.
//   +16  version      8 B   bumped by every committed write (never 0 once
//                           the record exists). The BODY — what a writer
//                           stores — is [version .. end of value]: one
//                           contiguous range, so a one-sided write-back
//                           that must leave ts alone is still one WRITE.
//   +24  key          8 B   the record's key.
//   +32  incarnation  4 B   bumped each time the slot is freed, so a cached
//                           address of an earlier tenant is recognised.
//   +36  flags        4 B   kLive / kDeleted.
//   +40  seal         8 B   hash of [version, key, incarnation, flags, wts, value]
//   +48  wts          8 B   MVCC: the commit timestamp of this version (the
//                           writer's, dst/timestamp.h); 0 without MVCC and
//                           for loaded records.
//   +56  value        value_size B, then padding to a multiple of 64 B.
//
// Why a seal and not per-cache-line versions: an RNIC gives no ordering
// across cache lines, and on shm a READ is a memcpy that may copy the bytes
// in any order and width. Any mix of two writes' bytes breaks the seal (up
// to a 2^-64 chance), whatever the copy order; a copy whose seal verifies is
// one write's complete image. The lock word is outside the seal because it
// changes by CAS independently of the data.
//
// Writer protocol (the holder of the lock — a transaction's commit, or the
// owner on insert/delete):
//   1. own the lock (CAS 0 -> lock_word) — or be the owner under its
//      partition latch for inserts/deletes;
//   2. write the body [version .. end of value] with the new version, the
//      value and a seal computed by seal() — in one WRITE (remote) or one
//      store sequence (local); readers in between see a broken seal;
//   3. release: store 0 to the lock (after 2; on a fabric channel the FIFO
//      order of a WRITE then an unlock WRITE in one doorbell gives this).
//
// Reader protocol: READ the whole slot; verify(). On kTorn re-read (bounded
// by the caller). Then check identity (key, incarnation, flags) against what
// was expected: a mismatch means the cached address is stale.
//
// Lock words apart (durable nodes, hint H8). With durability on, the slots
// live in persistent memory, where an atomic is a read-modify-write at the
// media. The two words that change by atomics only — lock and ts — then
// live in DRAM instead, in a lock area beside the heap: one entry of
// kLockEntryBytes per slot, [lock][ts] (tables/plan.h says where; the
// owner's view is store::SlotWords, record_io.h). The slot's own lock and
// ts words stay 0. Nothing else changes: the writer protocol above holds
// with "the lock" meaning the entry's lock word. Locks and tuple
// timestamps need not survive a crash (recovery clears every lock, and a
// restart starts every timestamp above the recovered records' wts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace drtmx::store {

struct RecordHeader {
  uint64_t lock;
  uint64_t ts;
  uint64_t version;
  uint64_t key;
  uint32_t incarnation;
  uint32_t flags;
  uint64_t seal;
  uint64_t wts;
};
static_assert(sizeof(RecordHeader) == 56);
static_assert(offsetof(RecordHeader, lock) == 0);
constexpr size_t kTsOffset = offsetof(RecordHeader, ts);
// The body a writer stores: [kBodyOffset, slot end), the version first.
constexpr size_t kBodyOffset = offsetof(RecordHeader, version);
constexpr size_t kValueOffset = sizeof(RecordHeader);
static_assert(kTsOffset == 8 && kBodyOffset == 16);

// The tuple timestamp of the record at `rec` (owner-local memory), as an
// atomic word: snapshot reads and commits raise it with atomic_max_ts.
inline uint64_t* ts_word(uint8_t* rec) {
  return reinterpret_cast<uint64_t*>(rec + kTsOffset);
}
// Raises *w to at least v (never lowers it); returns the value before.
// Sequentially consistent: the DST protocol orders a raise against a lock
// CAS on another thread (dst/README.md, "raise then check").
inline uint64_t atomic_max_ts(uint64_t* w, uint64_t v) {
  uint64_t cur = __atomic_load_n(w, __ATOMIC_SEQ_CST);
  while (cur < v &&
         !__atomic_compare_exchange_n(w, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return cur;
}

// Lock words apart (H8): the bytes of one slot's entry in a lock area,
// [lock word][ts].
constexpr size_t kLockEntryBytes = 16;

constexpr uint32_t kLive = 1;
constexpr uint32_t kDeleted = 2;

// Size of a slot holding `value_size` value bytes: header + value, padded to
// 64 bytes so no two records share a cache line.
constexpr size_t record_slot_size(size_t value_size) {
  return (sizeof(RecordHeader) + value_size + 63) & ~size_t{63};
}

// The lock word a transaction writes (never 0, always below 2^56): the
// holder's node (8 bits: r2 has at most 256 nodes), thread (8: at most 256
// per node), coroutine (12: at most 4096 per worker) and the low 27 bits of
// the coroutine's transaction sequence number (kept non-zero). The sequence
// part makes each transaction's word its own: a commit or unlock sent with
// passive ACK may still be on its way when the same coroutine runs its next
// transaction, and that transaction must see the pending lock as someone
// else's (not "mine, so unchanged").
constexpr uint64_t lock_word(uint16_t node, uint16_t thread, uint16_t coroutine,
                             uint64_t txn_seq = 0) {
  return (uint64_t{node & 0xffu} << 47) | (uint64_t{thread & 0xffu} << 39) |
         (uint64_t{coroutine & 0xfffu} << 27) | (1 + txn_seq % ((uint64_t{1} << 27) - 1));
}

// The node whose transaction holds a lock word made by lock_word() (not for
// store::kOwnerLockWord, an owner's own latch).
constexpr uint16_t lock_node(uint64_t lock) {
  return static_cast<uint16_t>((lock >> 47) & 0xffu);
}

// 64-bit hash over the sealed part of a slot image: header fields from
// `version` to `wts` (the seal itself excluded; `ts` is not sealed) and the
// value.
uint64_t compute_seal(const RecordHeader& h, const void* value, size_t value_size);

// Writer: fills the seal of a slot image (header + value contiguous).
inline void seal(void* slot, size_t value_size) {
  auto* h = static_cast<RecordHeader*>(slot);
  h->seal = compute_seal(*h, static_cast<uint8_t*>(slot) + kValueOffset, value_size);
}

enum class RecordCheck : uint8_t {
  kOk,                // a consistent copy of the expected record
  kTorn,              // the seal does not verify: a concurrent write; read again
  kEmpty,             // never written (all zero)
  kWrongKey,          // the slot holds another key: the cached address is stale
  kWrongIncarnation,  // the slot was freed and reused since it was cached
  kDeleted,           // the record was deleted
};

// A slot no record was ever written to (all zero).
inline bool never_written(const RecordHeader& h) {
  return h.version == 0 && h.seal == 0 && h.key == 0 && h.flags == 0;
}

// The identity a cached address promised, on a header already known whole:
// the key, then the incarnation, then whether the record is deleted.
inline RecordCheck check_identity(const RecordHeader& h, uint64_t key, uint32_t incarnation) {
  if (h.key != key) return RecordCheck::kWrongKey;
  if (h.incarnation != incarnation) return RecordCheck::kWrongIncarnation;
  return h.flags == kDeleted ? RecordCheck::kDeleted : RecordCheck::kOk;
}

// Reader: checks a copy of a slot (as READ from the fabric).
inline RecordCheck verify(const void* copy, size_t value_size) {
  RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  if (never_written(h)) return RecordCheck::kEmpty;
  if (compute_seal(h, static_cast<const uint8_t*>(copy) + sizeof(RecordHeader), value_size) !=
      h.seal) {
    return RecordCheck::kTorn;
  }
  return h.flags == kDeleted ? RecordCheck::kDeleted : RecordCheck::kOk;
}

// Reader: verify() plus the identity a cached address promised.
inline RecordCheck verify(const void* copy, size_t value_size, uint64_t key, uint32_t incarnation) {
  RecordCheck c = verify(copy, value_size);
  if (c != RecordCheck::kOk && c != RecordCheck::kDeleted) return c;
  RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  return check_identity(h, key, incarnation);
}

}  // namespace drtmx::store
