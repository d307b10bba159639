#include "store/hash/location_cache.h"

#include <algorithm>

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

size_t LocationCache::KeyHash::operator()(const Key& k) const {
  return static_cast<size_t>(hash_mix(k.key, 0x51ED270B27ull + k.table));
}

Result<std::unique_ptr<LocationCache>> LocationCache::create(const LocationCacheOptions& o) {
  DRTMX_RETURN_IF_ERROR(o.validate());
  return std::unique_ptr<LocationCache>(new LocationCache(o));
}

LocationCache::LocationCache(const LocationCacheOptions& o) {
  capacity_ = o.budget_bytes / kEntryBytes;
  const size_t shards = std::min<size_t>(o.shards, capacity_);
  for (size_t i = 0; i < shards; ++i) {
    auto s = std::make_unique<Shard>();
    const size_t cap = capacity_ / shards + (i < capacity_ % shards ? 1 : 0);
    s->entries.resize(cap);
    s->index.reserve(cap);
    shards_.push_back(std::move(s));
  }
}

LocationCache::Shard& LocationCache::shard_of(const Key& k) {
  // High bits pick the shard; the index's own hash uses all bits.
  return *shards_[(KeyHash{}(k) >> 32) % shards_.size()];
}

bool LocationCache::get(uint32_t table, uint64_t key, CachedLocation* out) {
  const Key k{table, key};
  Shard& s = shard_of(k);
  {
    std::lock_guard<std::mutex> g(s.mu);
    auto it = s.index.find(k);
    if (it != s.index.end()) {
      Entry& e = s.entries[it->second];
      e.referenced = true;
      *out = e.loc;
      hits_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void LocationCache::put(uint32_t table, uint64_t key, const CachedLocation& loc) {
  const Key k{table, key};
  Shard& s = shard_of(k);
  std::lock_guard<std::mutex> g(s.mu);
  inserts_.fetch_add(1, std::memory_order_relaxed);
  auto it = s.index.find(k);
  if (it != s.index.end()) {
    s.entries[it->second].loc = loc;
    return;
  }
  const uint32_t n = static_cast<uint32_t>(s.entries.size());
  uint32_t victim = n;
  if (s.live < n) {
    // A free entry exists: take the first one from the hand on.
    for (uint32_t i = 0; i < n && victim == n; ++i) {
      const uint32_t at = (s.hand + i) % n;
      if (!s.entries[at].used) victim = at;
    }
  } else {
    // CLOCK: clear reference bits until an unreferenced entry comes by.
    for (uint32_t i = 0; i < 2 * n; ++i) {
      Entry& e = s.entries[s.hand];
      const uint32_t at = s.hand;
      s.hand = (s.hand + 1) % n;
      if (!e.referenced) {
        victim = at;
        break;
      }
      e.referenced = false;
    }
    erase_locked(s, s.entries[victim].key, victim);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  Entry& e = s.entries[victim];
  e.key = k;
  e.loc = loc;
  e.used = true;
  e.referenced = false;  // earns its bit on the first hit
  s.index.emplace(k, victim);
  ++s.live;
}

void LocationCache::erase_locked(Shard& s, const Key& k, uint32_t idx) {
  s.index.erase(k);
  s.entries[idx].used = false;
  s.entries[idx].referenced = false;
  --s.live;
}

void LocationCache::erase_if_same(uint32_t table, uint64_t key, const CachedLocation& seen) {
  const Key k{table, key};
  Shard& s = shard_of(k);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.index.find(k);
  if (it == s.index.end()) return;
  const CachedLocation& cur = s.entries[it->second].loc;
  if (cur.addr.node == seen.addr.node && cur.addr.region == seen.addr.region &&
      cur.addr.offset == seen.addr.offset && cur.incarnation == seen.incarnation) {
    erase_locked(s, k, it->second);
    erased_.fetch_add(1, std::memory_order_relaxed);
  }
}

void LocationCache::erase(uint32_t table, uint64_t key) {
  const Key k{table, key};
  Shard& s = shard_of(k);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.index.find(k);
  if (it == s.index.end()) return;
  erase_locked(s, k, it->second);
  erased_.fetch_add(1, std::memory_order_relaxed);
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
