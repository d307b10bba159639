// DrTM-KV over the fabric: remote one-sided GETs (location cache, bucket
// walk, RPC fallback) against owner-side changes, on an in-process shm
// cluster (node 0 owns the partition; other nodes are clients).
#include "store/hash/hash_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "r2/support/worker_cluster.h"
#include "store/hash/hash_service.h"
#include "store/hash/hash_table.h"

namespace drtmx::store::hash {
namespace {

using r2::Co;
using r2::Worker;
using r2::testing::InProcCluster;
using r2::testing::run_workers;

constexpr r2::RegionId kBucketRegion = 1;
constexpr r2::RegionId kRecordRegion = 2;
constexpr r2::RegionId kScratchRegion = 3;
constexpr uint32_t kValueSize = 40;
constexpr uint32_t kTable = 9;

// The test's record allocator: LIFO free list, so a freed slot is the next
// one handed out (reuse — and stale cached addresses — are the common case).
class TestSlots : public RecordSlots {
 public:
  TestSlots(size_t slot_bytes, size_t count) : inc_(count, 0), slot_bytes_(slot_bytes) {
    for (size_t i = count; i-- > 0;) free_.push_back(i * slot_bytes);
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

std::vector<uint8_t> make_value(uint64_t key, uint64_t seq) {
  std::vector<uint8_t> v(kValueSize, 0);
  uint64_t w[5] = {key, seq, key * 0x9E3779B97F4A7C15ull ^ seq, ~key, seq + 7};
  std::memcpy(v.data(), w, sizeof w);
  return v;
}
uint64_t value_seq(const uint8_t* p, uint64_t key) {
  uint64_t w[5];
  std::memcpy(w, p, sizeof w);
  if (w[0] != key || w[2] != (key * 0x9E3779B97F4A7C15ull ^ w[1]) || w[3] != ~key ||
      w[4] != w[1] + 7) {
    return UINT64_MAX;
  }
  return w[1];
}

// A cluster whose node 0 owns one hash partition of `capacity` keys.
struct Partition {
  Partition(uint16_t nodes, uint16_t threads, uint16_t cors, uint64_t capacity, size_t records = 0)
      : threads(threads), cors(cors) {
    remote.table = kTable;
    remote.node = 0;
    remote.layout = HashLayout::for_capacity(capacity, kValueSize);
    remote.layout.bucket_region = kBucketRegion;
    remote.layout.record_region = kRecordRegion;
    if (records == 0) records = capacity;
    stride = (HashClient::scratch_bytes(remote.layout) + 63) & ~size_t{63};
    cluster = InProcCluster::make(nodes, threads,
                                  {{kBucketRegion, remote.layout.area_bytes()},
                                   {kRecordRegion, records * remote.layout.slot_bytes()},
                                   {kScratchRegion, size_t{threads} * cors * stride}});
    EXPECT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
    slots = std::make_unique<TestSlots>(remote.layout.slot_bytes(), records);
    auto t =
        HashTable::create({cluster->base(0, kBucketRegion), remote.layout.area_bytes()},
                          {cluster->base(0, kRecordRegion), records * remote.layout.slot_bytes()},
                          remote.layout, *slots);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    table = std::move(t.value());
    EXPECT_TRUE(service.add(kTable, table.get()).is_ok());
  }
  std::span<uint8_t> scratch(Worker& w, uint16_t cor) {
    return {cluster->base(w.node(), kScratchRegion) + (size_t{w.thread()} * cors + cor) * stride,
            stride};
  }
  void serve(Worker& w) {
    if (w.node() == 0) {
      ASSERT_TRUE(service.register_handlers(w).is_ok());
    }
  }
  std::unique_ptr<LocationCache> cache(size_t entries) {
    LocationCacheOptions o;
    o.budget_bytes = entries * LocationCache::kEntryBytes;
    o.shards = 4;
    auto c = LocationCache::create(o);
    EXPECT_TRUE(c.is_ok());
    return std::move(c.value());
  }

  uint16_t threads, cors;
  size_t stride = 0;
  HashRemote remote;
  std::unique_ptr<InProcCluster> cluster;
  std::unique_ptr<TestSlots> slots;
  std::unique_ptr<HashTable> table;
  HashService service;
};

r2::WorkerConfig wcfg(uint16_t cors) {
  r2::WorkerConfig w;
  w.coroutines = cors;
  w.stack_bytes = 256 * 1024;
  return w;
}

// Per key, writer ops are numbered 1, 2, ... with a fixed kind: seq % 4 == 1
// insert, 2 and 3 update, 0 delete. So the key exists after op s iff
// s % 4 != 0. `started` is raised before op s begins and `committed` after
// it completes; a lookup that read committed = lo before and started = hi
// after may return a value of seq s only for lo <= s <= hi with s % 4 != 0,
// and "not found" only if some op in [lo, hi] left the key absent.
struct History {
  explicit History(size_t keys) : started(keys), committed(keys) {}
  std::vector<std::atomic<uint64_t>> started, committed;
};

bool absent_in_window(uint64_t lo, uint64_t hi) {
  return (hi / 4) * 4 >= lo;
}

TEST(HashClient, ConcurrentOwnerChangesAndRemoteLookups) {
  // Node 0: 2 owner threads change keys directly (and serve RPCs). Node 1:
  // 2 threads x 2 reader coroutines sharing a small cache (evictions).
  // Node 2: thread 0 reads (one coroutine uncached with bucket walks, one
  // cached with RPC on a miss), thread 1 changes its own keys through RPCs.
  constexpr uint64_t kKeys = 600;
  constexpr int kGetsPerReader = 2500;
  constexpr int kMaxWrites = 40000;
  Partition s(3, 2, 2, kKeys);
  auto cache = s.cache(120);
  auto cache2 = s.cache(1000);
  History h(kKeys);
  std::atomic<int> readers_left{6}, writers_left{3};
  std::atomic<uint64_t> violations{0}, gets{0}, found{0}, stale{0}, torn{0}, fallbacks{0},
      writes{0};
  std::mutex fail_mu;
  std::string first_failure;
  auto fail = [&](const std::string& m) {
    ++violations;
    std::lock_guard<std::mutex> g(fail_mu);
    if (first_failure.empty()) first_failure = m;
  };
  // Writer w owns keys with key % 3 == w (w = 0, 1 on node 0; 2 via RPC).
  auto writer = [&](Co& co, int w, HashClient* rpc) {
    std::mt19937_64 rng(1000 + w);
    std::vector<uint64_t> seq(kKeys, 0);
    for (int i = 0; i < kMaxWrites && readers_left.load() > 0; ++i) {
      const uint64_t key = (rng() % (kKeys / 3)) * 3 + w;
      const uint64_t sq = ++seq[key];
      h.started[key].store(sq, std::memory_order_seq_cst);
      Status st;
      const auto v = make_value(key, sq);
      if (rpc != nullptr) {
        st = sq % 4 == 1   ? rpc->insert(co, s.remote, key, v).status()
             : sq % 4 == 0 ? rpc->remove(co, s.remote, key)
                           : rpc->update(co, s.remote, key, v).status();
      } else {
        st = sq % 4 == 1   ? s.table->insert(key, v).status()
             : sq % 4 == 0 ? s.table->remove(key)
                           : s.table->update(key, v).status();
      }
      if (!st.is_ok()) fail("write key " + std::to_string(key) + ": " + st.to_string());
      h.committed[key].store(sq, std::memory_order_seq_cst);
      ++writes;
      co.yield();
    }
    --writers_left;
  };
  // `sweep`: afterwards get every key again, so the readers of the small
  // cache surely meet more present keys than it holds (the paced reads alone
  // may not, when the OS starves the writers).
  auto reader = [&](Co& co, HashClient& c, uint64_t seed, bool sweep) {
    // Paced by the writers (get i waits for i / 2 writes since this reader
    // started), so reads and writes overlap whatever the OS scheduling does
    // with the threads; bounded by a deadline and by the writers' own bound.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const uint64_t base = writes.load();
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> last(kKeys, 0);
    std::vector<uint8_t> out(kValueSize);
    for (int i = 0; i < kGetsPerReader; ++i) {
      while (writes.load() < base + i / 2 && writers_left.load() > 0 &&
             std::chrono::steady_clock::now() < until) {
        co.yield_idle();
      }
      const uint64_t key = rng() % kKeys;
      const uint64_t lo = h.committed[key].load(std::memory_order_seq_cst);
      auto r = c.get(co, s.remote, key, out);
      const uint64_t hi = h.started[key].load(std::memory_order_seq_cst);
      if (!r) {
        fail("get " + std::to_string(key) + ": " + r.status().to_string());
        continue;
      }
      if (r->found) {
        const uint64_t sq = value_seq(out.data(), key);
        if (sq == UINT64_MAX || sq < lo || sq > hi || sq % 4 == 0 || sq < last[key]) {
          fail("key " + std::to_string(key) + " returned seq " + std::to_string(sq) + " outside [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "] or below " +
               std::to_string(last[key]));
        }
        last[key] = sq;
        ++found;
      } else if (!absent_in_window(lo, hi)) {
        fail("key " + std::to_string(key) + " not found but present throughout [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
      }
      ++gets;
    }
    // Present keys at any instant are about half of kKeys (some keys of the
    // RPC writer are hardly written), only some 30 % when the owner threads
    // were starved: pass again until the small cache has evicted (bounded).
    for (int pass = 0; sweep && pass < 50 && cache->stats().evictions == 0 &&
                       std::chrono::steady_clock::now() < until;
         ++pass) {
      for (uint64_t key = 0; key < kKeys; ++key) {
        auto r = c.get(co, s.remote, key, out);
        if (!r) fail("sweep get " + std::to_string(key) + ": " + r.status().to_string());
      }
      co.yield_idle();
    }
    stale += c.stats().cache_stale;
    torn += c.stats().torn;
    fallbacks += c.stats().fallbacks;
    --readers_left;
  };
  auto run = run_workers(*s.cluster, wcfg(2), [&](Worker& w) {
    s.serve(w);
    if (w.node() == 0) {
      const int id = w.thread();
      ASSERT_TRUE(w.spawn([&, id](Co& co) { writer(co, id, nullptr); }).is_ok());
    } else if (w.node() == 1) {
      for (uint16_t c = 0; c < 2; ++c) {
        auto sc = s.scratch(w, c);
        const uint64_t seed = w.thread() * 10 + c;
        ASSERT_TRUE(w.spawn([&, sc, seed](Co& co) {
                       HashClient cl(cache.get(), sc);
                       reader(co, cl, seed, true);
                     }).is_ok());
      }
    } else if (w.thread() == 0) {
      for (uint16_t c = 0; c < 2; ++c) {
        auto sc = s.scratch(w, c);
        ASSERT_TRUE(w.spawn([&, sc, c](Co& co) {
                       // Coroutine 1 caches, refetching misses by RPC.
                       HashClientOptions o;
                       o.miss_path = MissPath::kRpc;
                       HashClient cl(c == 0 ? nullptr : cache2.get(), sc, o);
                       reader(co, cl, 500 + c, false);
                     }).is_ok());
      }
    } else {
      auto sc = s.scratch(w, 0);
      ASSERT_TRUE(w.spawn([&, sc](Co& co) {
                     HashClient cl(nullptr, sc);
                     writer(co, 2, &cl);
                   }).is_ok());
    }
  });
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(violations.load(), 0u) << first_failure;
  EXPECT_EQ(gets.load(), 6u * kGetsPerReader);
  EXPECT_GT(found.load(), gets.load() / 10);
  EXPECT_GT(stale.load(), 0u) << "deletes and reinserts should have staled some cache entries";
  EXPECT_LE(cache->size(), cache->capacity());
  EXPECT_GT(cache->stats().evictions, 0u);
  std::printf(
      "[ stats    ] writes %llu gets %llu found %llu stale %llu torn %llu fallbacks %llu "
      "evictions %llu\n",
      (unsigned long long)writes.load(), (unsigned long long)gets.load(),
      (unsigned long long)found.load(), (unsigned long long)stale.load(),
      (unsigned long long)torn.load(), (unsigned long long)fallbacks.load(),
      (unsigned long long)cache->stats().evictions);
}

TEST(HashClient, StaleCacheEntriesAreDetectedAndRefetched) {
  Partition s(2, 1, 1, 100);
  auto cache = s.cache(100);
  auto run = run_workers(*s.cluster, wcfg(1), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   HashClient c(cache.get(), s.scratch(w, 0));
                   std::vector<uint8_t> out(kValueSize);
                   HashTable& t = *s.table;
                   ASSERT_TRUE(t.insert(5, make_value(5, 1)).is_ok());
                   auto g = c.get(co, s.remote, 5, out);
                   ASSERT_TRUE(g.is_ok() && g->found) << g.status().to_string();
                   EXPECT_EQ(g->path, GetPath::kBucket);
                   const r2::RemoteAddr first = g->addr;
                   c.reset_stats();
                   g = c.get(co, s.remote, 5, out);
                   ASSERT_TRUE(g->found);
                   EXPECT_EQ(g->path, GetPath::kCache);
                   EXPECT_EQ(c.stats().reads, 1u);

                   // Slot reused by another key: kWrongKey -> stale -> bucket walk.
                   ASSERT_TRUE(t.remove(5).is_ok());
                   ASSERT_TRUE(t.insert(6, make_value(6, 1)).is_ok());
                   ASSERT_TRUE(t.insert(5, make_value(5, 2)).is_ok());
                   c.reset_stats();
                   g = c.get(co, s.remote, 5, out);
                   ASSERT_TRUE(g.is_ok() && g->found);
                   EXPECT_EQ(g->path, GetPath::kBucket);
                   EXPECT_NE(g->addr.offset, first.offset);
                   EXPECT_EQ(value_seq(out.data(), 5), 2u);
                   EXPECT_EQ(c.stats().cache_stale, 1u);
                   EXPECT_EQ(c.stats().reads, 3u);  // stale record, bucket, record
                   g = c.get(co, s.remote, 5, out);
                   EXPECT_EQ(g->path, GetPath::kCache);

                   // Same slot, same key, new incarnation: kWrongIncarnation.
                   const uint64_t at = g->addr.offset;
                   ASSERT_TRUE(t.remove(5).is_ok());
                   auto again = t.insert(5, make_value(5, 3));
                   ASSERT_TRUE(again.is_ok());
                   EXPECT_EQ(again->offset, at);
                   c.reset_stats();
                   g = c.get(co, s.remote, 5, out);
                   ASSERT_TRUE(g->found);
                   EXPECT_EQ(g->path, GetPath::kBucket);
                   EXPECT_EQ(g->incarnation, again->incarnation);
                   EXPECT_EQ(value_seq(out.data(), 5), 3u);
                   EXPECT_EQ(c.stats().cache_stale, 1u);

                   // Deleted: the cached record says kDeleted -> not found.
                   ASSERT_TRUE(t.remove(5).is_ok());
                   c.reset_stats();
                   g = c.get(co, s.remote, 5, out);
                   ASSERT_TRUE(g.is_ok());
                   EXPECT_FALSE(g->found);
                   EXPECT_EQ(c.stats().cache_stale, 1u);
                   CachedLocation loc;
                   EXPECT_FALSE(cache->get(kTable, 5, &loc));

                   // An RPC lookup returns the address and fills the cache.
                   ASSERT_TRUE(t.insert(7, make_value(7, 4)).is_ok());
                   g = c.get_rpc(co, s.remote, 7, out);
                   ASSERT_TRUE(g.is_ok() && g->found);
                   EXPECT_EQ(g->path, GetPath::kRpc);
                   EXPECT_EQ(value_seq(out.data(), 7), 4u);
                   g = c.get(co, s.remote, 7, out);
                   EXPECT_EQ(g->path, GetPath::kCache);
                   g = c.get_rpc(co, s.remote, 8, out);
                   ASSERT_TRUE(g.is_ok());
                   EXPECT_FALSE(g->found);

                   // MissPath::kRpc: a stale hit is refetched by the owner.
                   HashClientOptions o;
                   o.miss_path = MissPath::kRpc;
                   HashClient rc(cache.get(), s.scratch(w, 0), o);
                   ASSERT_TRUE(t.remove(7).is_ok());
                   ASSERT_TRUE(t.insert(7, make_value(7, 5)).is_ok());
                   g = rc.get(co, s.remote, 7, out);
                   ASSERT_TRUE(g.is_ok() && g->found);
                   EXPECT_EQ(g->path, GetPath::kRpc);
                   EXPECT_EQ(value_seq(out.data(), 7), 5u);
                   EXPECT_EQ(rc.stats().cache_stale, 1u);
                   EXPECT_EQ(rc.stats().reads, 1u);
                   EXPECT_EQ(rc.stats().rpc_gets, 1u);
                   EXPECT_EQ(rc.stats().fallbacks, 0u);
                   g = rc.get(co, s.remote, 7, out);
                   EXPECT_EQ(g->path, GetPath::kCache);
                   g = rc.get(co, s.remote, 12345, out);  // miss -> RPC -> absent
                   ASSERT_TRUE(g.is_ok());
                   EXPECT_FALSE(g->found);
                   EXPECT_EQ(g->path, GetPath::kRpc);
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
}

TEST(HashClient, RpcDynamicOperationsAndErrors) {
  Partition s(2, 2, 1, 100, /*records=*/8);
  auto cache = s.cache(100);
  auto run = run_workers(*s.cluster, wcfg(1), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1 || w.thread() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   HashClient c(cache.get(), s.scratch(w, 0));
                   std::vector<uint8_t> out(kValueSize);
                   for (uint64_t k = 0; k < 8; ++k) {
                     auto r = c.insert(co, s.remote, k, make_value(k, 1));
                     ASSERT_TRUE(r.is_ok()) << r.status().to_string();
                   }
                   auto r = c.insert(co, s.remote, 100, make_value(100, 1));
                   EXPECT_EQ(r.status().code(), Code::kResourceExhausted) << r.status().to_string();
                   EXPECT_EQ(c.insert(co, s.remote, 3, make_value(3, 1)).status().code(),
                             Code::kAlreadyExists);
                   std::vector<uint8_t> big(kValueSize + 8, 1);
                   EXPECT_EQ(c.update(co, s.remote, 3, big).status().code(), Code::kOutOfRange);
                   EXPECT_EQ(c.update(co, s.remote, 50, make_value(50, 1)).status().code(),
                             Code::kNotFound);
                   EXPECT_EQ(c.remove(co, s.remote, 50).code(), Code::kNotFound);
                   // Inserts filled the cache: one READ per GET.
                   c.reset_stats();
                   for (uint64_t k = 0; k < 8; ++k) {
                     auto g = c.get(co, s.remote, k, out);
                     ASSERT_TRUE(g.is_ok() && g->found);
                     EXPECT_EQ(g->path, GetPath::kCache);
                   }
                   EXPECT_EQ(c.stats().reads, 8u);
                   ASSERT_TRUE(c.update(co, s.remote, 3, make_value(3, 2)).is_ok());
                   auto g = c.get(co, s.remote, 3, out);
                   EXPECT_EQ(value_seq(out.data(), 3), 2u);
                   EXPECT_EQ(g->version, 2u);
                   ASSERT_TRUE(c.remove(co, s.remote, 3).is_ok());
                   g = c.get(co, s.remote, 3, out);
                   EXPECT_FALSE(g->found);
                   // Unknown table: an error reply that names it.
                   HashRemote other = s.remote;
                   other.table = 77;
                   auto e = c.get_rpc(co, other, 1, out);
                   EXPECT_FALSE(e.is_ok());
                   EXPECT_NE(e.status().message().find("77"), std::string::npos);
                   // Too small a value buffer / scratch.
                   std::vector<uint8_t> tiny(4);
                   EXPECT_EQ(c.get(co, s.remote, 1, tiny).status().code(), Code::kInvalidArgument);
                   HashClient bad(nullptr, s.scratch(w, 0).subspan(0, 64));
                   EXPECT_EQ(bad.get(co, s.remote, 1, out).status().code(), Code::kInvalidArgument);
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
}

TEST(HashClient, TornCopiesAreRetriedThenFallBackToRpc) {
  Partition s(2, 1, 1, 100);
  ASSERT_TRUE(s.table->insert(5, make_value(5, 1)).is_ok());
  uint8_t* bucket = s.cluster->base(0, kBucketRegion) +
                    size_t{bucket_index(5, s.remote.layout.buckets)} * kBucketBytes;
  auto run = run_workers(*s.cluster, wcfg(1), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   HashClientOptions o;
                   o.max_torn_reads = 3;
                   o.busy_retries = 2;
                   o.busy_wait_us = 0;
                   HashClient c(nullptr, s.scratch(w, 0), o);
                   std::vector<uint8_t> out(kValueSize);
                   bucket[60] ^= 0x04;  // as if a writer stalled mid-rewrite
                   auto g = c.get(co, s.remote, 5, out);
                   EXPECT_EQ(g.status().code(), Code::kUnavailable) << g.status().to_string();
                   EXPECT_EQ(c.stats().torn, 4u);
                   EXPECT_EQ(c.stats().fallbacks, 1u);
                   EXPECT_EQ(c.stats().rpc_gets, 1u);
                   bucket[60] ^= 0x04;
                   g = c.get(co, s.remote, 5, out);
                   ASSERT_TRUE(g.is_ok() && g->found);
                   EXPECT_EQ(value_seq(out.data(), 5), 1u);
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
}

TEST(HashClient, OverflowChainsAreFollowedRemotely) {
  Partition s(2, 1, 1, 100);
  // Keys of one head bucket: more than a bucket holds, so the chain overflows.
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; keys.size() < 3 * kSlotsPerBucket; ++k) {
    if (bucket_index(k, s.remote.layout.buckets) == 0) keys.push_back(k);
  }
  for (uint64_t k : keys) ASSERT_TRUE(s.table->insert(k, make_value(k, k)).is_ok());
  EXPECT_EQ(s.table->stats().overflow_used, 2u);
  auto run = run_workers(*s.cluster, wcfg(1), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   HashClient c(nullptr, s.scratch(w, 0));
                   std::vector<uint8_t> out(kValueSize);
                   for (size_t i = 0; i < keys.size(); ++i) {
                     c.reset_stats();
                     auto g = c.get(co, s.remote, keys[i], out);
                     ASSERT_TRUE(g.is_ok() && g->found) << keys[i];
                     EXPECT_EQ(value_seq(out.data(), keys[i]), keys[i]);
                     // head, then one READ per overflow bucket, then the record
                     EXPECT_EQ(c.stats().reads, 2 + i / kSlotsPerBucket) << i;
                   }
                   c.reset_stats();
                   auto g = c.get(co, s.remote, keys.back() + 1000003, out);
                   ASSERT_TRUE(g.is_ok());
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
}

// One hot key updated in place while its bucket is rewritten by inserts and
// deletes of neighbours: remote readers (cached and not) and a reader on
// the owner node itself (loopback READs) never return a torn or old value.
TEST(HashClient, HotKeyUpdatesAreNeverSeenTorn) {
  constexpr int kGets = 4000;
  Partition s(2, 2, 2, 100);
  const uint64_t hot = 42;
  std::vector<uint64_t> neighbours;
  for (uint64_t k = 1000; neighbours.size() < kSlotsPerBucket + 2; ++k) {
    if (bucket_index(k, s.remote.layout.buckets) == bucket_index(hot, s.remote.layout.buckets)) {
      neighbours.push_back(k);
    }
  }
  ASSERT_TRUE(s.table->insert(hot, make_value(hot, 1)).is_ok());
  auto cache = s.cache(100);
  std::atomic<uint64_t> started{1}, committed{1};
  std::atomic<int> readers_left{4};
  std::atomic<uint64_t> violations{0}, torn{0}, writes{0};
  auto reader = [&](Co& co, HashClient& c) {
    std::vector<uint8_t> out(kValueSize);
    uint64_t last = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const uint64_t base = writes.load();
    for (int i = 0; i < kGets; ++i) {
      while (writes.load() < base + i / 4 && std::chrono::steady_clock::now() < until) {
        co.yield_idle();
      }
      const uint64_t lo = committed.load();
      auto g = c.get(co, s.remote, hot, out);
      const uint64_t hi = started.load();
      const uint64_t sq = g.is_ok() && g->found ? value_seq(out.data(), hot) : UINT64_MAX;
      if (sq == UINT64_MAX || sq < lo || sq > hi || sq < last) ++violations;
      last = sq;
    }
    torn += c.stats().torn;
    --readers_left;
  };
  auto run = run_workers(*s.cluster, wcfg(2), [&](Worker& w) {
    s.serve(w);
    if (w.node() == 0 && w.thread() == 0) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     std::mt19937_64 rng(3);
                     for (uint64_t i = 2; i < 200000 && readers_left.load() > 0; ++i) {
                       started.store(i);
                       if (!s.table->update(hot, make_value(hot, i)).is_ok()) ++violations;
                       committed.store(i);
                       const uint64_t n = neighbours[rng() % neighbours.size()];
                       if (!s.table->insert(n, make_value(n, i)).is_ok()) {
                         (void)s.table->remove(n);
                       }
                       ++writes;
                       co.yield();
                     }
                   }).is_ok());
    } else if (w.node() == 0) {
      auto sc = s.scratch(w, 0);
      ASSERT_TRUE(w.spawn([&, sc](Co& co) {
                     HashClient c(nullptr, sc);
                     reader(co, c);
                   }).is_ok());
    } else if (w.node() == 1) {
      auto sc = s.scratch(w, 0);
      const bool cached = w.thread() == 0;
      ASSERT_TRUE(w.spawn([&, sc, cached](Co& co) {
                     HashClient c(cached ? cache.get() : nullptr, sc);
                     reader(co, c);
                   }).is_ok());
      if (w.thread() == 1) {
        auto sc2 = s.scratch(w, 1);
        ASSERT_TRUE(w.spawn([&, sc2](Co& co) {
                       HashClient c(cache.get(), sc2);
                       reader(co, c);
                     }).is_ok());
      }
    }
  });
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(violations.load(), 0u);
  std::printf(
      "[ stats    ] hot key: %llu owner writes, %d GETs x 4 readers, %llu torn copies "
      "detected and re-read\n",
      (unsigned long long)writes.load(), kGets, (unsigned long long)torn.load());
}

// One coroutine, one thread: GETs through a warm cache (1 READ) vs RPC GETs.
// Printed, not asserted (the machine is shared); store-bench owns the target.
TEST(HashClient, OneSidedVersusRpcGetRate) {
  constexpr uint64_t kKeys = 5000;
  constexpr int kGets = 20000;
  Partition s(2, 1, 1, kKeys);
  for (uint64_t k = 0; k < kKeys; ++k) ASSERT_TRUE(s.table->insert(k, make_value(k, 1)).is_ok());
  auto cache = s.cache(kKeys * 2);
  double onesided_ns = 0, rpc_ns = 0, cold_ns = 0;
  int failures = 0;
  auto run = run_workers(*s.cluster, wcfg(1), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   HashClient c(cache.get(), s.scratch(w, 0));
                   HashClient nc(nullptr, s.scratch(w, 0));
                   std::vector<uint8_t> out(kValueSize);
                   for (uint64_t k = 0; k < kKeys; ++k)
                     ASSERT_TRUE(c.get(co, s.remote, k, out).is_ok());
                   auto time = [&](auto&& op) {
                     std::mt19937_64 rng(5);
                     auto t0 = std::chrono::steady_clock::now();
                     for (int i = 0; i < kGets; ++i) {
                       auto g = op(rng() % kKeys);
                       if (!g.is_ok() || !g->found) ++failures;
                     }
                     return std::chrono::duration<double, std::nano>(
                                std::chrono::steady_clock::now() - t0)
                                .count() /
                            kGets;
                   };
                   onesided_ns = time([&](uint64_t k) { return c.get(co, s.remote, k, out); });
                   cold_ns = time([&](uint64_t k) { return nc.get(co, s.remote, k, out); });
                   rpc_ns = time([&](uint64_t k) { return nc.get_rpc(co, s.remote, k, out); });
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
  std::printf(
      "[ measured ] 1 coroutine: cached GET %.0f ns, uncached GET %.0f ns, RPC GET %.0f ns "
      "(RPC / cached = %.1fx)\n",
      onesided_ns, cold_ns, rpc_ns, rpc_ns / onesided_ns);
}

// The targets on a uniform workload: with a warm location cache
// (every key read once before) exactly one READ per GET — a GET of a key
// the cache knows is one READ of the record, nothing else; without a cache
// 2.0 to 2.1 (head bucket + record, the rest overflow hops).
TEST(HashClient, ReadsPerGetWarmAndCold) {
  constexpr uint64_t kKeys = 20000;
  constexpr int kGets = 20000;
  Partition s(2, 1, 2, kKeys);
  for (uint64_t k = 0; k < kKeys; ++k) {
    ASSERT_TRUE(s.table->insert(k * 7919, make_value(k * 7919, 1)).is_ok());
  }
  auto cache = s.cache(kKeys * 2);
  HashClientStats warm, cold;
  auto run = run_workers(*s.cluster, wcfg(2), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1) return;
    for (uint16_t ci = 0; ci < 2; ++ci) {
      auto sc = s.scratch(w, ci);
      ASSERT_TRUE(w.spawn([&, sc, ci](Co& co) {
                     const bool with_cache = ci == 0;
                     HashClient c(with_cache ? cache.get() : nullptr, sc);
                     std::vector<uint8_t> out(kValueSize);
                     if (with_cache) {
                       for (uint64_t k = 0; k < kKeys; ++k) {
                         ASSERT_TRUE(c.get(co, s.remote, k * 7919, out).is_ok());
                       }
                     }
                     c.reset_stats();
                     std::mt19937_64 rng(ci + 1);
                     for (int i = 0; i < kGets; ++i) {
                       const uint64_t key = (rng() % kKeys) * 7919;
                       auto g = c.get(co, s.remote, key, out);
                       ASSERT_TRUE(g.is_ok() && g->found);
                       ASSERT_EQ(value_seq(out.data(), key), 1u);
                     }
                     (with_cache ? warm : cold) = c.stats();
                   }).is_ok());
    }
  });
  ASSERT_FALSE(run.timed_out);
  std::printf(
      "[ measured ] %llu keys, %d uniform GETs each: warm cache %.3f READs/GET "
      "(hits %llu), no cache %.3f READs/GET; overflow buckets used %u of %u\n",
      (unsigned long long)kKeys, kGets, warm.reads_per_get(), (unsigned long long)warm.cache_hits,
      cold.reads_per_get(), s.table->stats().overflow_used, s.remote.layout.overflow);
  EXPECT_EQ(warm.gets, uint64_t{kGets});
  EXPECT_EQ(warm.cache_misses, 0u) << "the cache has room for every key and held them all";
  EXPECT_EQ(warm.reads, warm.gets)
      << "with every key in the location cache each GET must be one READ of the record; "
      << warm.gets << " GETs issued " << warm.reads << " READs (" << warm.bucket_reads
      << " of buckets, stale hits " << warm.cache_stale << ")";
  EXPECT_EQ(cold.gets, uint64_t{kGets});
  EXPECT_LE(cold.reads_per_get(), 2.1);
  EXPECT_GE(cold.reads_per_get(), 2.0);
}

// HashClient::warm: the cache learns every key of the partition from its
// bucket chains (one READ per head and per overflow bucket in use, none
// counted as a GET's), so the first GET of each key is already one READ of
// the record. A second warm adds nothing; a cache with room for a quarter
// of the keys is filled to its capacity without an eviction, and its GETs
// stay right (hits one READ, misses a bucket walk).
TEST(HashClient, WarmFillsTheCacheSoThatEveryGetIsOneRead) {
  constexpr uint64_t kKeys = 20000;
  Partition s(2, 1, 1, kKeys);
  for (uint64_t k = 0; k < kKeys; ++k) {
    ASSERT_TRUE(s.table->insert(k * 7919, make_value(k * 7919, 1)).is_ok());
  }
  const uint32_t overflow_used = s.table->stats().overflow_used;
  ASSERT_GT(overflow_used, 0u) << "the test wants overflow chains to follow";
  auto full = s.cache(kKeys * 2);
  auto small = s.cache(kKeys / 4);
  HashClientStats warmed, small_stats;
  uint64_t added = 0, again = 0, added_small = 0;
  auto run = run_workers(*s.cluster, wcfg(1), [&](Worker& w) {
    s.serve(w);
    if (w.node() != 1) return;
    auto sc = s.scratch(w, 0);
    ASSERT_TRUE(w.spawn([&, sc](Co& co) {
                   std::vector<uint8_t> out(kValueSize);
                   std::vector<uint64_t> order(kKeys);
                   for (uint64_t k = 0; k < kKeys; ++k) order[k] = k * 7919;
                   std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
                   HashClient c(full.get(), sc);
                   auto a = c.warm(co, s.remote);
                   ASSERT_TRUE(a.is_ok()) << a.status().to_string();
                   added = *a;
                   auto b = c.warm(co, s.remote);
                   ASSERT_TRUE(b.is_ok());
                   again = *b;
                   for (uint64_t key : order) {
                     auto g = c.get(co, s.remote, key, out);
                     ASSERT_TRUE(g.is_ok() && g->found) << key;
                     ASSERT_EQ(g->path, GetPath::kCache) << key;
                     ASSERT_EQ(value_seq(out.data(), key), 1u);
                   }
                   warmed = c.stats();
                   HashClient sm(small.get(), sc);
                   auto d = sm.warm(co, s.remote);
                   ASSERT_TRUE(d.is_ok());
                   added_small = *d;
                   for (uint64_t key : order) {
                     auto g = sm.get(co, s.remote, key, out);
                     ASSERT_TRUE(g.is_ok() && g->found) << key;
                     ASSERT_EQ(value_seq(out.data(), key), 1u);
                   }
                   small_stats = sm.stats();
                 }).is_ok());
  });
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(added, kKeys);
  EXPECT_EQ(again, 0u) << "a second warm must find every key cached";
  EXPECT_EQ(full->size(), kKeys);
  EXPECT_EQ(warmed.warm_reads, 2 * (uint64_t{s.remote.layout.buckets} + overflow_used))
      << "two warms, each one READ per head bucket and per overflow bucket in use";
  EXPECT_EQ(warmed.gets, kKeys);
  EXPECT_EQ(warmed.cache_misses, 0u);
  EXPECT_EQ(warmed.reads, warmed.gets)
      << "after warm() each GET must be one READ of the record; " << warmed.gets << " GETs issued "
      << warmed.reads << " READs (" << warmed.bucket_reads << " of buckets)";
  EXPECT_EQ(added_small, small->capacity());
  EXPECT_EQ(small->stats().evictions, small_stats.cache_misses)
      << "warm() must not evict; each later miss puts one entry into a full shard";
  EXPECT_EQ(small_stats.gets, kKeys);
  EXPECT_EQ(small_stats.cache_hits + small_stats.cache_misses, kKeys);
  EXPECT_GT(small_stats.cache_hits, 0u);
}

}  // namespace
}  // namespace drtmx::store::hash
