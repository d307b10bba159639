// LocationCache: one node's map (table, key) -> remote record address +
// incarnation, so that a hash GET is one one-sided READ of the record
// (DrTM's location-based cache; thesis-spec §5.2, DESIGN §3).
//
// Entries are hints: a client READs the record at the cached address and
// checks its identity (store/record.h verify with key and incarnation); a
// mismatch or a deleted record means the entry is stale — the client erases
// it (erase_if_same, so a fresher entry another coroutine put meanwhile
// survives) and looks the key up again.
//
// Budget: at most capacity() entries, capacity = budget_bytes /
// kEntryBytes, where kEntryBytes is the accounted cost of one entry (the
// entry itself plus its share of the hash index). Both the entry array and
// the index are sized at construction; the cache never grows.
//
// Eviction: CLOCK per shard. A hit sets the entry's reference bit; an
// insert into a full shard sweeps the hand, clearing set bits, and evicts
// the first entry whose bit is clear (at most two sweeps). Recently used
// entries survive, one-off entries go first, with no per-hit list updates.
//
// Threading: shared by all worker threads of a node. Keys are spread over
// `shards` shards by hash; every call takes one shard's mutex for an O(1)
// critical section that never waits for anything else. Statistics are
// relaxed atomics (approximate while threads run, exact when they stopped).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::store::hash {

struct CachedLocation {
  r2::RemoteAddr addr;
  uint32_t incarnation = 0;
};

struct LocationCacheOptions {
  size_t budget_bytes = 64u << 20;
  uint32_t shards = 16;

  Status validate() const;
};

struct LocationCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;
  uint64_t erased = 0;  // stale entries dropped
};

class LocationCache {
 public:
  static constexpr size_t kEntryBytes = 64;

  static Result<std::unique_ptr<LocationCache>> create(const LocationCacheOptions& o);

  // The entry for (table, key), marking it recently used.
  bool get(uint32_t table, uint64_t key, CachedLocation* out);
  // Inserts or replaces; may evict another entry of the same shard.
  void put(uint32_t table, uint64_t key, const CachedLocation& loc);
  // Drops the entry if it still holds `seen` (address and incarnation).
  void erase_if_same(uint32_t table, uint64_t key, const CachedLocation& seen);
  void erase(uint32_t table, uint64_t key);

  size_t capacity() const { return capacity_; }
  size_t size() const;
  LocationCacheStats stats() const;

 private:
  struct Key {
    uint32_t table;
    uint64_t key;
    bool operator==(const Key& o) const { return table == o.table && key == o.key; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    Key key{};
    CachedLocation loc;
    bool used = false;
    bool referenced = false;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Entry> entries;  // fixed capacity
    std::unordered_map<Key, uint32_t, KeyHash> index;
    uint32_t hand = 0;
    uint32_t live = 0;
  };

  explicit LocationCache(const LocationCacheOptions& o);
  Shard& shard_of(const Key& k);
  void erase_locked(Shard& s, const Key& k, uint32_t idx);

  size_t capacity_ = 0;
  std::vector<std::unique_ptr<Shard>> shards_;
  mutable std::atomic<uint64_t> hits_{0}, misses_{0}, inserts_{0}, evictions_{0}, erased_{0};
};

}  // namespace drtmx::store::hash
