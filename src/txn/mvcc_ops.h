// The two-sided record steps of MVCC (thesis Table 6-1, DrTM+X with MVCC
// on: Validate and Commit two-sided, read-only reads by DEP_READ RPC), on
// top of the per-record steps in dst/record_mvcc.h. Requests name records
// by (region, offset) like record_ops.h's, or by key for snapshot reads; the
// primary resolves them against its MvccNode (bounds-checked: a malformed
// request gets an error reply, never a crash).
//
//   lock      per record: lock + check version + reserve version-store
//             room + collect max(ts, wts)                    (Validate, writes)
//   check     per record: raise ts to the commit timestamp, then check
//                                                            (Validate, reads)
//   commit    per record: push the replaced version, write the new one
//             (wts = commit ts), raise ts, unlock            (Commit)
//   unlock    per record: release our lock and its room      (abort)
//   remove    per record: bury the deleted record's versions under its key,
//             then delete it                                  (Commit, deletes)
//   snapshot  per key: DEP_READ at a read timestamp (raise ts, wait while
//             locked, newest version <= read ts); absent keys raise the
//             partition's range timestamp                    (read-only)
//   scan      a key range of one partition at a read timestamp (raises the
//             range timestamp first; waits for locked rows and reservations)
//   claim     raise partitions' range timestamps to a commit timestamp
//             (Validate, scanned ranges of read-write transactions)
// A snapshot request that meets a locked record is deferred at the primary
// (RpcRequest::defer) and answered when every record it names is unlocked:
// the coordinator waits one round trip however long that takes; the reply
// says how many reads blocked and for how long (ReadWait).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "dst/mvcc_node.h"
#include "dst/record_mvcc.h"
#include "r2/sched/co.h"
#include "r2/sched/worker.h"
#include "store/tables/store_node.h"
#include "txn/index_ops.h"
#include "txn/mvcc_types.h"
#include "txn/record_ops.h"

namespace drtmx::txn {

constexpr uint16_t kRpcMvccLock = 150;
constexpr uint16_t kRpcMvccCheck = 151;
constexpr uint16_t kRpcMvccCommit = 152;
constexpr uint16_t kRpcMvccUnlock = 153;
constexpr uint16_t kRpcMvccRemove = 154;
constexpr uint16_t kRpcSnapshotGet = 155;
constexpr uint16_t kRpcSnapshotScan = 156;
constexpr uint16_t kRpcRangeClaim = 157;
constexpr uint16_t kRpcFloor = 158;       // one-way: a node's snapshot floor (+ GTS StableTS seen)
constexpr uint16_t kRpcGtsInstall = 159;  // one-way, to node 0: GTS INSTALL(ts...)

// Registers every handler above on `w`, and a poller that answers deferred
// snapshot requests once their records are unlocked.
Status register_mvcc_handlers(r2::Worker& w, dst::MvccNode& mvcc, store::tables::StoreNode& store);

struct MvccLockResult {
  bool locked = false, valid = false, no_room = false;
  uint64_t ts = 0;
};
Status rpc_mvcc_lock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word,
                     std::vector<MvccLockResult>* out);
struct MvccCheckResult {
  dst::Check check = dst::Check::kInvalid;
  uint64_t wts = 0;  // kBehind: the version's commit timestamp
};
Status rpc_mvcc_check(r2::Co& co, std::span<const RecordRef> refs, uint64_t commit_ts,
                      std::vector<MvccCheckResult>* out);
Status rpc_mvcc_commit(r2::Co& co, std::span<const RecordRef> refs,
                       std::span<const uint8_t* const> images, uint64_t commit_ts, bool passive);
Status rpc_mvcc_unlock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word,
                       bool passive);
Status rpc_mvcc_remove(r2::Co& co, std::span<const HeldRecord> items, uint64_t lock_word,
                       uint64_t commit_ts, bool passive);

// All of `rows` at read timestamp `ts` (each primary once, all in
// parallel), as `mode` says (dst/record_mvcc.h; GTS snapshots raise and
// claim nothing).
Status rpc_snapshot_get(r2::Co& co, std::span<SnapshotRow> rows, uint64_t ts,
                        dst::SnapshotMode mode, ReadWait* wait);
// Rows of range [from, to] of `table` in partition `part` at `ts` from its
// primary: at most `limit`, ascending; *exhausted when the partition has
// no further row <= to.
Status rpc_snapshot_scan(r2::Co& co, r2::NodeId primary, TableId table, store::PartitionId part,
                         Key from, Key to, uint32_t limit, uint32_t value_size, uint64_t ts,
                         dst::SnapshotMode mode, std::vector<Key>* keys,
                         std::vector<uint8_t>* values, bool* exhausted, ReadWait* wait);
// GTS (dst/oracle.h): the next commit timestamp (one-sided FAA on node
// 0's GlobalTS; `scratch`: 8 bytes of registered memory), StableTS (one
// READ), and INSTALL of a finished transaction's timestamp (one-way).
Result<uint64_t> gts_next(r2::Co& co, uint64_t* scratch);
Result<uint64_t> gts_stable(r2::Co& co, uint64_t* scratch);
Status gts_install(r2::Co& co, uint64_t ts);

// A partition's range timestamp to raise, at its primary.
struct PartitionClaim {
  r2::NodeId primary = 0;
  TableId table = 0;
  store::PartitionId part = 0;
};
// Raises the range timestamp of each listed partition at its primary to
// `ts`.
Status rpc_range_claim(r2::Co& co, std::span<const PartitionClaim> ranges, uint64_t ts);

}  // namespace drtmx::txn
