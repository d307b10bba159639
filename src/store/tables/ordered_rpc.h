// Ordered-table operations at the owner, by RPC: the server-centric path of
// XStore (thesis-spec §4.2, used by store-bench's --path=rpc and by writes)
// and the record-tree writes (insert/update/remove of ordered tables whose
// values are records), which the XStore wire format does not carry.
//
// Owner thread: requests for a key go to owner thread key % threads, so the
// owner's workers share the load (every worker serves every tree).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "r2/sched/co.h"
#include "r2/sched/worker.h"
#include "store/tables/plan.h"

namespace drtmx::store::tables {

class StoreNode;

// RPC ids of the record-tree writes (xstore uses 130..137, hash 120..123).
constexpr uint16_t kRpcRecordInsert = 140;
constexpr uint16_t kRpcRecordUpdate = 141;
constexpr uint16_t kRpcRecordRemove = 142;

// A partition as the RPC path addresses it.
struct OrderedRemote {
  r2::NodeId node = 0;
  uint32_t service = 0;      // service_id(table, partition)
  uint32_t value_bytes = 0;  // leaf value bytes (inline value or RecordAddr)
};

// Reused request/reply buffers of one coroutine.
class OrderedRpc {
 public:
  // kRpcXGet: true + value_bytes bytes at `out` when present.
  Result<bool> get(r2::Co& co, const OrderedRemote& r, uint64_t key, void* out);
  // kRpcXScan, continued while the owner cuts the reply: up to n pairs with
  // key >= start (appended to keys / values). *end_of_tree: the scan ran
  // past the partition's last key.
  Status scan(r2::Co& co, const OrderedRemote& r, uint64_t start, size_t n,
              std::vector<uint64_t>& keys, std::vector<uint8_t>& values, bool* end_of_tree);
  // kRpcXInsert (inline-value trees). kAlreadyExists, kResourceExhausted.
  Status insert(r2::Co& co, const OrderedRemote& r, uint64_t key, std::span<const uint8_t> value,
                bool upsert);
  // kRpcXDelete (inline-value trees). kNotFound.
  Status remove(r2::Co& co, const OrderedRemote& r, uint64_t key);

  // Record trees: kRpcRecord*; the reply carries the record's address.
  Result<RecordAddr> record_write(r2::Co& co, uint16_t rpc, const OrderedRemote& r, uint64_t key,
                                  std::span<const uint8_t> value);

 private:
  Status call(r2::Co& co, const OrderedRemote& r, uint16_t rpc, uint64_t key);
  std::vector<uint8_t> req_;
  r2::RpcBuffer reply_;
};

// Registers the kRpcRecord* handlers of `node`'s record trees on `w`.
Status register_record_handlers(StoreNode& node, r2::Worker& w);

}  // namespace drtmx::store::tables
