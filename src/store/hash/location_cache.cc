#include "store/hash/location_cache.h"

#include <algorithm>
#include <memory>

#include "base/hash.h"

namespace drtmx::store::hash {
namespace {

// Slot fields are read by lock-free lookups while a change rewrites them:
// every access is atomic (relaxed; plain moves on x86), the shard's
// sequence decides what a lookup may keep.
template <typename T>
T ld(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_RELAXED);
}
template <typename T>
void st(T& x, T v) {
  __atomic_store_n(&x, v, __ATOMIC_RELAXED);
}

// One change of a shard's slots, made under its mutex: the sequence is odd
// from before the first slot store until after the last. The release fence
// keeps the odd value ahead of the slot stores: a lookup that read any of
// them and then fences (acquire) sees the sequence moved.
class SeqWrite {
 public:
  explicit SeqWrite(std::atomic<uint32_t>& seq) : seq_(seq) {
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  ~SeqWrite() { seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  SeqWrite(const SeqWrite&) = delete;
  SeqWrite& operator=(const SeqWrite&) = delete;

 private:
  std::atomic<uint32_t>& seq_;
};

}  // namespace

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
    if (!ld(e.used)) return UINT32_MAX;
    if (ld(e.key) == key && ld(e.table) == table) return i;
    i = i + 1 == n ? 0 : i + 1;
  }
  return UINT32_MAX;
}

void LocationCache::store_entry(Slot& e, uint32_t table, uint64_t key, const CachedLocation& loc) {
  st(e.key, key);
  st(e.table, table);
  st(e.offset, loc.addr.offset);
  st(e.node, loc.addr.node);
  st(e.region, loc.addr.region);
  st(e.incarnation, loc.incarnation);
}

void LocationCache::copy_slot(Slot& to, const Slot& from) {
  st(to.key, ld(from.key));
  st(to.offset, ld(from.offset));
  st(to.table, ld(from.table));
  st(to.incarnation, ld(from.incarnation));
  st(to.node, ld(from.node));
  st(to.region, ld(from.region));
  st(to.used, ld(from.used));
  st(to.referenced, ld(from.referenced));
}

void LocationCache::erase_at(Shard& s, uint32_t i) {
  const uint32_t n = slot_count(s);
  uint32_t hole = i;
  uint32_t j = i;
  for (uint32_t step = 0; step < n; ++step) {
    j = j + 1 == n ? 0 : j + 1;
    const Slot& e = s.slots[j];
    if (!ld(e.used)) break;
    const uint32_t h = home(s, hash_of(ld(e.table), ld(e.key)));
    // e may move into the hole when its home is not in (hole, j] (cyclically).
    const bool home_between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (!home_between) {
      copy_slot(s.slots[hole], e);
      hole = j;
    }
  }
  copy_slot(s.slots[hole], Slot{});
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
  // Lock-free (the file comment): what a probe read counts only if no
  // change ran meanwhile. A change is a few dozen stores, so retrying at
  // once usually finds it done; a lookup that keeps meeting changes waits
  // for the mutex instead of spinning.
  for (int tries = 0; tries < 3; ++tries) {
    const uint32_t before = s.seq.load(std::memory_order_acquire);
    if ((before & 1) != 0) continue;
    const uint32_t i = find(s, h, table, key);
    CachedLocation loc;
    uint8_t mark = 0;
    if (i != UINT32_MAX) {
      const Slot& e = s.slots[i];
      loc.addr = r2::RemoteAddr{ld(e.node), ld(e.region), ld(e.offset)};
      loc.incarnation = ld(e.incarnation);
      mark = ld(e.referenced);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != before) continue;
    if (i == UINT32_MAX) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    // Recently used (CLOCK). Only when not marked yet: a hot entry's line
    // is not written on every hit.
    if (mark != 2) st(s.slots[i].referenced, uint8_t{2});
    *out = loc;
    hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return get_locked(s, h, table, key, out);
}

bool LocationCache::get_locked(Shard& s, uint64_t h, uint32_t table, uint64_t key,
                               CachedLocation* out) {
  {
    std::lock_guard<std::mutex> g(s.mu);
    const uint32_t i = find(s, h, table, key);
    if (i != UINT32_MAX) {
      Slot& e = s.slots[i];
      st(e.referenced, uint8_t{2});
      out->addr = r2::RemoteAddr{ld(e.node), ld(e.region), ld(e.offset)};
      out->incarnation = ld(e.incarnation);
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
  const SeqWrite change(s.seq);
  if (fresh) {
    // Insert first (an empty slot always exists: live <= cap < 2 * cap
    // slots), then evict if the shard went over its capacity.
    const uint32_t n = slot_count(s);
    i = home(s, h);
    while (ld(s.slots[i].used)) i = i + 1 == n ? 0 : i + 1;
    ++s.live;
  }
  Slot& e = s.slots[i];
  store_entry(e, table, key, loc);
  if (!ld(e.used)) st(e.referenced, uint8_t{1});  // one sweep of grace; a hit raises it to 2
  st(e.used, uint8_t{1});
  if (fresh && s.live > s.cap) evict_one(s, table, key);
}

bool LocationCache::fill(uint32_t table, uint64_t key, const CachedLocation& loc) {
  const uint64_t h = hash_of(table, key);
  Shard& s = shard_of(h);
  std::lock_guard<std::mutex> g(s.mu);
  if (s.live >= s.cap || find(s, h, table, key) != UINT32_MAX) return false;
  const SeqWrite change(s.seq);
  const uint32_t n = slot_count(s);
  uint32_t i = home(s, h);
  while (ld(s.slots[i].used)) i = i + 1 == n ? 0 : i + 1;
  ++s.live;
  Slot& e = s.slots[i];
  store_entry(e, table, key, loc);
  st(e.referenced, uint8_t{0});
  st(e.used, uint8_t{1});
  inserts_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void LocationCache::evict_one(Shard& s, uint32_t keep_table, uint64_t keep_key) {
  // CLOCK with a 2-bit count: the hand decrements counts until it meets an
  // entry at 0 other than the one just inserted (at most three sweeps).
  const uint32_t n = slot_count(s);
  for (uint32_t step = 0; step < 3 * n + 3; ++step) {
    const uint32_t at = s.hand;
    Slot& e = s.slots[at];
    s.hand = at + 1 == n ? 0 : at + 1;
    if (!ld(e.used) || (ld(e.key) == keep_key && ld(e.table) == keep_table)) continue;
    if (const uint8_t r = ld(e.referenced); r > 0) {
      st(e.referenced, static_cast<uint8_t>(r - 1));
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
  if (ld(e.node) == seen.addr.node && ld(e.region) == seen.addr.region &&
      ld(e.offset) == seen.addr.offset && ld(e.incarnation) == seen.incarnation) {
    const SeqWrite change(s.seq);
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
  const SeqWrite change(s.seq);
  erase_at(s, i);
  erased_.fetch_add(1, std::memory_order_relaxed);
}

void LocationCache::clear() {
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::lock_guard<std::mutex> g(s.mu);
    const SeqWrite change(s.seq);
    for (uint32_t i = 0; i < slot_count(s); ++i) copy_slot(s.slots[i], Slot{});
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
