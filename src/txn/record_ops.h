// The per-record steps of the OCC phases, on records whose address the
// coordinator already knows (from the Execute phase): lock + check, check
// only, write back + unlock — each as one-sided ops queued into an OpBatch
// (one doorbell per peer) or as an RPC the primary serves with its CPU.
// Record layout and writer protocol: store/record.h.
//
// One-sided forms (thesis §4.3.2-4.3.3):
//   lock    CAS(lock: 0 -> lock word) then READ [lock, version] (16 B) on the
//           same channel, one doorbell: FIFO order makes the READ see the
//           state after the CAS. Locked iff the CAS returned 0; valid iff the
//           version read equals the one seen in Execute.
//   check   READ [lock, version]: valid iff unlocked (or locked by us) and
//           the version is unchanged.
//   commit  WRITE [version .. end of value] (new version, value, new seal),
//           then WRITE 0 to the lock, same channel, one doorbell: the unlock
//           lands after the data. With passive ACK both are unsignaled.
//
// Lock words apart (durable nodes, hint H8: store/record.h). The record's
// lock word is then not the slot's first word but a word in DRAM whose
// address the client computes from the record's (store::tables::LockPlan);
// the one-sided forms take it as `lock`:
//   lock    CAS(lock: 0 -> lock word) then READ version (8 B), same
//           channel, one doorbell. As above: the READ runs after the CAS,
//           and once the CAS succeeded no writer changes the version.
//   check   READ lock, then READ version, same channel, one doorbell. Two
//           READs are no longer one atomic copy of both words, so the order
//           matters; it is lock FIRST (see add_check for why the other
//           order is wrong).
//   commit  WRITE [version .. end of value], then WRITE 0 to `lock`, same
//           channel, one doorbell: FIFO still lands the unlock after the data.
//   unlock / release   WRITE 0 / CAS(lock word -> 0) on `lock`.
// The slot's own lock word stays 0 and is never written.
//
// RPC forms do the same with the primary's CPU: a lock is a CPU CAS, the
// check reads the lock word then the version with acquire ordering, the
// commit stores the image, then releases the lock with a release store.
// Both forms are interchangeable only where the fabric's atomics are
// coherent with the CPU's (see policy.h); a policy never mixes them
// otherwise. With lock words apart, the primary finds a record's lock word
// through LocalRegions::lock_word.
//
// Requests name records by (region, offset) on the primary: the address
// Execute learned. The primary checks the range against its region before
// touching memory (a malformed request gets an error, never a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/sched/co.h"
#include "r2/sched/op_batch.h"
#include "r2/sched/worker.h"
#include "store/record_io.h"

namespace drtmx::txn {

// Where a record lives and what Execute saw of it.
struct RecordRef {
  r2::RemoteAddr addr;      // the record slot's start on its primary
  uint32_t value_size = 0;  // the table's value size
  uint64_t version = 0;     // the version read in Execute
};

// The lock word and version as READ by lock/check: the record's first
// three words, [lock][ts][version] (24 bytes, registered; ts unused).
struct LockState {
  uint64_t lock;
  uint64_t ts;
  uint64_t version;
};
static_assert(offsetof(LockState, version) == store::kBodyOffset);

// --- one-sided -------------------------------------------------------------

// Queues CAS + READ for `r` into `b`. `old` and `state` must be registered.
void add_lock(r2::OpBatch& b, const RecordRef& r, uint64_t lock_word, uint64_t* old,
              LockState* state);
// Queues the READ of [lock, version].
void add_check(r2::OpBatch& b, const RecordRef& r, LockState* state);
// Queues the write-back of `image` (a full slot image whose [ts .. end]
// part is written: the caller built it with the new version, value and
// seal; ts as the image has it, 0 without MVCC) and the unlock. `zero` is
// a registered 8-byte 0. Signaled only when `passive` is false.
void add_commit(r2::OpBatch& b, const RecordRef& r, const uint8_t* image, const uint64_t* zero,
                bool passive);
// The same for a record whose tuple timestamp `ts` is in the slot and
// changes by remote raises (one-sided MVCC): one WRITE of the body
// [version .. value end] only, which starts right after ts (store/record.h),
// so a raise that a snapshot or a read check made while we held the lock is
// not overwritten (a lowered ts would let a later writer commit below that
// reader). Then the unlock.
void add_commit_keep_ts(r2::OpBatch& b, const RecordRef& r, const uint8_t* image,
                        const uint64_t* zero, bool passive);
// The write-backs alone, without the unlock (tests stop between them and
// the unlock): add_commit's one WRITE of [ts .. value end] (the image's ts),
// and add_commit_keep_ts's of [version .. value end].
void add_write_back(r2::OpBatch& b, const RecordRef& r, const uint8_t* image, bool passive);
void add_write_back_keep_ts(r2::OpBatch& b, const RecordRef& r, const uint8_t* image, bool passive);
// Queues only the unlock (WRITE 0). Only for a lock known to be ours on
// a record known to be the one locked (it was validated).
void add_unlock(r2::OpBatch& b, const RecordRef& r, const uint64_t* zero, bool passive);
// Queues the release of a lock after an abort: CAS(lock_word -> 0), which
// clears only our own lock. A CAS lock may have landed on a slot whose
// record was deleted since Execute (validation then fails on the version);
// its owner may reuse the slot and overwrite the lock word for the new
// tenant — a WRITE of 0 would then unlock someone else's record. `old`
// (registered, 8 bytes) receives what the CAS found. Signaled unless
// `passive`.
void add_release(r2::OpBatch& b, const RecordRef& r, uint64_t lock_word, uint64_t* old,
                 bool passive);

// Lock words apart (H8): the same steps with the record's lock word at
// `lock` (store::tables::LockPlan::lock_of(r.addr)); `state` is filled the
// same way (add_lock stores state->lock = 0 itself: the CAS's result says
// whether we hold the lock).
void add_lock(r2::OpBatch& b, const RecordRef& r, const r2::RemoteAddr& lock, uint64_t lock_word,
              uint64_t* old, LockState* state);
void add_check(r2::OpBatch& b, const RecordRef& r, const r2::RemoteAddr& lock, LockState* state);

// The same two steps on a record of the caller's own node, run at once by
// its CPU instead of queued (Locator::local_slot gives `s`, whose lock word
// is wherever the owner keeps it). lock_here: add_lock's CAS, then the
// version load; `*old` gets the word the CAS found (0: we hold the lock)
// and state->lock = 0. check_here: add_check's lock-word load, then the
// version load — the order of its two READs, for the same reason. On shm a
// local CAS is this same CPU atomic; verbs gets no local slot (an RNIC's
// atomics are not atomic with the CPU's).
void lock_here(const store::SlotRef& s, uint64_t lock_word, uint64_t* old, LockState* state);
void check_here(const store::SlotRef& s, LockState* state);
// commit_here: add_commit's WRITE (`keep_ts`: add_commit_keep_ts's, which
// leaves the ts word alone), then the unlock, as this CPU's stores — the image's
// words up to the slot's end (the owner's own writes, dst::install, store
// as much), then the lock word 0 with release order: the data before the
// unlock, as the channel's FIFO orders the queued WRITEs. Nothing is
// flushed: on a durable node the caller writes the slot's lines back to its
// pool (PersistOps) and fences before the transaction settles (commit.cc),
// as a persistent WRITE and a flushing READ would.
void commit_here(const store::SlotRef& s, const uint8_t* image, uint32_t value_size, bool keep_ts);
void add_commit(r2::OpBatch& b, const RecordRef& r, const r2::RemoteAddr& lock,
                const uint8_t* image, const uint64_t* zero, bool passive);
void add_unlock(r2::OpBatch& b, const r2::RemoteAddr& lock, const uint64_t* zero, bool passive);
void add_release(r2::OpBatch& b, const r2::RemoteAddr& lock, uint64_t lock_word, uint64_t* old,
                 bool passive);

// Interpreting what came back.
inline bool lock_acquired(uint64_t old) {
  return old == 0;
}
inline bool unchanged(const LockState& s, const RecordRef& r, uint64_t my_lock) {
  return s.version == r.version && (s.lock == 0 || s.lock == my_lock);
}

// Builds the image add_commit writes: header and value at `image` (slot
// layout), with `version`, the given identity and a fresh seal.
void build_image(uint8_t* image, uint64_t key, uint32_t incarnation, uint64_t version,
                 const void* value, uint32_t value_size);
// The same without the seal (0): a transaction's copy of a record it read,
// whose value was verified as it was read. Nothing verifies or writes a
// copy again (Commit builds its images with build_image), so sealing it
// only hashed every value read a second time.
void build_copy(uint8_t* copy, uint64_t key, uint32_t incarnation, uint64_t version,
                const void* value, uint32_t value_size);

// --- RPC ---------------------------------------------------------------------

constexpr uint16_t kRpcLock = 100;    // lock + check a list of records
constexpr uint16_t kRpcCheck = 101;   // check a list of records
constexpr uint16_t kRpcCommit = 102;  // write back + unlock a list of records
constexpr uint16_t kRpcUnlock = 103;  // unlock a list of records

// Registers the primary-side handlers on `w`. `lookup(id)` returns the
// local base of a registered region and its size (0 when absent).
// `lock_word` (durable nodes, H8; unset: the lock words are in the slots):
// the lock word of the record slot at (region, offset) holding
// `value_size` bytes, or nullptr when that is no record slot (the request
// is refused). Chosen when the handlers are registered.
struct LocalRegions {
  std::function<std::pair<uint8_t*, size_t>(r2::RegionId)> lookup;
  std::function<uint64_t*(r2::RegionId, uint64_t offset, uint32_t value_size)> lock_word;
  // Durable nodes: how the owner makes its stores persistent (write back
  // [p, p + n); fence). The commit handler then flushes every slot it
  // wrote and fences before its reply: a caller that waits for the reply
  // knows the write-back persistent.
  std::function<void(const void* p, size_t n)> flush;
  std::function<void()> drain;
};
Status register_record_handlers(r2::Worker& w, LocalRegions regions);

// Outcome of a list operation by RPC or one-sided: per record, in order.
struct ItemResult {
  bool locked = false;  // lock: we hold it now
  bool valid = false;   // lock/check: version unchanged and not locked by others
};

// Coordinator side of the RPCs: one request per primary (records grouped by
// node, order kept), all primaries in parallel; results in `out` by index.
// For lock: stops at nothing — every record is attempted, so the caller
// unlocks exactly those with `locked`.
Status rpc_lock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word,
                std::vector<ItemResult>* out);
Status rpc_check(r2::Co& co, std::span<const RecordRef> refs, uint64_t my_lock,
                 std::vector<ItemResult>* out);
// Write-back + unlock; `images[i]` is refs[i]'s slot image. With `passive`
// the messages are one-way (acknowledged on later traffic).
Status rpc_commit(r2::Co& co, std::span<const RecordRef> refs,
                  std::span<const uint8_t* const> images, bool passive);
Status rpc_unlock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word, bool passive);

}  // namespace drtmx::txn
