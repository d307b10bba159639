#include "store/hash/location_cache.h"

#include <algorithm>
#include <memory>

#include "base/hash.h"

namespace drtmx::store::hash {

Status LocationCacheOptions::validate() const {
  if (budget_bytes < LocationCache::kEntryBytes) {
    return invalid_argument("location cache: budget of " + std::to_string(budget_bytes) +
                            " bytes holds no entry (each costs " +
                            std::to_string(LocationCache::kEntryBytes) +
                            " bytes); raise it or run without a cache");
  }
  if (shards == 0) return invalid_argument("location cache: shards must be > 0");
  return Status::ok();
}

uint64_t LocationCache::hash_of(uint32_t table, uint64_t key) {
  return hash_mix(key, 0x51ED270B27ull + table);
}

Result<std::unique_ptr<LocationCache>> LocationCache::create(const LocationCacheOptions& o) {
  DRTMX_RETURN_IF_ERROR(o.validate());
  const size_t capacity = o.budget_bytes / kEntryBytes;
  Result<HugeBuffer> slab = HugeBuffer::allocate(capacity * 2 * sizeof(Slot));
  if (!slab.is_ok()) return slab.status().with_context("location cache");
  return std::unique_ptr<LocationCache>(new LocationCache(o, std::move(*slab)));
}

LocationCache::LocationCache(const LocationCacheOptions& o, HugeBuffer slab)
    : capacity_(o.budget_bytes / kEntryBytes), slab_(std::move(slab)) {
  const size_t shards = std::min<size_t>(o.shards, capacity_);
  auto* next = static_cast<Slot*>(slab_.data());
  for (size_t i = 0; i < shards; ++i) {
    auto s = std::make_unique<Shard>();
    s->cap = static_cast<uint32_t>(capacity_ / shards + (i < capacity_ % shards ? 1 : 0));
    s->slots = next;
    std::uninitialized_value_construct_n(next, slot_count(*s));
    next += slot_count(*s);
    shards_.push_back(std::move(s));
  }
}

LocationCache::Shard& LocationCache::shard_of(uint64_t h) {
  // High bits pick the shard; the low bits pick the home slot.
  return *shards_[(h >> 40) % shards_.size()];
}

uint32_t LocationCache::home(const Shard& s, uint64_t h) {
  // Multiply-shift range reduction of the low 32 bits onto [0, slots).
  return static_cast<uint32_t>(((h & 0xFFFFFFFFull) * slot_count(s)) >> 32);
}

uint32_t LocationCache::find(const Shard& s, uint64_t h, uint32_t table, uint64_t key) {
  const uint32_t n = slot_count(s);
  uint32_t i = home(s, h);
  // Load <= 1/2 keeps an empty slot in every table, so this ends.
  for (uint32_t step = 0; step < n; ++step) {
    const Slot& e = s.slots[i];
    if (!e.used) return UINT32_MAX;
    if (e.key == key && e.table == table) return i;
    i = i + 1 == n ? 0 : i + 1;
  }
  return UINT32_MAX;
}

void LocationCache::erase_at(Shard& s, uint32_t i) {
  const uint32_t n = slot_count(s);
  uint32_t hole = i;
  uint32_t j = i;
  for (uint32_t step = 0; step < n; ++step) {
    j = j + 1 == n ? 0 : j + 1;
    Slot& e = s.slots[j];
    if (!e.used) break;
    const uint32_t h = home(s, hash_of(e.table, e.key));
    // e may move into the hole when its home is not in (hole, j] (cyclically).
    const bool home_between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (!home_between) {
      s.slots[hole] = e;
      hole = j;
    }
  }
  s.slots[hole] = Slot{};
  --s.live;
}

void LocationCache::prefetch(uint32_t table, uint64_t key) const {
  const uint64_t h = hash_of(table, key);
  const Shard& s = *shards_[(h >> 40) % shards_.size()];
  // A shard's slots never move after construction: reading its slot
  // pointer and count without the shard lock is safe.
  __builtin_prefetch(&s.slots[home(s, h)], 0, 1);
}

bool LocationCache::get(uint32_t table, uint64_t key, CachedLocation* out) {
  const uint64_t h = hash_of(table, key);
  Shard& s = shard_of(h);
  {
    std::lock_guard<std::mutex> g(s.mu);
    const uint32_t i = find(s, h, table, key);
    if (i != UINT32_MAX) {
      Slot& e = s.slots[i];
      e.referenced = 2;
      out->addr = r2::RemoteAddr{e.node, e.region, e.offset};
      out->incarnation = e.incarnation;
      hits_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void LocationCache::put(uint32_t table, uint64_t key, const CachedLocation& loc) {
  const uint64_t h = hash_of(table, key);
  Shard& s = shard_of(h);
  std::lock_guard<std::mutex> g(s.mu);
  inserts_.fetch_add(1, std::memory_order_relaxed);
  uint32_t i = find(s, h, table, key);
  const bool fresh = i == UINT32_MAX;
  if (fresh) {
    // Insert first (an empty slot always exists: live <= cap < 2 * cap
    // slots), then evict if the shard went over its capacity.
    const uint32_t n = slot_count(s);
    i = home(s, h);
    while (s.slots[i].used) i = i + 1 == n ? 0 : i + 1;
    ++s.live;
  }
  Slot& e = s.slots[i];
  e.key = key;
  e.table = table;
  e.offset = loc.addr.offset;
  e.node = loc.addr.node;
  e.region = loc.addr.region;
  e.incarnation = loc.incarnation;
  if (!e.used) e.referenced = 1;  // one sweep of grace; a hit raises it to 2
  e.used = 1;
  if (fresh && s.live > s.cap) evict_one(s, table, key);
}

void LocationCache::evict_one(Shard& s, uint32_t keep_table, uint64_t keep_key) {
  // CLOCK with a 2-bit count: the hand decrements counts until it meets an
  // entry at 0 other than the one just inserted (at most three sweeps).
  const uint32_t n = slot_count(s);
  for (uint32_t step = 0; step < 3 * n + 3; ++step) {
    const uint32_t at = s.hand;
    Slot& e = s.slots[at];
    s.hand = at + 1 == n ? 0 : at + 1;
    if (!e.used || (e.key == keep_key && e.table == keep_table)) continue;
    if (e.referenced > 0) {
      --e.referenced;
      continue;
    }
    erase_at(s, at);
    // The backward shift may have moved a later entry into `at`: look at
    // it on the next sweep step instead of skipping it for a whole lap.
    s.hand = at;
    evictions_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
}

void LocationCache::erase_if_same(uint32_t table, uint64_t key, const CachedLocation& seen) {
  const uint64_t h = hash_of(table, key);
  Shard& s = shard_of(h);
  std::lock_guard<std::mutex> g(s.mu);
  const uint32_t i = find(s, h, table, key);
  if (i == UINT32_MAX) return;
  const Slot& e = s.slots[i];
  if (e.node == seen.addr.node && e.region == seen.addr.region && e.offset == seen.addr.offset &&
      e.incarnation == seen.incarnation) {
    erase_at(s, i);
    erased_.fetch_add(1, std::memory_order_relaxed);
  }
}

void LocationCache::erase(uint32_t table, uint64_t key) {
  const uint64_t h = hash_of(table, key);
  Shard& s = shard_of(h);
  std::lock_guard<std::mutex> g(s.mu);
  const uint32_t i = find(s, h, table, key);
  if (i == UINT32_MAX) return;
  erase_at(s, i);
  erased_.fetch_add(1, std::memory_order_relaxed);
}

void LocationCache::clear() {
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::lock_guard<std::mutex> g(s.mu);
    for (uint32_t i = 0; i < slot_count(s); ++i) s.slots[i] = Slot{};
    s.live = 0;
    s.hand = 0;
  }
}

size_t LocationCache::size() const {
  size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard<std::mutex> g(s->mu);
    n += s->live;
  }
  return n;
}

LocationCacheStats LocationCache::stats() const {
  return {hits_.load(std::memory_order_relaxed), misses_.load(std::memory_order_relaxed),
          inserts_.load(std::memory_order_relaxed), evictions_.load(std::memory_order_relaxed),
          erased_.load(std::memory_order_relaxed)};
}

}  // namespace drtmx::store::hash
