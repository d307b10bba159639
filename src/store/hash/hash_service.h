// HashService: the owner node's RPC front of its hash table partitions
// (hash_rpc.h). One service per node, shared by its worker threads; every
// worker registers the handlers, so any owner thread serves any partition
// (HashTable is safe for concurrent owner threads).
//
// Set-up: add() every partition, then register_handlers() on each worker,
// before the workers run. After that the table map is read-only, so
// handlers on different threads read it without synchronisation. Handlers
// run inline on the event loop; HashTable operations never block (see
// hash_table.h), so neither do they.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "r2/sched/worker.h"
#include "store/hash/hash_rpc.h"
#include "store/hash/hash_table.h"

namespace drtmx::store::hash {

class HashService {
 public:
  // Serves `table` under id `table_id`; the table must outlive the service.
  Status add(uint32_t table_id, HashTable* table);
  // Registers kRpcHashGet .. kRpcHashDelete on `w`.
  Status register_handlers(r2::Worker& w);

  // The work of one request, independent of the transport: fills `reply`
  // (HashReply [+ value]) or returns an error for a malformed request or an
  // unknown table. Public for tests.
  Status handle(uint16_t rpc_id, std::span<const uint8_t> req, std::vector<uint8_t>& reply) const;

 private:
  std::unordered_map<uint32_t, HashTable*> tables_;
};

// The HashStatus of an owner-side error Status (kOk for ok).
HashStatus to_hash_status(const Status& s);

}  // namespace drtmx::store::hash
