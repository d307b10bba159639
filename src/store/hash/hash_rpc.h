// DrTM-KV RPCs: ids and wire formats of what a hash table owner serves
// (the "dynamic" operations of thesis-spec §7.1 — insert, update, delete —
// and the RPC lookup that returns a record and its address). Shared by the
// owner (hash_service.h) and the client (hash_client.h).
//
// Encoding: a fixed head (POD, memcpy, host byte order — all nodes of a
// cluster share one architecture), then the value bytes where noted.
//   request : HashReq, then value_len value bytes (insert, update)
//   reply   : HashReply, then value_size value bytes (GET with kOk)
// Per-key outcomes travel in HashReply::status; a malformed request or an
// unknown table is answered with an error reply (Co::call returns a Status
// that names it).
#pragma once

#include <cstdint>

namespace drtmx::store::hash {

// RPC ids (txn uses 100..110, XStore 130..137).
constexpr uint16_t kRpcHashGet = 120;
constexpr uint16_t kRpcHashInsert = 121;
constexpr uint16_t kRpcHashUpdate = 122;
constexpr uint16_t kRpcHashDelete = 123;

struct HashReq {
  uint32_t table = 0;      // the id the owner registered the partition under
  uint32_t value_len = 0;  // bytes following (insert, update)
  uint64_t key = 0;
};
static_assert(sizeof(HashReq) == 16);

enum class HashStatus : uint8_t {
  kOk = 0,
  kNotFound,  // GET/UPDATE/DELETE of an absent key
  kExists,    // INSERT of a present key
  kNoSpace,   // out of record slots or overflow buckets
  kTooLarge,  // value longer than the table's value size
  kBusy,      // record locked by a transaction, or kept torn: retry
};

struct HashReply {
  uint8_t status = 0;  // HashStatus
  uint8_t pad = 0;
  uint16_t region = 0;  // record region (kOk)
  uint32_t incarnation = 0;
  uint64_t offset = 0;   // record offset in its region (kOk)
  uint64_t version = 0;  // of the returned / written record
};
static_assert(sizeof(HashReply) == 24);

}  // namespace drtmx::store::hash
