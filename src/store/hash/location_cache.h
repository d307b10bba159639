// LocationCache: one node's map (table, key) -> remote record address +
// incarnation, so that a hash GET is one one-sided READ of the record
// (DrTM's location-based cache; thesis §5.2).
//
// Entries are put when a lookup finds a key's record (a GET's bucket walk or
// RPC) or ahead of use (fill(), by HashClient::warm: every key of a
// partition as far as there is room). Only a key whose entry is here costs
// one READ; the first GET of any other key costs a bucket walk.
//
// Entries are hints: a client READs the record at the cached address and
// checks its identity (store/record.h verify with key and incarnation); a
// mismatch or a deleted record means the entry is stale — the client erases
// it (erase_if_same, so a fresher entry another coroutine put meanwhile
// survives) and looks the key up again.
//
// Budget: at most capacity() entries, capacity = budget_bytes /
// kEntryBytes. Each shard is one open-addressing table (linear probing,
// backward-shift deletion) of 32-byte slots, two slots per entry of
// capacity (load factor <= 1/2, so a lookup touches one or two cache lines
// and no pointers): kEntryBytes = 64 is the whole cost of an entry. Sized
// at construction; the cache never grows. All shards' slots are one
// HugeBuffer (base/huge_buffer.h): a lookup in a 64 MiB table of 4 KiB
// pages also missed the TLB, and that page walk cost more than the lookup.
//
// Eviction: CLOCK per shard with a 2-bit count. A new entry starts at 1 (an
// entry filled ahead of use, fill(), at 0), a hit sets 2; an insert into a
// full shard sweeps the hand, decrementing, and evicts the first entry at 0
// (never the one just inserted; at most three sweeps). Recently used
// entries survive, one-off entries go first, a new entry gets one sweep of
// grace (open addressing puts it anywhere relative to the hand), and hits
// need no list updates.
//
// Threading: shared by all worker threads of a node. Keys are spread over
// `shards` shards by hash. Changes (put, fill, erase, eviction, clear) take one
// shard's mutex for an O(1) critical section that never waits for anything
// else. get() takes no lock: each shard carries a sequence number that a
// change makes odd while it moves slots and even again after; a lookup
// reads the sequence, probes, and keeps what it found only if the sequence
// was even and did not move meanwhile (a seqlock), else it looks again —
// after three tries under the mutex. Every slot field is read and written
// with atomic (relaxed) accesses, so a lookup racing a change reads stale
// words, never undefined ones; the sequence is what rejects them. A hit's
// CLOCK mark is a relaxed store of one byte, made only when the mark is not
// already set: a lost or misplaced mark only changes which entry an
// eviction picks. Statistics are relaxed atomics (approximate while threads
// run, exact when they stopped).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/huge_buffer.h"
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

  // Starts loading the cache line of (table, key)'s home slot (no lock, no
  // effect on contents): a caller that yields to other coroutines before
  // get() finds it in cache — hiding the DRAM miss of a large cache.
  void prefetch(uint32_t table, uint64_t key) const;
  // The entry for (table, key), marking it recently used.
  bool get(uint32_t table, uint64_t key, CachedLocation* out);
  // Inserts or replaces; may evict another entry of the same shard.
  void put(uint32_t table, uint64_t key, const CachedLocation& loc);
  // Filling ahead of use (HashClient::warm): inserts (table, key) only when
  // the cache holds no entry for it and its shard has room — it never
  // replaces an entry (one a GET put may be fresher) and never evicts. The
  // entry starts with CLOCK count 0 (no GET has used it yet: the first
  // sweep of a full shard may evict it). True when inserted.
  bool fill(uint32_t table, uint64_t key, const CachedLocation& loc);
  // Drops the entry if it still holds `seen` (address and incarnation).
  void erase_if_same(uint32_t table, uint64_t key, const CachedLocation& seen);
  void erase(uint32_t table, uint64_t key);
  // Drops every entry (the owners moved: a membership change).
  void clear();

  size_t capacity() const { return capacity_; }
  size_t size() const;
  LocationCacheStats stats() const;

 private:
  // One slot of a shard's table (32 bytes: the key, the location, CLOCK bit).
  struct Slot {
    uint64_t key = 0;
    uint64_t offset = 0;
    uint32_t table = 0;
    uint32_t incarnation = 0;
    uint16_t node = 0;
    uint16_t region = 0;
    uint8_t used = 0;
    uint8_t referenced = 0;  // CLOCK count 0..2
  };
  static_assert(sizeof(Slot) == 32);
  struct Shard {
    std::mutex mu;
    // Odd while a change under `mu` is moving slots (see the file comment).
    std::atomic<uint32_t> seq{0};
    Slot* slots = nullptr;  // 2 * cap slots in slab_
    uint32_t cap = 0;       // entries this shard may hold
    uint32_t live = 0;
    uint32_t hand = 0;  // CLOCK hand over slots
  };

  LocationCache(const LocationCacheOptions& o, HugeBuffer slab);
  static uint64_t hash_of(uint32_t table, uint64_t key);
  Shard& shard_of(uint64_t h);
  static uint32_t slot_count(const Shard& s) { return 2 * s.cap; }
  // Home slot of hash h in s.
  static uint32_t home(const Shard& s, uint64_t h);
  // Index of (table, key) in s, or UINT32_MAX.
  static uint32_t find(const Shard& s, uint64_t h, uint32_t table, uint64_t key);
  // Field by field, each an atomic store (the file comment).
  static void copy_slot(Slot& to, const Slot& from);
  // Writes an entry's key and location (not `used` or `referenced`).
  static void store_entry(Slot& e, uint32_t table, uint64_t key, const CachedLocation& loc);
  // Empties slot i, shifting the following run back so probes stay correct.
  static void erase_at(Shard& s, uint32_t i);
  // get() under the shard's mutex (after lock-free tries that kept meeting changes).
  bool get_locked(Shard& s, uint64_t h, uint32_t table, uint64_t key, CachedLocation* out);
  // Evicts one entry of a shard over capacity (CLOCK), never (keep_table, keep_key).
  void evict_one(Shard& s, uint32_t keep_table, uint64_t keep_key);

  size_t capacity_ = 0;
  HugeBuffer slab_;  // every shard's slots
  std::vector<std::unique_ptr<Shard>> shards_;
  mutable std::atomic<uint64_t> hits_{0}, misses_{0}, inserts_{0}, evictions_{0}, erased_{0};
};

}  // namespace drtmx::store::hash
