// DrTM-KV owner side without a fabric: HashTable against std::map, overflow
// chains, errors, concurrent owner threads; the LocationCache's budget and
// CLOCK eviction; the RPC service's request checks.
#include "store/hash/hash_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "store/hash/hash_service.h"
#include "store/hash/location_cache.h"

namespace drtmx::store::hash {
namespace {

// Aligned zeroed memory standing in for a registered region.
struct Mem {
  // aligned_alloc wants a size that is a multiple of the alignment.
  explicit Mem(size_t n)
      : bytes(n), p(static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) & ~size_t{4095}))) {
    std::memset(p, 0, n);
  }
  ~Mem() { std::free(p); }
  std::span<uint8_t> span() { return {p, bytes}; }
  size_t bytes;
  uint8_t* p;
};

// The test's record allocator: a LIFO free list (a freed slot is the next
// one handed out, which makes reuse — and stale addresses — likely).
class TestSlots : public RecordSlots {
 public:
  TestSlots(size_t slot_bytes, size_t count) : inc_(count, 0) {
    for (size_t i = count; i-- > 0;) free_.push_back(i * slot_bytes);
    slot_bytes_ = slot_bytes;
  }
  Result<SlotGrant> allocate() override {
    std::lock_guard<std::mutex> g(mu_);
    if (free_.empty()) return exhausted("test slots: all record slots in use");
    uint64_t off = free_.back();
    free_.pop_back();
    return SlotGrant{off, ++inc_[off / slot_bytes_]};
  }
  void release(uint64_t off) override {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(off);
  }

 private:
  std::mutex mu_;
  std::vector<uint64_t> free_;
  std::vector<uint32_t> inc_;
  size_t slot_bytes_;
};

constexpr uint32_t kValueSize = 40;

// A value that names its key and a sequence number, with a check word.
std::vector<uint8_t> make_value(uint64_t key, uint64_t seq) {
  std::vector<uint8_t> v(kValueSize, 0);
  uint64_t w[5] = {key, seq, key * 0x9E3779B97F4A7C15ull ^ seq, ~key, seq + 7};
  std::memcpy(v.data(), w, sizeof w);
  return v;
}
// The seq of a self-consistent value of `key`, or UINT64_MAX.
uint64_t value_seq(const uint8_t* p, uint64_t key) {
  uint64_t w[5];
  std::memcpy(w, p, sizeof w);
  if (w[0] != key || w[2] != (key * 0x9E3779B97F4A7C15ull ^ w[1]) || w[3] != ~key ||
      w[4] != w[1] + 7) {
    return UINT64_MAX;
  }
  return w[1];
}

struct Fixture {
  Fixture(HashLayout l, size_t records)
      : layout(l),
        buckets(l.area_bytes() + 4096),
        recs(records * l.slot_bytes()),
        slots(l.slot_bytes(), records) {
    auto t = HashTable::create(buckets.span(), recs.span(), layout, slots);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    if (t) table = std::move(t.value());
  }
  HashLayout layout;
  Mem buckets, recs;
  TestSlots slots;
  std::unique_ptr<HashTable> table;
};

TEST(HashTable, AgainstMapSingleThread) {
  Fixture f(HashLayout::for_capacity(3000, kValueSize), 3000);
  std::map<uint64_t, uint64_t> ref;
  std::mt19937_64 rng(7);
  std::vector<uint8_t> out(kValueSize);
  for (int i = 0; i < 40000; ++i) {
    const uint64_t key = rng() % 4000;
    const int op = static_cast<int>(rng() % 4);
    const bool present = ref.count(key) != 0;
    if (op == 0) {
      auto r = f.table->insert(key, make_value(key, i));
      if (present) {
        EXPECT_EQ(r.status().code(), Code::kAlreadyExists);
      } else if (ref.size() < 3000) {
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        ref[key] = i;
      }
    } else if (op == 1) {
      auto r = f.table->update(key, make_value(key, i));
      EXPECT_EQ(r.is_ok(), present);
      if (present) {
        ref[key] = i;
      } else {
        EXPECT_EQ(r.status().code(), Code::kNotFound);
      }
    } else if (op == 2) {
      Status s = f.table->remove(key);
      EXPECT_EQ(s.is_ok(), present);
      ref.erase(key);
    } else {
      auto r = f.table->get(key, out);
      ASSERT_EQ(r.is_ok(), present) << r.status().to_string();
      if (present) {
        EXPECT_EQ(value_seq(out.data(), key), ref[key]);
      }
    }
  }
  EXPECT_EQ(f.table->stats().keys, ref.size());
  for (uint64_t k = 0; k < 4000; ++k) {
    auto r = f.table->get(k, out);
    ASSERT_EQ(r.is_ok(), ref.count(k) != 0) << k;
  }
}

TEST(HashTable, OverflowChainsAndOutOfOverflow) {
  HashLayout l;
  l.buckets = 1;
  l.overflow = 3;
  l.value_size = kValueSize;
  Fixture f(l, 100);
  // 1 head + 3 overflow buckets hold 24 keys, all in one chain.
  for (uint64_t k = 0; k < 24; ++k) {
    auto r = f.table->insert(k, make_value(k, 1));
    ASSERT_TRUE(r.is_ok()) << k << " " << r.status().to_string();
  }
  EXPECT_EQ(f.table->stats().overflow_used, 3u);
  auto full = f.table->insert(99, make_value(99, 1));
  EXPECT_EQ(full.status().code(), Code::kResourceExhausted);
  EXPECT_NE(full.status().message().find("overflow"), std::string::npos);
  std::vector<uint8_t> out(kValueSize);
  for (uint64_t k = 0; k < 24; ++k) {
    ASSERT_TRUE(f.table->get(k, out).is_ok()) << k;
    EXPECT_EQ(value_seq(out.data(), k), 1u);
  }
  // A freed slot in the last overflow bucket is reused; the chain stays.
  ASSERT_TRUE(f.table->remove(20).is_ok());
  ASSERT_TRUE(f.table->insert(99, make_value(99, 2)).is_ok());
  ASSERT_TRUE(f.table->get(99, out).is_ok());
  EXPECT_FALSE(f.table->get(20, out).is_ok());
  EXPECT_EQ(f.table->stats().overflow_used, 3u);
}

TEST(HashTable, Errors) {
  Fixture f(HashLayout::for_capacity(100, kValueSize), 4);
  std::vector<uint8_t> big(kValueSize + 1, 1);
  EXPECT_EQ(f.table->insert(1, big).status().code(), Code::kOutOfRange);
  for (uint64_t k = 0; k < 4; ++k) ASSERT_TRUE(f.table->insert(k, make_value(k, 0)).is_ok());
  auto r = f.table->insert(10, make_value(10, 0));
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  EXPECT_EQ(f.table->insert(1, make_value(1, 0)).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(f.table->update(10, make_value(10, 0)).status().code(), Code::kNotFound);
  EXPECT_EQ(f.table->remove(10).code(), Code::kNotFound);
  EXPECT_EQ(f.table->update(1, big).status().code(), Code::kOutOfRange);
  // A short value is zero-padded.
  std::vector<uint8_t> shortv(3, 0xAB), out(kValueSize);
  ASSERT_TRUE(f.table->update(1, shortv).is_ok());
  ASSERT_TRUE(f.table->get(1, out).is_ok());
  EXPECT_EQ(out[2], 0xAB);
  EXPECT_EQ(out[3], 0);
  std::vector<uint8_t> small_out(kValueSize - 1);
  EXPECT_EQ(f.table->get(1, small_out).status().code(), Code::kInvalidArgument);
}

TEST(HashTable, CreateRejectsBadGeometry) {
  HashLayout l = HashLayout::for_capacity(1000, kValueSize);
  Mem b(l.area_bytes()), r(1 << 16);
  TestSlots s(l.slot_bytes(), 10);
  l.bucket_offset = 64;  // area no longer fits
  auto t = HashTable::create(b.span(), r.span(), l, s);
  EXPECT_EQ(t.status().code(), Code::kOutOfRange);
  EXPECT_NE(t.status().message().find("does not fit"), std::string::npos);
  l.bucket_offset = 8;
  EXPECT_EQ(HashTable::create(b.span(), r.span(), l, s).status().code(), Code::kInvalidArgument);
  l.bucket_offset = 0;
  l.value_size = 0;
  EXPECT_EQ(HashTable::create(b.span(), r.span(), l, s).status().code(), Code::kInvalidArgument);
}

TEST(HashTable, RecordLockedByTransactionIsBusy) {
  Fixture f(HashLayout::for_capacity(10, kValueSize), 10);
  auto loc = f.table->insert(5, make_value(5, 1));
  ASSERT_TRUE(loc.is_ok());
  auto* lock = reinterpret_cast<uint64_t*>(f.recs.p + loc->offset);
  *lock = lock_word(1, 2, 3);
  EXPECT_EQ(f.table->update(5, make_value(5, 2)).status().code(), Code::kUnavailable);
  EXPECT_EQ(f.table->remove(5).code(), Code::kUnavailable);
  *lock = 0;
  auto u = f.table->update(5, make_value(5, 2));
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->version, 2u);
  EXPECT_EQ(u->offset, loc->offset);
}

TEST(HashTable, TornBucketIsDetected) {
  Fixture f(HashLayout::for_capacity(10, kValueSize), 10);
  ASSERT_TRUE(f.table->insert(5, make_value(5, 1)).is_ok());
  uint8_t* b = f.buckets.p + bucket_index(5, f.layout.buckets) * kBucketBytes;
  Bucket copy;
  std::memcpy(&copy, b, sizeof copy);
  EXPECT_TRUE(bucket_verifies(copy));
  copy.slots[3].key ^= 1;  // a byte of another image
  EXPECT_FALSE(bucket_verifies(copy));
  b[40] ^= 0x10;
  std::vector<uint8_t> out(kValueSize);
  EXPECT_EQ(f.table->get(5, out).status().code(), Code::kUnavailable);
  b[40] ^= 0x10;
  EXPECT_TRUE(f.table->get(5, out).is_ok());
}

// Owner threads change disjoint key sets (insert, update x2, delete,
// repeat) while a reader thread get()s: every value it sees is
// self-consistent and, per key, its sequence numbers never go backwards.
TEST(HashTable, ConcurrentOwnerThreads) {
  constexpr int kWriters = 3;
  constexpr uint64_t kKeysPer = 200;
  Fixture f(HashLayout::for_capacity(kWriters * kKeysPer, kValueSize), kWriters * kKeysPer);
  std::atomic<int> writers_left{kWriters};
  std::vector<std::thread> ts;
  std::vector<std::map<uint64_t, uint64_t>> final_state(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    ts.emplace_back([&, w] {
      std::mt19937_64 rng(w + 100);
      std::vector<uint64_t> seq(kKeysPer, 0);
      for (int i = 0; i < 20000; ++i) {
        const uint64_t j = rng() % kKeysPer;
        const uint64_t key = j * kWriters + w;
        const uint64_t s = ++seq[j];
        Status st;
        switch (s % 4) {
          case 1:
            st = f.table->insert(key, make_value(key, s)).status();
            break;
          case 0:
            st = f.table->remove(key);
            break;
          default:
            st = f.table->update(key, make_value(key, s)).status();
        }
        ASSERT_TRUE(st.is_ok()) << key << " seq " << s << ": " << st.to_string();
      }
      for (uint64_t j = 0; j < kKeysPer; ++j) {
        if (seq[j] % 4 != 0) final_state[w][j * kWriters + w] = seq[j];
      }
      --writers_left;
    });
  }
  uint64_t reads = 0, bad = 0, backwards = 0;
  std::vector<uint64_t> last(kWriters * kKeysPer, 0);
  std::vector<uint8_t> out(kValueSize);
  std::mt19937_64 rng(1);
  while (writers_left.load() > 0 && reads < 2000000) {
    const uint64_t key = rng() % (kWriters * kKeysPer);
    auto r = f.table->get(key, out);
    ++reads;
    if (!r) continue;
    const uint64_t s = value_seq(out.data(), key);
    if (s == UINT64_MAX) {
      ++bad;
      continue;
    }
    if (s < last[key]) ++backwards;
    last[key] = s;
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(backwards, 0u);
  uint64_t keys = 0;
  for (int w = 0; w < kWriters; ++w) {
    for (auto& [k, s] : final_state[w]) {
      auto r = f.table->get(k, out);
      ASSERT_TRUE(r.is_ok()) << k;
      EXPECT_EQ(value_seq(out.data(), k), s);
    }
    keys += final_state[w].size();
  }
  EXPECT_EQ(f.table->stats().keys, keys);
}

TEST(LocationCache, BudgetAndClockEviction) {
  LocationCacheOptions o;
  o.budget_bytes = 64 * LocationCache::kEntryBytes;
  o.shards = 1;
  auto c = LocationCache::create(o);
  ASSERT_TRUE(c.is_ok());
  LocationCache& cache = **c;
  EXPECT_EQ(cache.capacity(), 64u);
  for (uint64_t k = 0; k < 64; ++k) cache.put(1, k, {{1, 2, k * 64}, 1});
  EXPECT_EQ(cache.size(), 64u);
  CachedLocation loc;
  // Touch the even keys; new inserts must evict odd (unreferenced) ones first.
  for (uint64_t k = 0; k < 64; k += 2) ASSERT_TRUE(cache.get(1, k, &loc));
  for (uint64_t k = 100; k < 132; ++k) cache.put(1, k, {{1, 2, k * 64}, 1});
  EXPECT_EQ(cache.size(), 64u);
  for (uint64_t k = 0; k < 64; k += 2) EXPECT_TRUE(cache.get(1, k, &loc)) << k;
  for (uint64_t k = 1; k < 64; k += 2) EXPECT_FALSE(cache.get(1, k, &loc)) << k;
  EXPECT_EQ(cache.stats().evictions, 32u);
  // Way more puts than capacity: the size never passes the budget.
  for (uint64_t k = 1000; k < 5000; ++k) cache.put(2, k, {{0, 0, k}, 0});
  EXPECT_EQ(cache.size(), 64u);
  // Tables are separate key spaces; erase_if_same keeps a fresher entry.
  cache.put(3, 7, {{1, 2, 64}, 1});
  cache.put(4, 7, {{1, 2, 128}, 1});
  cache.erase_if_same(3, 7, {{1, 2, 64}, 2});  // other incarnation: kept
  ASSERT_TRUE(cache.get(3, 7, &loc));
  EXPECT_EQ(loc.addr.offset, 64u);
  cache.erase_if_same(3, 7, {{1, 2, 64}, 1});
  EXPECT_FALSE(cache.get(3, 7, &loc));
  ASSERT_TRUE(cache.get(4, 7, &loc));
  EXPECT_EQ(loc.addr.offset, 128u);
}

// fill() (the warm-up's insert): adds only absent keys while the shard has
// room, never replaces what a GET put, never evicts; its entries have no
// CLOCK grace, so a later put into the full shard evicts them before the
// entries GETs used.
TEST(LocationCache, FillAddsOnlyAbsentKeysWhileThereIsRoom) {
  LocationCacheOptions o;
  o.budget_bytes = 64 * LocationCache::kEntryBytes;
  o.shards = 1;
  auto c = LocationCache::create(o);
  ASSERT_TRUE(c.is_ok());
  LocationCache& cache = **c;
  cache.put(1, 5, {{1, 2, 6400}, 9});  // what a GET found: fill must keep it
  uint64_t added = 0;
  for (uint64_t k = 0; k < 100; ++k) added += cache.fill(1, k, {{1, 2, k * 64}, 1}) ? 1 : 0;
  EXPECT_EQ(added, 63u) << "fill must stop at the capacity (64 entries, one put before)";
  EXPECT_EQ(cache.size(), 64u);
  EXPECT_EQ(cache.stats().evictions, 0u) << "fill must never evict";
  CachedLocation loc;
  ASSERT_TRUE(cache.get(1, 5, &loc));
  EXPECT_EQ(loc.addr.offset, 6400u) << "fill replaced an entry a GET had put";
  EXPECT_EQ(loc.incarnation, 9u);
  EXPECT_FALSE(cache.fill(1, 5, {{1, 2, 320}, 1}));
  for (uint64_t k = 64; k < 100; ++k) EXPECT_FALSE(cache.get(1, k, &loc)) << k;
  // Use half of the filled keys; 31 new puts evict unused filled entries only.
  for (uint64_t k = 0; k < 64; k += 2) ASSERT_TRUE(cache.get(1, k, &loc)) << k;
  for (uint64_t k = 1000; k < 1031; ++k) cache.put(1, k, {{1, 2, k * 64}, 1});
  EXPECT_EQ(cache.stats().evictions, 31u);
  for (uint64_t k = 0; k < 64; k += 2) EXPECT_TRUE(cache.get(1, k, &loc)) << k;
  ASSERT_TRUE(cache.get(1, 5, &loc));
  // After an erase there is room again.
  cache.erase(1, 5);
  EXPECT_TRUE(cache.fill(1, 5, {{1, 2, 320}, 1}));
  EXPECT_FALSE(cache.fill(1, 7, {{1, 2, 448}, 1}));
}

TEST(LocationCache, ShardedBudgetAndErrors) {
  LocationCacheOptions o;
  o.budget_bytes = 1000 * LocationCache::kEntryBytes + 5;
  o.shards = 16;
  auto c = LocationCache::create(o);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ((*c)->capacity(), 1000u);
  for (uint64_t k = 0; k < 10000; ++k) (*c)->put(1, k, {{0, 0, k}, 0});
  EXPECT_EQ((*c)->size(), 1000u);
  o.budget_bytes = 10;
  auto bad = LocationCache::create(o);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("without a cache"), std::string::npos);
}

// The open-addressing index against a reference map: with room for every
// key the cache answers exactly like the map (puts, replacements, erases,
// erase_if_same with stale and fresh locations, backward-shift deletion in
// long probe runs); with a small budget every hit is the last location put
// for that key and size() stays within capacity().
TEST(LocationCache, MatchesReferenceMapUnderRandomOperations) {
  for (size_t budget_entries : {size_t{40000}, size_t{257}}) {
    LocationCacheOptions o;
    o.budget_bytes = budget_entries * LocationCache::kEntryBytes;
    o.shards = 4;
    auto c = LocationCache::create(o);
    ASSERT_TRUE(c.is_ok());
    LocationCache& cache = **c;
    std::map<std::pair<uint32_t, uint64_t>, CachedLocation> ref;
    std::mt19937_64 rng(budget_entries);
    const bool exact = budget_entries > 20000;
    for (int op = 0; op < 200000; ++op) {
      const uint32_t table = static_cast<uint32_t>(rng() % 3);
      const uint64_t key = rng() % 6000;
      const auto k = std::make_pair(table, key);
      CachedLocation got;
      switch (rng() % 4) {
        case 0:
        case 1: {
          CachedLocation l;
          l.addr = r2::RemoteAddr{static_cast<r2::NodeId>(rng() % 4), 3, (rng() % 100000) * 64};
          l.incarnation = static_cast<uint32_t>(rng() % 7 + 1);
          cache.put(table, key, l);
          ref[k] = l;
          break;
        }
        case 2: {
          const bool hit = cache.get(table, key, &got);
          auto it = ref.find(k);
          if (exact) {
            ASSERT_EQ(hit, it != ref.end()) << table << "/" << key;
          }
          if (hit) {
            ASSERT_NE(it, ref.end());
            ASSERT_EQ(got.addr.offset, it->second.addr.offset);
            ASSERT_EQ(got.addr.node, it->second.addr.node);
            ASSERT_EQ(got.incarnation, it->second.incarnation);
          }
          break;
        }
        case 3: {
          auto it = ref.find(k);
          if (it == ref.end()) {
            cache.erase(table, key);
            break;
          }
          CachedLocation seen = it->second;
          if (rng() % 2) seen.incarnation += 100;  // stale: must not erase
          cache.erase_if_same(table, key, seen);
          if (seen.incarnation == it->second.incarnation) {
            ref.erase(it);
            ASSERT_FALSE(cache.get(table, key, &got));
          } else if (exact) {
            ASSERT_TRUE(cache.get(table, key, &got));
          }
          break;
        }
      }
      ASSERT_LE(cache.size(), cache.capacity());
    }
    if (exact) {
      ASSERT_EQ(cache.size(), ref.size());
      for (auto& [k, l] : ref) {
        CachedLocation got;
        ASSERT_TRUE(cache.get(k.first, k.second, &got));
        ASSERT_EQ(got.addr.offset, l.addr.offset);
      }
    } else {
      EXPECT_GT(cache.stats().evictions, 0u);
    }
  }
}

// Lock-free lookups racing changes: two threads put, replace and erase
// entries of a small cache (every put into a full shard evicts, every
// erase shifts a probe run back) while two threads look keys up. Every
// location put for key k is a function of k and a generation g — node,
// region, offset and incarnation all derive from both — so a lookup that
// kept fields of two different entries or of a half-written slot returns a
// location no put ever made for its key. Bounded by operation counts.
TEST(LocationCache, LookupsRacingChangesReturnOnlyWholeEntries) {
  LocationCacheOptions o;
  o.budget_bytes = 96 * LocationCache::kEntryBytes;
  o.shards = 2;
  auto c = LocationCache::create(o);
  ASSERT_TRUE(c.is_ok());
  LocationCache& cache = **c;
  constexpr uint64_t kKeys = 400;
  auto location = [](uint64_t k, uint32_t g) {
    CachedLocation l;
    l.addr = r2::RemoteAddr{static_cast<r2::NodeId>((k + g) % 5),
                            static_cast<r2::RegionId>((k * 7 + g) % 11), (k << 32) | g};
    l.incarnation = static_cast<uint32_t>(k * 13 + g);
    return l;
  };
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, hits{0};
  std::vector<std::thread> ts;
  for (int w = 0; w < 2; ++w) {
    ts.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      for (uint32_t op = 0; op < 300000; ++op) {
        const uint64_t k = rng() % kKeys;
        const uint32_t g = static_cast<uint32_t>(rng() % 1000);
        if (rng() % 4 == 0) {
          cache.erase(static_cast<uint32_t>(k % 3), k);
        } else {
          cache.put(static_cast<uint32_t>(k % 3), k, location(k, g));
        }
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    ts.emplace_back([&, r] {
      std::mt19937_64 rng(100 + r);
      // Until both writers are done, and at least this many lookups.
      for (uint32_t op = 0; op < 600000 || !stop.load(std::memory_order_relaxed); ++op) {
        if (op >= 20000000) break;
        const uint64_t k = rng() % kKeys;
        CachedLocation got;
        if (!cache.get(static_cast<uint32_t>(k % 3), k, &got)) continue;
        hits.fetch_add(1, std::memory_order_relaxed);
        const uint32_t g = static_cast<uint32_t>(got.addr.offset & 0xffffffffu);
        const CachedLocation want = location(k, g);
        if ((got.addr.offset >> 32) != k || g >= 1000 || got.addr.node != want.addr.node ||
            got.addr.region != want.addr.region || got.incarnation != want.incarnation) {
          bad.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  ts[0].join();
  ts[1].join();
  stop.store(true);
  ts[2].join();
  ts[3].join();
  EXPECT_EQ(bad.load(), 0u) << "lookups returned locations no put made for their key";
  EXPECT_GT(hits.load(), 1000u);
  EXPECT_GT(cache.stats().evictions, 0u);
}

TEST(HashService, RejectsMalformedRequests) {
  Fixture f(HashLayout::for_capacity(10, kValueSize), 10);
  HashService svc;
  ASSERT_TRUE(svc.add(7, f.table.get()).is_ok());
  EXPECT_EQ(svc.add(7, f.table.get()).code(), Code::kAlreadyExists);
  std::vector<uint8_t> reply;
  uint8_t tiny[4] = {};
  EXPECT_EQ(svc.handle(kRpcHashGet, tiny, reply).code(), Code::kInvalidArgument);
  HashReq h;
  h.table = 8;
  h.key = 1;
  std::vector<uint8_t> req(sizeof h);
  std::memcpy(req.data(), &h, sizeof h);
  EXPECT_EQ(svc.handle(kRpcHashGet, req, reply).code(), Code::kNotFound);
  h.table = 7;
  h.value_len = 5;  // but carries none
  std::memcpy(req.data(), &h, sizeof h);
  EXPECT_EQ(svc.handle(kRpcHashInsert, req, reply).code(), Code::kInvalidArgument);
  // A well-formed GET of an absent key is a kNotFound status byte.
  h.value_len = 0;
  std::memcpy(req.data(), &h, sizeof h);
  ASSERT_TRUE(svc.handle(kRpcHashGet, req, reply).is_ok());
  ASSERT_EQ(reply.size(), sizeof(HashReply));
  EXPECT_EQ(reply[0], static_cast<uint8_t>(HashStatus::kNotFound));
}

}  // namespace
}  // namespace drtmx::store::hash
