// HashClient: GET of a key from a remote (or local) DrTM-KV partition with
// one-sided READs and the node's location cache, with RPC fallback; and the
// dynamic operations (insert / update / delete), which go to the owner by
// RPC (thesis §5.2, §7.1).
//
// GET paths, in order:
//   (a) location cache hit: ONE READ of the record at the cached address;
//       record.h verify with the key and the cached incarnation. A deleted,
//       reused (other key / incarnation) or empty slot means the entry is
//       stale: it is dropped (cache_stale) and the lookup goes on with (b).
//   (b) bucket walk: READ the key's head bucket, verify its seal, follow
//       `next` with one READ per overflow bucket, then READ the record (about
//       2 READs). A found record fills the cache. A record that turned out
//       deleted / reused since the bucket copy restarts the walk.
//   (c) RPC lookup: the owner returns the value and the record's address
//       (filling the cache) — when torn copies exceed max_torn_reads or stale
//       restarts exceed max_restarts within one GET, instead of (b) with
//       MissPath::kRpc, or always with get_rpc().
// A GET result is a consistent copy of one committed image of the record
// (seal-verified), of the key asked for, live at the time of its READ; "not
// found" means every bucket of the chain lacked the key when it was READ.
//
// Threading: a HashClient belongs to one coroutine at a time (it owns a
// scratch buffer and its statistics). The LocationCache may be shared by
// every client of the node (it is thread-safe).
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "r2/sched/co.h"
#include "store/hash/hash_rpc.h"
#include "store/hash/layout.h"
#include "store/hash/location_cache.h"
#include "store/record.h"

namespace drtmx::store::hash {

// A table partition as a client addresses it.
struct HashRemote {
  uint32_t table = 0;   // id the owner's HashService serves it under (also the cache's table id)
  r2::NodeId node = 0;  // owner node
  HashLayout layout;
};

// What a GET does when the location cache cannot answer (miss or stale):
// READ the bucket chain itself (about 2 READs, no owner CPU), or ask the
// owner by RPC (one round trip, owner CPU; docs/architecture.md: "on a miss an RPC
// returns the record and its address"). Both fill the cache. A table on
// the caller's own node whose ops run at once (r2::Co::direct) is always
// walked: that reads its memory in the caller, no message.
enum class MissPath : uint8_t { kBucketWalk, kRpc };

struct HashClientOptions {
  bool use_cache = true;  // use the cache passed in (no effect without one)
  MissPath miss_path = MissPath::kBucketWalk;
  uint32_t max_torn_reads = 8;  // torn bucket/record copies per GET before RPC
  uint32_t max_restarts = 4;    // bucket walks restarted after a stale record
  // RPCs answered kBusy (the record locked or torn at the owner) are
  // retried, yielding between, at least busy_retries times and for at
  // least busy_wait_us (a lock holder that lost its core can hold a record
  // for a scheduler time slice), at most kMaxBusyRetries times.
  uint32_t busy_retries = 16;
  uint32_t busy_wait_us = 10000;
  // Prefetch the location-cache slot and yield once before looking it up,
  // so the other coroutines run while its cache line arrives (a large
  // cache misses in the CPU cache on nearly every lookup). Not for a table
  // on this node when its ops run at once (r2::Co::direct): there every
  // yield would only add the other coroutines' turns to the lookup.
  bool prefetch_yield = true;
};

struct HashClientStats {
  uint64_t gets = 0;  // get() + get_rpc() calls that returned a result
  uint64_t found = 0;
  uint64_t not_found = 0;
  uint64_t reads = 0;         // one-sided READs issued by GETs
  uint64_t bucket_reads = 0;  // of which bucket READs
  uint64_t record_reads = 0;  // of which record READs
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  uint64_t cache_stale = 0;  // hits whose record was deleted / reused
  uint64_t torn = 0;         // torn copies seen (bucket or record)
  uint64_t restarts = 0;     // bucket walks restarted (stale record behind a bucket copy)
  uint64_t rpc_gets = 0;     // GET RPCs sent (fallbacks + get_rpc)
  uint64_t fallbacks = 0;    // one-sided GETs that ended in an RPC
  uint64_t warm_reads = 0;   // bucket READs of warm() (not in `reads`: no GET issued them)
  uint64_t warmed = 0;       // cache entries warm() added

  double reads_per_get() const { return gets == 0 ? 0.0 : double(reads) / double(gets); }
};

enum class GetPath : uint8_t { kCache, kBucket, kRpc };

struct HashGet {
  bool found = false;
  r2::RemoteAddr addr;  // the record (found)
  uint32_t incarnation = 0;
  uint64_t version = 0;
  GetPath path = GetPath::kBucket;
};

class HashClient {
 public:
  // Registered scratch a client needs for tables with layout `l`.
  static size_t scratch_bytes(const HashLayout& l) { return kBucketBytes + l.slot_bytes(); }

  // `scratch`: memory registered on this node, 64-byte aligned, at least
  // scratch_bytes() of every table used with this client. `cache` may be
  // null (no cache) and must otherwise outlive the client.
  HashClient(LocationCache* cache, std::span<uint8_t> scratch, HashClientOptions o = {})
      : cache_(cache), scratch_(scratch), opts_(o) {}

  // value_out.size() >= layout.value_size. Errors: bad arguments, fabric
  // errors (naming the op), RPC failures, or kUnavailable when the owner
  // stayed busy for every retry.
  Result<HashGet> get(r2::Co& co, const HashRemote& r, uint64_t key, std::span<uint8_t> value_out);
  // Path (c) only: the owner looks the key up.
  Result<HashGet> get_rpc(r2::Co& co, const HashRemote& r, uint64_t key,
                          std::span<uint8_t> value_out);

  // Fills the location cache ahead of use with the address of every key of
  // partition `r`: READs each head bucket and its overflow chain (one READ
  // per bucket, seal-verified; a bucket torn more than max_torn_reads times
  // is skipped with the rest of its chain) and offers every slot to
  // LocationCache::fill, which adds what the cache has room for and never
  // evicts or replaces an entry. Afterwards a GET of any key the partition
  // held costs one READ of the record (path (a)) as long as the key stays
  // in that record slot. Entries are hints like any other: a record deleted
  // or moved meanwhile is found stale at its GET. Yields every 64 chains.
  // Returns the entries added; no effect without a cache (use_cache).
  Result<uint64_t> warm(r2::Co& co, const HashRemote& r);

  // Dynamic operations at the owner. insert/update return the record's
  // address and fill the cache; remove drops the cache entry.
  // Errors: kAlreadyExists (insert), kNotFound (update, remove),
  // kResourceExhausted (out of space), kOutOfRange (value too large),
  // kUnavailable (record locked by a transaction for every retry).
  Result<HashGet> insert(r2::Co& co, const HashRemote& r, uint64_t key,
                         std::span<const uint8_t> value);
  Result<HashGet> update(r2::Co& co, const HashRemote& r, uint64_t key,
                         std::span<const uint8_t> value);
  Status remove(r2::Co& co, const HashRemote& r, uint64_t key);

  // The record copy of the last one-sided GET that found its key (header +
  // value, in scratch); valid until the next call.
  const RecordHeader* last_record() const {
    return reinterpret_cast<const RecordHeader*>(scratch_.data() + kBucketBytes);
  }

  const HashClientStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  Status check(const HashRemote& r, size_t value_out) const;
  // One RPC to the owner, retried while it answers kBusy.
  Result<HashReply> call(r2::Co& co, const HashRemote& r, uint16_t rpc_id, uint64_t key,
                         std::span<const uint8_t> value, std::vector<uint8_t>* reply_value);
  void remember(const HashRemote& r, uint64_t key, const r2::RemoteAddr& a, uint32_t inc);

  LocationCache* cache_;
  std::span<uint8_t> scratch_;
  HashClientOptions opts_;
  HashClientStats stats_;
  std::vector<uint8_t> req_;
  r2::RpcBuffer reply_;
};

}  // namespace drtmx::store::hash
