// The index steps of inserts and deletes: the owner of a key's primary
// changes its index (DrTM-KV bucket, XStore leaf) with its CPU, so a
// transaction asks it by RPC (one request per primary, all in parallel):
//
//   reserve      Validate of an insert: the primary allocates a record slot
//                and publishes the key in its index with a record already
//                locked with the transaction's lock word, version 0 and a
//                zero value ("not yet committed"). Readers find it locked
//                and a transaction that reads version 0 aborts (kLockHeld),
//                so its value is never used. The reply is the record's
//                address and a base version above every version a deleted
//                record of the partition had: Commit writes the record like
//                any locked one (version base + 1 + value, then unlock;
//                record_ops.h), one-sided or by RPC. So versions per slot
//                and per key only grow (no ABA for validators; backups
//                apply a key's changes in version order). Results: kNone, kDuplicateInsert (a
//                committed record), kLockHeld (another transaction's reservation),
//                kOutOfMemory (the table found no memory to grow into),
//                kNotSupported (inline table), kNodeFailure.
//   remove_held  Commit of a delete (the record was locked at Validate)
//                and abort after a reserve: the primary marks the record
//                kDeleted with version + 1 (so readers and validators that
//                saw it notice), unlinks it from the index, unlocks it and
//                frees the slot — only when it is still the record at that
//                address and locked with the caller's lock word.
//
// Wire format: a 16-byte header {lock_word, count, pad} and `count` items
// of 24 bytes {table, pad, incarnation, key, offset}; the handler checks
// the payload is exactly that long and replies with an error otherwise
// (never touching memory for a malformed request). Reserve replies 24
// bytes per item {code, pad, incarnation, offset, base}; remove_held one code
// byte per item (or nothing when sent one-way with passive ACK).
//
// Memory ordering on the owner: see HashTable::reserve / remove_held and
// RecordTree (the record is complete and locked before the index publishes
// it; kDeleted is written before the entry is unlinked, the unlock is a
// release after both).
//
// Limitation: when a reserve RPC fails on the fabric (kNodeFailure) the
// coordinator does not know what the primary reserved; such a reservation
// stays locked until recovery (not implemented).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/sched/co.h"
#include "r2/sched/worker.h"
#include "txn/txn.h"

namespace drtmx::store {
struct TableSpec;
namespace tables {
class StoreNode;
}
}  // namespace drtmx::store

namespace drtmx::txn {

constexpr uint16_t kRpcReserve = 104;
constexpr uint16_t kRpcRemoveHeld = 105;

// One key to reserve: table, key and primary in; result, address out.
struct Reservation {
  TableId table = 0;
  Key key = 0;
  r2::NodeId primary = 0;
  Abort result = Abort::kNotSupported;
  r2::RemoteAddr addr;  // the record slot on the primary (result kNone)
  uint32_t incarnation = 0;
  uint64_t base_version = 0;  // commit writes base_version + 1
  uint64_t range_ts = 0;      // MVCC: the partition's range timestamp (commit above it)
};

// A record the caller holds locked, to delete.
struct HeldRecord {
  TableId table = 0;
  Key key = 0;
  r2::RemoteAddr addr;
  uint32_t incarnation = 0;
};

// Owner side: registers the handlers of both RPCs on `w`, over `store`
// (which must outlive the worker).
// MVCC: the range timestamp of key's partition on this node (read after a
// reservation is published; dst/mvcc_node.h), or empty without MVCC.
using RangeTs = std::function<uint64_t(const store::TableSpec&, uint64_t key)>;
Status register_index_handlers(r2::Worker& w, store::tables::StoreNode& store,
                               RangeTs range_ts = {});

// The coordinator's own node, for the local shortcuts: when the caller's
// worker runs local ops directly (r2::Co::direct), the items whose primary
// is this node are served by calling the handler's code on `store` in the
// caller (same work, same results, no request built or parsed).
struct LocalIndex {
  store::tables::StoreNode* store = nullptr;
  RangeTs range_ts;  // as given to register_index_handlers
};

// Coordinator side. A failed call (a removed or silent target, an error
// reply) returns its status; the items of the primaries that replied take
// their replies all the same (reserved ones are the caller's to hold and
// release), those of the others stay kNodeFailure. A primary that handles
// a request after its caller gave up on it (a timeout) leaves a
// reservation nobody holds: the documented leftover of a lost reply.
Status rpc_reserve(r2::Co& co, std::span<Reservation> items, uint64_t lock_word,
                   const LocalIndex* local = nullptr);
// With `passive` the requests are one-way (acknowledged on later traffic);
// items served here are removed at once either way.
Status rpc_remove_held(r2::Co& co, std::span<const HeldRecord> items, uint64_t lock_word,
                       bool passive, const LocalIndex* local = nullptr);

}  // namespace drtmx::txn
