// The tables layer end to end: a catalog of a hash table, an ordered table
// with inline values (range-partitioned) and an ordered table with records
// (partitioned by a function), placed on 2 nodes; StoreNode owners and
// TableClient coroutines on both nodes.
//   * Concurrent mixed operations against per-coroutine reference maps
//     (each coroutine owns a key stripe, so its map is exact), while other
//     coroutines read the whole key space.
//   * Scans across partition boundaries equal std::map.
//   * Stale location-cache / index entries after delete + re-insert.
//   * A warmed location cache: every hash GET of 1 M keys is one READ.
//   * Errors: oversized values, duplicates, full tables, scans of hash tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "r2/support/worker_cluster.h"
#include "store/catalog.h"
#include "store/record_io.h"
#include "store/tables/store_node.h"
#include "store/tables/table_client.h"

namespace drtmx::store::tables {
namespace {

constexpr TableId kHashT = 1, kRangeT = 2, kRecT = 3;
constexpr uint32_t kParts = 4;
constexpr uint16_t kNodes = 2, kCos = 4;
constexpr uint32_t kValue = 24;

std::vector<uint8_t> val(uint64_t key, uint64_t gen) {
  std::vector<uint8_t> v(kValue, static_cast<uint8_t>(gen));
  std::memcpy(v.data(), &key, 8);
  std::memcpy(v.data() + 8, &gen, 8);
  return v;
}
uint64_t gen_of(const std::vector<uint8_t>& v) {
  uint64_t g;
  std::memcpy(&g, v.data() + 8, 8);
  return g;
}
uint64_t key_in(const std::vector<uint8_t>& v) {
  uint64_t k;
  std::memcpy(&k, v.data(), 8);
  return k;
}

Catalog make_catalog(uint64_t capacity = 20000) {
  std::vector<TableSpec> specs(3);
  specs[0].id = kHashT;
  specs[0].name = "h";
  specs[0].kind = TableKind::kHash;
  specs[0].value_size = kValue;
  specs[0].capacity = capacity;
  specs[0].scheme = PartitionScheme::kHashMod;
  specs[0].partitions = kParts;
  specs[1].id = kRangeT;
  specs[1].name = "r";
  specs[1].kind = TableKind::kOrdered;
  specs[1].inline_values = true;
  specs[1].value_size = kValue;
  specs[1].capacity = capacity;
  specs[1].scheme = PartitionScheme::kRange;
  specs[1].partitions = kParts;
  specs[1].range_bounds = {1000, 2000, 3000};
  specs[2].id = kRecT;
  specs[2].name = "rec";
  specs[2].kind = TableKind::kOrdered;
  specs[2].value_size = kValue;
  specs[2].capacity = capacity;
  specs[2].scheme = PartitionScheme::kFunction;
  specs[2].partitions = kParts;
  specs[2].partition_fn = [](uint64_t k) { return static_cast<uint32_t>((k >> 12) % kParts); };
  auto c = Catalog::create(std::move(specs), kNodes, 1);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c.value());
}

// `apart`: the owners keep record lock words apart (durable nodes, H8).
// `direct`: each node's clients reach its own primaries' trees directly
// (NodeCaches::set_local_store, the direct path of table_client.h).
// `cache_bytes`: each node's location cache budget.
struct Fixture {
  explicit Fixture(Catalog c, bool apart = false, bool direct = false,
                   size_t cache_bytes = size_t{1} << 20)
      : cat(std::move(c)) {
    scratch = ScratchPlan{1, kCos, scratch_per_coroutine(cat)};
    auto regions = regions_of(scratch);
    auto growable = growable_regions_of(cat, 0, apart);
    EXPECT_EQ(growable, growable_regions_of(cat, 1, apart));
    cluster = r2::testing::InProcCluster::make(kNodes, 1, regions, nullptr, nullptr, growable);
    EXPECT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
    for (uint16_t n = 0; n < kNodes; ++n) {
      auto s = StoreNode::create(cat, cluster->f(n), apart);
      EXPECT_TRUE(s.is_ok()) << s.status().to_string();
      nodes.push_back(std::move(s.value()));
      NodeCacheOptions o;
      o.location.budget_bytes = cache_bytes;
      auto c2 = NodeCaches::create(cat, o);
      EXPECT_TRUE(c2.is_ok()) << c2.status().to_string();
      caches.push_back(std::move(c2.value()));
      if (direct) caches.back()->set_local_store(nodes.back().get());
    }
  }
  const TableSpec& t(TableId id) const { return *cat.find(id); }
  void load(TableId id, uint64_t key, uint64_t gen) {
    const TableSpec& s = t(id);
    for (uint16_t n = 0; n < kNodes; ++n) {
      if (cat.hosts(n, s, cat.partition_of(s, key))) {
        ASSERT_TRUE(nodes[n]->load(s, key, val(key, gen)).is_ok());
      }
    }
  }
  // Runs body(co, client, node, index) on kCos coroutines of every node.
  void run(const std::function<void(r2::Co&, TableClient&, int)>& body) {
    r2::WorkerConfig cfg;
    cfg.coroutines = kCos;
    std::vector<std::unique_ptr<TableClient>> clients;
    for (uint16_t n = 0; n < kNodes; ++n) {
      for (int i = 0; i < kCos; ++i) {
        std::span<uint8_t> s(cluster->base(n, kScratchRegion) + scratch.offset(0, i),
                             scratch.per_coroutine);
        clients.push_back(std::make_unique<TableClient>(cat, *caches[n], s));
      }
    }
    auto r = r2::testing::run_workers(
        *cluster, cfg,
        [&](r2::Worker& w) {
          ASSERT_TRUE(nodes[w.node()]->register_handlers(w).is_ok());
          for (int i = 0; i < kCos; ++i) {
            const int idx = w.node() * kCos + i;
            ASSERT_TRUE(w.spawn([&, idx](r2::Co& co) { body(co, *clients[idx], idx); }).is_ok());
          }
        },
        std::chrono::seconds(120));
    EXPECT_FALSE(r.timed_out);
    for (const auto& c : clients) stats.add(c->stats());
  }

  Catalog cat;
  ScratchPlan scratch;
  std::unique_ptr<r2::testing::InProcCluster> cluster;
  std::vector<std::unique_ptr<StoreNode>> nodes;
  std::vector<std::unique_ptr<NodeCaches>> caches;
  TableClientStats stats;  // of every client of the runs so far
};

// What the clients' counters must show for the path the fixture chose:
// reads of local primaries on the direct path only with `direct`, and
// the other node's partitions by learned cache or RPC either way.
void expect_paths(const Fixture& f, bool direct) {
  if (direct) {
    EXPECT_GT(f.stats.local, 0u);
  } else {
    EXPECT_EQ(f.stats.local, 0u);
  }
  EXPECT_GT(f.stats.reads + f.stats.rpcs, 0u);
}

// Keys 0..3999 spread over the range table's 4 partitions; the record
// table's function uses bits 12+, so use k * 4096 / 7 spreads.
uint64_t key_of(TableId id, uint64_t i) {
  return id == kRecT ? i * 1543 : i;
}

void concurrent_operations(bool direct) {
  Fixture f(make_catalog(), false, direct);
  constexpr uint64_t kKeys = 4000;
  for (TableId id : {kHashT, kRangeT, kRecT}) {
    for (uint64_t i = 0; i < kKeys; i += 2) f.load(id, key_of(id, i), 1);
  }
  constexpr int kOps = 3000;
  std::atomic<int> checked{0};
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    std::mt19937_64 rng(1234 + idx);
    // This coroutine owns keys with i % (kNodes*kCos) == idx.
    std::map<std::pair<TableId, uint64_t>, uint64_t> mine;
    for (TableId id : {kHashT, kRangeT, kRecT}) {
      for (uint64_t i = idx; i < kKeys; i += kNodes * kCos) {
        if (i % 2 == 0) mine[{id, key_of(id, i)}] = 1;
      }
    }
    std::vector<uint8_t> out(kValue);
    for (int op = 0; op < kOps; ++op) {
      const TableId id = static_cast<TableId>(1 + rng() % 3);
      const TableSpec& t = f.t(id);
      const bool own = rng() % 2 == 0;
      uint64_t i = rng() % kKeys;
      if (own) i = i - i % (kNodes * kCos) + idx;
      if (i >= kKeys) continue;
      const uint64_t key = key_of(id, i);
      if (!own) {  // somebody else's key: any answer must be that key's value
        auto r = c.get(co, t, key, out);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        if (*r) {
          ASSERT_EQ(key_in(out), key);
        }
        continue;
      }
      auto it = mine.find({id, key});
      const uint64_t gen = 2 + op;
      switch (rng() % 4) {
        case 0: {  // get
          auto r = c.get(co, t, key, out);
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          ASSERT_EQ(*r, it != mine.end()) << t.name << " key " << key;
          if (*r) {
            ASSERT_EQ(key_in(out), key);
            ASSERT_EQ(gen_of(out), it->second) << t.name << " key " << key;
          }
          ++checked;
          break;
        }
        case 1: {  // insert
          Status s = c.insert(co, t, key, val(key, gen));
          if (it == mine.end()) {
            ASSERT_TRUE(s.is_ok()) << s.to_string();
            mine[{id, key}] = gen;
          } else {
            ASSERT_EQ(s.code(), Code::kAlreadyExists) << s.to_string();
          }
          break;
        }
        case 2: {  // update
          Status s = c.update(co, t, key, val(key, gen));
          if (it != mine.end()) {
            ASSERT_TRUE(s.is_ok()) << s.to_string();
            it->second = gen;
          } else {
            ASSERT_EQ(s.code(), Code::kNotFound) << s.to_string();
          }
          break;
        }
        case 3: {  // remove
          Status s = c.remove(co, t, key);
          if (it != mine.end()) {
            ASSERT_TRUE(s.is_ok()) << s.to_string();
            mine.erase(it);
          } else {
            ASSERT_EQ(s.code(), Code::kNotFound) << s.to_string();
          }
          break;
        }
      }
    }
    // Final state: every owned key as the map says.
    for (TableId id : {kHashT, kRangeT, kRecT}) {
      for (uint64_t i = idx; i < kKeys; i += kNodes * kCos) {
        const uint64_t key = key_of(id, i);
        auto r = c.get(co, f.t(id), key, out);
        ASSERT_TRUE(r.is_ok());
        auto it = mine.find({id, key});
        ASSERT_EQ(*r, it != mine.end()) << id << " " << key;
        if (*r) {
          ASSERT_EQ(gen_of(out), it->second);
        }
      }
    }
  });
  EXPECT_GT(checked.load(), 1000);
  expect_paths(f, direct);
}

TEST(Tables, ConcurrentOperationsMatchReferenceMaps) {
  concurrent_operations(false);
}

TEST(Tables, ConcurrentOperationsMatchReferenceMapsOnTheDirectPath) {
  concurrent_operations(true);
}

void scans_cross_partitions(bool direct) {
  Fixture f(make_catalog(), false, direct);
  std::map<uint64_t, uint64_t> ref;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1500; ++i) {
    const uint64_t k = rng() % 4200;
    f.load(kRangeT, k, k + 10);
    ref[k] = k + 10;
  }
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    if (idx != 0 && idx != kCos) return;  // one coroutine per node
    std::vector<uint64_t> keys;
    std::vector<uint8_t> vals;
    const std::vector<uint64_t> starts = {0,    995,  999,  1000, 1001, 1990,
                                          2999, 3000, 4100, 4199, 4200, UINT64_MAX};
    for (int round = 0; round < 2; ++round) {  // cold (RPC while warming), then warm
      for (uint64_t start : starts) {
        for (size_t n : {1, 7, 100, 3000}) {
          ASSERT_TRUE(c.scan(co, f.t(kRangeT), start, n, keys, vals).is_ok());
          auto it = ref.lower_bound(start);
          size_t i = 0;
          for (; i < n && it != ref.end(); ++i, ++it) {
            ASSERT_LT(i, keys.size()) << "start " << start << " n " << n;
            ASSERT_EQ(keys[i], it->first);
            ASSERT_EQ(gen_of(std::vector<uint8_t>(vals.begin() + i * kValue,
                                                  vals.begin() + (i + 1) * kValue)),
                      it->second);
          }
          ASSERT_EQ(keys.size(), i) << "start " << start << " n " << n;
          // The same keys from the index alone: no record READ.
          std::vector<uint64_t> only;
          const uint64_t reads = c.stats().reads;
          ASSERT_TRUE(c.scan_keys(co, f.t(kRangeT), start, n, only).is_ok());
          ASSERT_EQ(only, keys) << "start " << start << " n " << n;
          ASSERT_EQ(c.stats().reads, reads);
        }
      }
    }
    // Absent keys: exact negatives.
    std::vector<uint8_t> out(kValue);
    for (uint64_t k = 0; k < 4300; k += 13) {
      auto r = c.get(co, f.t(kRangeT), k, out);
      ASSERT_TRUE(r.is_ok());
      ASSERT_EQ(*r, ref.count(k) == 1) << k;
    }
  });
  expect_paths(f, direct);
}

TEST(Tables, ScansCrossPartitionBoundariesAndMatchStdMap) {
  scans_cross_partitions(false);
}

TEST(Tables, ScansCrossPartitionBoundariesAndMatchStdMapOnTheDirectPath) {
  scans_cross_partitions(true);
}

TEST(Tables, StaleCacheEntriesAreDetectedAfterDeleteAndReinsert) {
  Fixture f(make_catalog());
  for (TableId id : {kHashT, kRecT}) {
    for (uint64_t i = 0; i < 200; ++i) f.load(id, key_of(id, i), 1);
  }
  std::atomic<int> phase{0};
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    if (idx != 0 && idx != kCos) return;
    std::vector<uint8_t> out(kValue);
    auto wait_phase = [&](int p) {
      for (int i = 0; i < 10'000'000 && phase.load() < p; ++i) co.yield_idle();
      ASSERT_GE(phase.load(), p);
    };
    for (TableId id : {kHashT, kRecT}) {
      const TableSpec& t = f.t(id);
      if (idx == kCos) {  // node 1 reads everything: caches filled
        for (uint64_t i = 0; i < 200; ++i) {
          auto r = c.get(co, t, key_of(id, i), out);
          ASSERT_TRUE(r.is_ok() && *r) << t.name << " " << i;
        }
        phase.fetch_add(1);
        wait_phase(id == kHashT ? 2 : 4);
        for (uint64_t i = 0; i < 200; ++i) {
          auto r = c.get(co, t, key_of(id, i), out);
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          if (i % 3 == 0) {
            ASSERT_FALSE(*r) << "deleted key " << i << " still found in " << t.name;
          } else {
            ASSERT_TRUE(*r);
            ASSERT_EQ(key_in(out), key_of(id, i));
            ASSERT_EQ(gen_of(out), i % 3 == 1 ? 5u : 1u) << t.name << " " << i;
          }
        }
      } else {  // node 0: delete a third, re-insert another third (new slots)
        wait_phase(id == kHashT ? 1 : 3);
        for (uint64_t i = 0; i < 200; ++i) {
          const uint64_t k = key_of(id, i);
          if (i % 3 != 2) {
            ASSERT_TRUE(c.remove(co, t, k).is_ok());
          }
        }
        for (uint64_t i = 0; i < 200; ++i) {  // reuse slots: other keys' records land there
          if (i % 3 == 1) {
            ASSERT_TRUE(c.insert(co, t, key_of(id, i), val(key_of(id, i), 5)).is_ok());
          }
        }
        phase.fetch_add(1);
      }
    }
  });
  const hash::LocationCacheStats s = f.caches[1]->location().stats();
  EXPECT_GT(s.erased, 0u) << "stale location-cache entries were never detected";
}

// store-bench's hash case (--table=hash --nodes=2 --keys=1000000, a location
// cache with room for every key): once TableClient::warm filled each
// node's cache, every GET — of a key on the other node or on its own — is
// exactly one READ of the record, whatever keys the GETs pick. Left to fill
// at misses, a cache knows only the keys its node met, and a short run's
// first GETs of the others cost a bucket walk each (store-bench measured
// 1.03-1.08 READs per GET after a 1 s warm-up).
TEST(Tables, HashGetsOfAMillionKeysAreOneReadEachWithAWarmedLocationCache) {
  constexpr uint64_t kKeys = 1'000'000;
  constexpr int kGets = 25'000;  // per coroutine
  TableSpec h;
  h.id = kHashT;
  h.name = "usertable";
  h.kind = TableKind::kHash;
  h.value_size = 8;
  const uint64_t per = kKeys / kNodes;
  h.capacity = per + per / 4 + 1024;  // store-bench's sizing
  h.scheme = PartitionScheme::kHashMod;
  h.partitions = kNodes;
  auto c = Catalog::create({h}, kNodes, 1);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Fixture f(std::move(c.value()), false, false, 2 * kKeys * hash::LocationCache::kEntryBytes);
  const TableSpec& t = f.t(kHashT);
  auto key_at = [](uint64_t i) { return i * 0x9E3779B97F4A7C15ull + 11; };
  for (uint64_t i = 0; i < kKeys; ++i) {
    const uint64_t key = key_at(i);
    const std::span<const uint8_t> value(reinterpret_cast<const uint8_t*>(&key), 8);
    for (uint16_t n = 0; n < kNodes; ++n) {
      if (f.cat.hosts(n, t, f.cat.partition_of(t, key))) {
        ASSERT_TRUE(f.nodes[n]->load(t, key, value).is_ok());
      }
    }
  }
  std::atomic<int> warmed[kNodes] = {0, 0};
  std::atomic<uint64_t> wrong{0}, warm_ns[kNodes] = {0, 0};
  f.run([&](r2::Co& co, TableClient& cl, int idx) {
    const uint16_t node = co.node();
    if (idx % kCos == 0) {  // one coroutine per node fills the node's cache
      const auto t0 = std::chrono::steady_clock::now();
      Status st = cl.warm(co, t);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      warm_ns[node].store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - t0)
                              .count());
      warmed[node].store(1);
    }
    for (int i = 0; i < 100'000'000 && warmed[node].load() == 0; ++i) co.yield_idle();
    ASSERT_EQ(warmed[node].load(), 1);
    std::mt19937_64 rng(77 + idx);
    uint64_t out = 0;
    for (int q = 0; q < kGets; ++q) {
      const uint64_t key = key_at(rng() % kKeys);
      auto r = cl.get(co, t, key, std::span<uint8_t>(reinterpret_cast<uint8_t*>(&out), 8));
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      if (!*r || out != key) ++wrong;
    }
  });
  std::printf("[ measured ] warm() of %llu keys in 2 partitions: node 0 %.0f ms, node 1 %.0f ms\n",
              (unsigned long long)kKeys, warm_ns[0].load() / 1e6, warm_ns[1].load() / 1e6);
  EXPECT_EQ(wrong.load(), 0u);
  for (uint16_t n = 0; n < kNodes; ++n) {
    EXPECT_EQ(f.caches[n]->location().size(), kKeys)
        << "node " << n << "'s warmed location cache must hold every key of both partitions";
  }
  EXPECT_EQ(f.stats.gets, uint64_t{kNodes} * kCos * kGets);
  EXPECT_EQ(f.stats.reads, f.stats.gets)
      << "with every key's location cached each GET must be one READ of the record; "
      << f.stats.gets << " GETs issued " << f.stats.reads << " READs ("
      << double(f.stats.reads) / double(f.stats.gets) << " per GET)";
}

// XStore through the tables layer while the trees change: node 0's
// coroutines insert and delete keys (owner RPCs: splits, incarnation
// bumps), node 1's coroutines GET and SCAN one-sided and one of them runs
// maintain() (retraining after splits, model expansion). Stable keys are
// always found with their value, never-inserted keys never; scans are
// ascending and contain every stable key of their range. Then everything
// equals std::map exactly.
TEST(Tables, OrderedReadsStayCorrectUnderInsertsDeletesAndRetraining) {
  Fixture f(make_catalog(/*capacity=*/40000));
  const TableSpec& t = f.t(kRangeT);
  // Stable keys: multiples of 10 in [0, 4000) — never touched.
  for (uint64_t k = 0; k < 4000; k += 10) f.load(kRangeT, k, k);
  std::atomic<int> writers_done{0};
  std::map<uint64_t, uint64_t> final_ref;
  for (uint64_t k = 0; k < 4000; k += 10) final_ref[k] = k;
  std::mutex ref_mu;
  std::atomic<uint64_t> refreshed{0}, checked{0};
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    std::vector<uint8_t> out(kValue);
    if (idx < kCos) {  // node 0: writers over disjoint stripes of odd keys
      std::mt19937_64 rng(99 + idx);
      std::map<uint64_t, uint64_t> mine;
      for (int op = 0; op < 1500; ++op) {
        // Paced by the readers (the two nodes' threads run at whatever
        // speed the machine gives them): at least one checked read per
        // write, so the reads really overlap the writes. Bounded: a reader
        // that stopped cannot hold the writers forever.
        for (int w = 0; w < 20000 && checked.load() < uint64_t(op) * kCos; ++w) co.yield_idle();
        const uint64_t k = (rng() % 2000) * 2 + 1;
        if (k % kCos != static_cast<uint64_t>(idx)) continue;
        if (mine.count(k) && rng() % 3 == 0) {
          ASSERT_TRUE(c.remove(co, t, k).is_ok());
          mine.erase(k);
        } else if (!mine.count(k)) {
          ASSERT_TRUE(c.insert(co, t, k, val(k, k + 1)).is_ok());
          mine[k] = k + 1;
        }
      }
      {
        std::lock_guard<std::mutex> g(ref_mu);
        final_ref.insert(mine.begin(), mine.end());
      }
      writers_done.fetch_add(1);
      return;
    }
    std::mt19937_64 rng(7 + idx);
    std::vector<uint64_t> keys;
    std::vector<uint8_t> vals;
    for (int round = 0; round < 200000 && writers_done.load() < kCos; ++round) {
      if (idx == kCos && round % 50 == 0) {
        size_t n = 0;
        ASSERT_TRUE(c.maintain(co, &n).is_ok());
        refreshed += n;
      }
      const uint64_t k = rng() % 4000;
      if (round % 4 == 0) {
        const uint64_t start = rng() % 4000;
        ASSERT_TRUE(c.scan(co, t, start, 40, keys, vals).is_ok());
        for (size_t i = 1; i < keys.size(); ++i) ASSERT_LT(keys[i - 1], keys[i]);
        // Every stable key between start and the last key returned is there.
        const uint64_t last = keys.empty() ? start : keys.back();
        size_t j = 0;
        for (uint64_t s2 = (start + 9) / 10 * 10; s2 <= last && s2 < 4000; s2 += 10) {
          while (j < keys.size() && keys[j] < s2) ++j;
          ASSERT_TRUE(j < keys.size() && keys[j] == s2) << "scan from " << start << " lost " << s2;
        }
        continue;
      }
      auto r = c.get(co, t, k, out);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      if (k % 10 == 0) {
        ASSERT_TRUE(*r) << "stable key " << k << " not found";
        ASSERT_EQ(gen_of(out), k);
      } else if (k % 2 == 0) {
        ASSERT_FALSE(*r) << "never-inserted key " << k << " found";
      } else if (*r) {
        ASSERT_EQ(gen_of(out), k + 1);
      }
      ++checked;
    }
    // After the writers: exact.
    for (int i = 0; i < 100000 && writers_done.load() < kCos; ++i) co.yield_idle();
    if (idx != kCos) return;
    size_t n = 0;
    ASSERT_TRUE(c.maintain(co, &n).is_ok());
    for (uint64_t k = 0; k < 4001; ++k) {
      auto r = c.get(co, t, k, out);
      ASSERT_TRUE(r.is_ok());
      ASSERT_EQ(*r, final_ref.count(k) == 1) << k;
    }
    ASSERT_TRUE(c.scan(co, t, 0, 10000, keys, vals).is_ok());
    ASSERT_EQ(keys.size(), final_ref.size());
    size_t i = 0;
    for (auto& [k, g] : final_ref) ASSERT_EQ(keys[i++], k);
  });
  const uint64_t splits = f.nodes[0]->partition(kRangeT, 0)->tree->stats().splits +
                          f.nodes[0]->partition(kRangeT, 2)->tree->stats().splits;
  std::printf("checked %llu reads while writing, %llu splits, %llu sub-models refreshed\n",
              static_cast<unsigned long long>(checked.load()),
              static_cast<unsigned long long>(splits),
              static_cast<unsigned long long>(refreshed.load()));
  EXPECT_GT(checked.load(), 1000u);
  EXPECT_GT(splits, 0u);
  EXPECT_GT(refreshed.load(), 0u) << "maintain() never retrained after splits";
}

// get_many over the record table (ordered, records, 4 partitions on 2
// nodes) while node 0's coroutines insert and delete: every answer is one
// get() could give (stable rows found with their value and a record ref,
// never-inserted keys absent, written keys with their value when present);
// afterwards exactly the final contents, with far fewer round trips than
// get() per key.
void get_many_matches_get(bool direct) {
  Fixture f(make_catalog(/*capacity=*/40000), false, direct);
  const TableSpec& t = f.t(kRecT);
  constexpr uint64_t kKeys = 3000;
  for (uint64_t i = 0; i < kKeys; i += 10) f.load(kRecT, key_of(kRecT, i), i);
  std::map<uint64_t, uint64_t> final_ref;  // index -> gen
  for (uint64_t i = 0; i < kKeys; i += 10) final_ref[i] = i;
  std::mutex ref_mu;
  std::atomic<int> writers_done{0};
  std::atomic<uint64_t> checked{0}, batches{0};
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    if (idx < kCos) {  // node 0: writers over disjoint stripes of odd indexes
      std::mt19937_64 rng(5 + idx);
      std::map<uint64_t, uint64_t> mine;
      for (int op = 0; op < 800; ++op) {
        for (int w = 0; w < 20000 && checked.load() < uint64_t(op) * 8; ++w) co.yield_idle();
        const uint64_t i = (rng() % (kKeys / 2)) * 2 + 1;
        if (i % kCos != static_cast<uint64_t>(idx)) continue;
        if (mine.count(i) && rng() % 3 == 0) {
          ASSERT_TRUE(c.remove(co, t, key_of(kRecT, i)).is_ok());
          mine.erase(i);
        } else if (!mine.count(i)) {
          ASSERT_TRUE(c.insert(co, t, key_of(kRecT, i), val(key_of(kRecT, i), i + 1)).is_ok());
          mine[i] = i + 1;
        }
      }
      {
        std::lock_guard<std::mutex> g(ref_mu);
        final_ref.insert(mine.begin(), mine.end());
      }
      writers_done.fetch_add(1);
      return;
    }
    std::mt19937_64 rng(11 + idx);
    std::vector<uint64_t> idxs, keys;
    std::vector<uint8_t> values, found;
    std::vector<RecordRef> refs;
    auto get_many = [&](size_t n) {
      keys.clear();
      for (uint64_t i : idxs) keys.push_back(key_of(kRecT, i));
      values.assign(n * kValue, 0);
      found.assign(n, 2);
      refs.assign(n, RecordRef{});
      ASSERT_TRUE(c.get_many(co, t, keys, values.data(), found.data(), refs.data()).is_ok());
    };
    for (int round = 0; round < 20000 && writers_done.load() < kCos; ++round) {
      if (idx == kCos && round % 20 == 0) {
        ASSERT_TRUE(c.maintain(co).is_ok());
      }
      // A batch of nearby indexes (several share leaves) plus random ones.
      idxs.clear();
      const uint64_t base = rng() % kKeys;
      for (uint64_t j = 0; j < 24; ++j) idxs.push_back((base + j) % kKeys);
      for (int j = 0; j < 8; ++j) idxs.push_back(rng() % kKeys);
      get_many(idxs.size());
      for (size_t j = 0; j < idxs.size(); ++j) {
        const uint64_t i = idxs[j];
        ASSERT_LE(found[j], 1) << "no answer for index " << i;
        std::vector<uint8_t> v(values.begin() + j * kValue, values.begin() + (j + 1) * kValue);
        if (i % 10 == 0) {
          ASSERT_EQ(found[j], 1) << "stable index " << i << " not found";
          ASSERT_EQ(gen_of(v), i);
          ASSERT_NE(refs[j].version, 0u);
        } else if (i % 2 == 0) {
          ASSERT_EQ(found[j], 0) << "never-inserted index " << i << " found";
        } else if (found[j]) {
          ASSERT_EQ(gen_of(v), i + 1) << i;
        }
        if (found[j]) {
          ASSERT_EQ(key_in(v), key_of(kRecT, i));
        }
      }
      checked += idxs.size();
      ++batches;
    }
    for (int i = 0; i < 100000 && writers_done.load() < kCos; ++i) co.yield_idle();
    if (idx != kCos) return;
    ASSERT_TRUE(c.maintain(co).is_ok());
    // Exact, and cheaper than one get() per key.
    idxs.clear();
    for (uint64_t i = 0; i < kKeys; ++i) idxs.push_back(i);
    const uint64_t rt0 = c.xstats().round_trips;
    get_many(idxs.size());
    const uint64_t batched = c.xstats().round_trips - rt0;
    for (uint64_t i = 0; i < kKeys; ++i) {
      ASSERT_EQ(found[i], final_ref.count(i)) << "index " << i;
      if (found[i]) {
        std::vector<uint8_t> v(values.begin() + i * kValue, values.begin() + (i + 1) * kValue);
        ASSERT_EQ(gen_of(v), final_ref[i]);
      }
    }
    const uint64_t rt1 = c.xstats().round_trips;
    std::vector<uint8_t> out(kValue);
    for (uint64_t i = 0; i < kKeys; ++i) {
      auto r = c.get(co, t, key_of(kRecT, i), out);
      ASSERT_TRUE(r.is_ok());
      ASSERT_EQ(*r, final_ref.count(i) == 1);
    }
    const uint64_t single = c.xstats().round_trips - rt1;
    std::printf("get_many: %llu index round trips for %llu keys; get(): %llu\n",
                static_cast<unsigned long long>(batched), static_cast<unsigned long long>(kKeys),
                static_cast<unsigned long long>(single));
    EXPECT_LT(batched * 4, single);
  });
  EXPECT_GT(batches.load(), 50u);
  expect_paths(f, direct);
}

TEST(Tables, GetManyMatchesGetUnderInsertsAndDeletes) {
  get_many_matches_get(false);
}

TEST(Tables, GetManyMatchesGetUnderInsertsAndDeletesOnTheDirectPath) {
  get_many_matches_get(true);
}

// A read-only table replicated on every node: each node reads its own copy.
TEST(Tables, ReplicatedTableIsReadLocallyOnEveryNode) {
  TableSpec item;
  item.id = 9;
  item.name = "item";
  item.kind = TableKind::kHash;
  item.value_size = kValue;
  item.capacity = 1000;
  item.scheme = PartitionScheme::kReplicated;
  auto c = Catalog::create({item}, kNodes, 1);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Fixture f(std::move(c.value()));
  for (uint64_t k = 0; k < 500; ++k) f.load(9, k, 3);
  for (uint16_t n = 0; n < kNodes; ++n) ASSERT_NE(f.nodes[n]->partition(9, 0), nullptr);
  f.run([&](r2::Co& co, TableClient& cl, int idx) {
    std::vector<uint8_t> out(kValue);
    RecordRef ref;
    for (uint64_t k = 0; k < 500; k += 7) {
      auto r = cl.get(co, f.t(9), k, out, &ref);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(gen_of(out), 3u);
      ASSERT_EQ(ref.addr.node, co.node()) << "read a remote copy of a replicated table";
    }
  });
}

// Backup installs (the log applier's path): versions arriving out of order
// leave the newest; absent keys are inserted at the given version; a
// remove deletes. Concurrent installers of one key end at the max version.
// A backup applies a key's changes in version order whatever order the
// rings deliver them in — including an insert, update and delete of one
// incarnation of the key interleaved with the next incarnation's (versions
// only grow across incarnations). Every order of the entries (offered
// again each round while deferred, as BackupApplier does) ends with every
// entry consumed and the state of the last incarnation: none waits forever
// for a delete that never comes (an old insert used to wait for the newer
// incarnation's delete), and a skipped incarnation never comes back. Two
// incarnations in all orders, three in a sample of orders.
TEST(Tables, ApplyInOrderSkipsReplacedIncarnationsInEveryOrder) {
  Fixture f(make_catalog());
  using Change = StoreNode::Change;
  struct Entry {
    Change c;
    uint64_t version;
  };
  uint64_t next_key = 1000;
  // Applies `all` in `order` as BackupApplier would (deferred entries
  // offered again each round) on a fresh key; expects every entry consumed
  // and the key present with `final_gen`, or absent when final_gen is 0.
  auto apply = [&](const TableSpec& t, const std::vector<Entry>& all,
                   const std::vector<size_t>& order, uint64_t final_gen) {
    const uint64_t key = key_of(t.id, next_key++);
    StoreNode& n = *f.nodes[f.cat.replicas_of(t, f.cat.partition_of(t, key), 0).primary];
    std::vector<Entry> pending;
    for (size_t i : order) pending.push_back(all[i]);
    for (int round = 0; round < 12 && !pending.empty(); ++round) {
      for (auto it = pending.begin(); it != pending.end();) {
        const std::vector<uint8_t> v =
            it->c == Change::kDelete ? std::vector<uint8_t>{} : val(key, it->version);
        auto r = n.apply_in_order(t, key, it->c, it->version, v);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        it = *r ? pending.erase(it) : it + 1;
      }
    }
    std::string shown;
    for (size_t i : order) shown += std::to_string(all[i].version) + " ";
    ASSERT_TRUE(pending.empty()) << t.name << ": entries stuck for order " << shown;
    std::vector<uint8_t> out(kValue);
    auto g = n.get_local(t, key, out);
    ASSERT_TRUE(g.is_ok());
    if (final_gen == 0) {
      ASSERT_FALSE(*g) << t.name << ": a deleted key came back, order " << shown;
    } else {
      ASSERT_TRUE(*g) << t.name << ": order " << shown;
      ASSERT_EQ(gen_of(out), final_gen) << t.name << ": order " << shown;
    }
  };
  // Incarnation 1: insert 1, update 2, delete 3. Incarnation 2: insert 5,
  // update 6, then (second set) delete 7. Every order.
  const std::vector<Entry> two = {{Change::kInsert, 1}, {Change::kUpdate, 2}, {Change::kDelete, 3},
                                  {Change::kInsert, 5}, {Change::kUpdate, 6}, {Change::kDelete, 7}};
  // Three incarnations (1-3, 5-7, 9-10): a sample of the 40 320 orders.
  const std::vector<Entry> three = {
      {Change::kInsert, 1}, {Change::kUpdate, 2}, {Change::kDelete, 3}, {Change::kInsert, 5},
      {Change::kUpdate, 6}, {Change::kDelete, 7}, {Change::kInsert, 9}, {Change::kUpdate, 10}};
  std::mt19937_64 rng(42);
  for (TableId id : {kHashT, kRecT}) {
    const TableSpec& t = f.t(id);
    for (size_t n : {size_t{5}, size_t{6}}) {
      std::vector<Entry> all(two.begin(), two.begin() + static_cast<ptrdiff_t>(n));
      std::vector<size_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = i;
      int orders = 0;
      do {
        apply(t, all, order, n == 5 ? 6 : 0);
        if (HasFatalFailure()) return;
        ++orders;
      } while (std::next_permutation(order.begin(), order.end()));
      EXPECT_EQ(orders, n == 5 ? 120 : 720);
    }
    std::vector<size_t> order(three.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (int s = 0; s < 1500; ++s) {
      std::shuffle(order.begin(), order.end(), rng);
      apply(t, three, order, 10);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(Tables, InstallKeepsTheNewestVersion) {
  Fixture f(make_catalog());
  for (TableId id : {kHashT, kRecT}) {
    const TableSpec& t = f.t(id);
    const uint64_t key = key_of(id, 42);
    StoreNode& n = *f.nodes[f.cat.replicas_of(t, f.cat.partition_of(t, key), 0).primary];
    auto r = n.install(t, key, 5, val(key, 5), false);
    ASSERT_TRUE(r.is_ok() && *r) << r.status().to_string();
    r = n.install(t, key, 3, val(key, 3), false);
    ASSERT_TRUE(r.is_ok());
    EXPECT_FALSE(*r) << "an older version overwrote a newer one";
    r = n.install(t, key, 9, val(key, 9), false);
    ASSERT_TRUE(r.is_ok() && *r);
    std::vector<uint8_t> out(kValue);
    ASSERT_TRUE(*n.get_local(t, key, out));
    EXPECT_EQ(gen_of(out), 9u);
    // Concurrent installers: 4 threads x 500 versions interleaved.
    const uint64_t k2 = key_of(id, 43);
    StoreNode& n2 = *f.nodes[f.cat.replicas_of(t, f.cat.partition_of(t, k2), 0).primary];
    std::vector<std::thread> ts;
    for (int th = 0; th < 4; ++th) {
      ts.emplace_back([&, th] {
        for (uint64_t v = 1 + th; v <= 2000; v += 4) {
          auto x = n2.install(t, k2, v, val(k2, v), false);
          ASSERT_TRUE(x.is_ok()) << x.status().to_string();
        }
      });
    }
    for (auto& th : ts) th.join();
    ASSERT_TRUE(*n2.get_local(t, k2, out));
    EXPECT_EQ(gen_of(out), 2000u) << t.name;
    r = n.install(t, key, 10, {}, true);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_FALSE(*n.get_local(t, key, out));
  }
  const TableSpec& inl = f.t(kRangeT);
  EXPECT_EQ(f.nodes[0]->install(inl, 0, 2, val(0, 2), false).status().code(),
            Code::kInvalidArgument);
}

// The slot of `key` in node n's copy (scanning its heap), or rec == nullptr.
SlotRef slot_of(const Fixture& f, uint16_t n, const TableSpec& t, uint64_t key) {
  const LocalPartition* lp = f.nodes[n]->partition(t.id, f.cat.partition_of(t, key));
  const size_t slot = record_slot_size(t.value_size);
  for (uint64_t i = 0; lp != nullptr && i < lp->heap->committed_bytes() / slot; ++i) {
    const SlotRef r = f.nodes[n]->slot_at(table_region(t.id), lp->plan.heap.range_offset + i * slot,
                                          t.value_size);
    if (r.rec == nullptr || verify(r.rec, t.value_size) != RecordCheck::kOk) continue;
    RecordHeader h;
    std::memcpy(&h, r.rec, sizeof h);
    if (h.key == key) return r;
  }
  return {};
}

uint64_t word(const uint64_t* w) {
  return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

// Lock words apart (durable nodes, H8): every table with records has a lock
// region and nothing else does; for every slot of every hosted copy, the
// owner's lock and ts words (slot_at) are exactly where every client
// computes them (LockPlan), apart from the slot; addresses that are no
// record slot have none; owner-side writers lock there and never write the
// slot's own words; a lock held there blocks them.
TEST(Tables, LockWordsApartAreWhereEveryClientComputesThem) {
  Fixture f(make_catalog(/*capacity=*/256), /*apart=*/true);
  for (uint64_t i = 1000; i < 1400; ++i) {  // slots backed (keys the test does not use)
    f.load(kHashT, key_of(kHashT, i), 1);
    f.load(kRecT, key_of(kRecT, i), 1);
  }
  const auto regions = growable_regions_of(f.cat, 0, true);
  auto has = [&](r2::RegionId id) {
    return std::any_of(regions.begin(), regions.end(),
                       [&](const auto& r) { return r.first == id; });
  };
  EXPECT_TRUE(has(lock_region(kHashT)));
  EXPECT_TRUE(has(lock_region(kRecT)));
  EXPECT_FALSE(has(lock_region(kRangeT))) << "inline values keep no records, so no locks";
  EXPECT_FALSE(is_table_region(lock_region(kHashT)));
  const LockPlan plan = LockPlan::of(f.cat);
  const size_t slot = record_slot_size(kValue);
  for (uint16_t n = 0; n < kNodes; ++n) {
    for (TableId id : {kHashT, kRecT}) {
      const TableSpec& t = f.t(id);
      const std::vector<PartitionId> hosted = f.cat.hosted(n, t);
      ASSERT_GE(hosted.size(), 2u) << "the test needs several areas per region";
      uint64_t slots = 0;
      for (PartitionId p : hosted) {
        const LocalPartition* lp = f.nodes[n]->partition(id, p);
        ASSERT_NE(lp, nullptr);
        const uint64_t heap = lp->plan.heap.range_offset;
        // The slots backed so far (the heap's address space past them has
        // no slot an address may name yet).
        const uint64_t backed = lp->heap->committed_bytes() / slot;
        ASSERT_GT(backed, 0u);
        for (uint64_t i = 0; i < backed; ++i, ++slots) {
          const uint64_t off = heap + i * slot;
          const SlotRef r = f.nodes[n]->slot_at(table_region(id), off, kValue);
          ASSERT_EQ(r.rec, f.cluster->base(n, table_region(id)) + off);
          const r2::RemoteAddr la = plan.lock_of({n, table_region(id), off});
          ASSERT_EQ(la.node, n);
          ASSERT_EQ(la.region, lock_region(id));
          ASSERT_EQ(reinterpret_cast<uint8_t*>(r.lock), f.cluster->base(n, la.region) + la.offset)
              << t.name << " p" << p << " slot " << i << ": owner and client disagree";
          ASSERT_EQ(r.ts, r.lock + 1);
          ASSERT_EQ(la.offset % kLockEntryBytes, 0u);
        }
        // No record slot there: nothing to lock (requests get refused).
        for (uint64_t off : {heap + 8, heap - 64, heap + backed * slot}) {
          EXPECT_EQ(f.nodes[n]->slot_at(table_region(id), off, kValue).rec, nullptr)
              << t.name << " offset " << off;
        }
        EXPECT_EQ(f.nodes[n]->slot_at(table_region(id), heap, kValue + 8).rec, nullptr)
            << "another value size";
      }
      // Entries are dense: an area per hosted copy, one entry per slot of
      // its heap's address space.
      const PartitionPlan p0 = plan_partition(f.cat, t, 0);
      EXPECT_GE(p0.lock_area_bytes, p0.heap_slots() * kLockEntryBytes);
      EXPECT_LT(p0.lock_area_bytes, p0.heap_slots() * kLockEntryBytes + 4096);
      EXPECT_EQ(hosted.size() * p0.lock_area_bytes, [&] {
        uint64_t b = 0;
        for (const auto& [rid, bytes] : regions) {
          if (rid == lock_region(id)) b = bytes;
        }
        return b;
      }()) << t.name;
      EXPECT_GT(slots, 0u);
      EXPECT_EQ(f.nodes[n]->slot_at(table_region(id), uint64_t{1} << 40, kValue).rec, nullptr);
      EXPECT_EQ(f.nodes[n]->slot_at(lock_region(id), 0, kValue).rec, nullptr);
    }
    EXPECT_EQ(f.nodes[n]->slot_at(table_region(kRangeT), 0, kValue).rec, nullptr);
  }

  // Owner-side writers.
  for (TableId id : {kHashT, kRecT}) {
    const TableSpec& t = f.t(id);
    const uint64_t key = key_of(id, 7);
    f.load(id, key, 1);
    const uint16_t n = f.cat.replicas_of(t, f.cat.partition_of(t, key), 0).primary;
    StoreNode& owner = *f.nodes[n];
    SlotRef r = slot_of(f, n, t, key);
    ASSERT_NE(r.rec, nullptr) << t.name;
    uint64_t* own_lock = reinterpret_cast<uint64_t*>(r.rec);
    // A lock held in the lock area blocks the owner's writers.
    const uint64_t held = lock_word(9, 0, 0, 1);
    __atomic_store_n(r.lock, held, __ATOMIC_RELEASE);
    EXPECT_EQ(owner.install(t, key, 5, val(key, 5), false).status().code(), Code::kUnavailable)
        << t.name;
    __atomic_store_n(r.lock, 0, __ATOMIC_RELEASE);
    // A word in the slot's own lock word is no lock.
    __atomic_store_n(own_lock, held, __ATOMIC_RELEASE);
    auto in = owner.install(t, key, 5, val(key, 5), false);
    ASSERT_TRUE(in.is_ok() && *in) << t.name << ": " << in.status().to_string();
    EXPECT_EQ(word(own_lock), held) << "the owner wrote the slot's own lock word";
    __atomic_store_n(own_lock, 0, __ATOMIC_RELEASE);
    // Reserve: the new record is published locked — in the lock area.
    const uint64_t fresh = key_of(id, 8), me = lock_word(1, 0, 0, 3);
    const uint16_t fn = f.cat.replicas_of(t, f.cat.partition_of(t, fresh), 0).primary;
    uint64_t base = 0;
    Result<RecordAddr> a = f.nodes[fn]->reserve(t, fresh, me, &base);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    const SlotRef rr = f.nodes[fn]->slot_at(table_region(id), a->offset, kValue);
    ASSERT_NE(rr.rec, nullptr);
    EXPECT_EQ(word(rr.lock), me);
    EXPECT_EQ(word(reinterpret_cast<uint64_t*>(rr.rec)), 0u);
    EXPECT_EQ(f.nodes[fn]->remove_held(t, fresh, *a, me + 1).code(), Code::kNotFound)
        << "not held with that word";
    ASSERT_TRUE(f.nodes[fn]->remove_held(t, fresh, *a, me).is_ok());
    EXPECT_EQ(word(rr.lock), 0u) << "a freed slot's lock stays held";
    // Delete: unlocked after, the slot's own words untouched.
    in = owner.install(t, key, 6, {}, true);
    ASSERT_TRUE(in.is_ok() && *in) << in.status().to_string();
    EXPECT_EQ(word(r.lock), 0u);
    EXPECT_EQ(word(own_lock), 0u);
    EXPECT_EQ(word(ts_word(r.rec)), 0u);
  }
}

// Lock words apart need the lock regions registered.
TEST(Tables, LockWordsApartWithoutLockRegionsAreRefused) {
  const Catalog cat = make_catalog(64);
  const ScratchPlan scratch{1, 1, scratch_per_coroutine(cat)};
  auto cluster = r2::testing::InProcCluster::make(1, 1, regions_of(scratch), nullptr, nullptr,
                                                  growable_regions_of(cat, 0, false));
  ASSERT_TRUE(cluster->error.is_ok());
  auto s = StoreNode::create(cat, cluster->f(0), /*locks_apart=*/true);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("lock region"), std::string::npos) << s.status().to_string();
}

// Quiet copies (store/record_io.h) replace the seal check of a node's
// reads of its own records only on volatile shm memory with the lock words
// in the slots; lock words apart (durable nodes) keep the seal check.
TEST(Tables, QuietCopiesOnlyWhereTheLockWordsAreInVolatileSlots) {
  const Catalog cat = make_catalog(64);
  const ScratchPlan scratch{1, 1, scratch_per_coroutine(cat)};
  for (bool apart : {false, true}) {
    auto cluster = r2::testing::InProcCluster::make(1, 1, regions_of(scratch), nullptr, nullptr,
                                                    growable_regions_of(cat, 0, apart));
    ASSERT_TRUE(cluster->error.is_ok());
    // shm's WRITEs are the issuing CPU's stores in op order; a fabric
    // whose WRITEs are not (ucx, verbs) never has quiet copies.
    const bool cpu_stores = cluster->f(0).info().writes_are_cpu_stores;
    EXPECT_EQ(cpu_stores, cluster->f(0).info().backend == "shm");
    auto s = StoreNode::create(cat, cluster->f(0), apart);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    EXPECT_EQ((*s)->quiet_copies(), !apart && kCpuStoresInOrder && cpu_stores) << "apart=" << apart;
  }
}

TEST(Tables, ErrorsNameTheProblem) {
  Fixture f(make_catalog(/*capacity=*/64));
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    if (idx != kCos) return;
    std::vector<uint8_t> big(kValue + 1, 1);
    for (TableId id : {kHashT, kRangeT, kRecT}) {
      const TableSpec& t = f.t(id);
      Status s = c.insert(co, t, 5, big);
      EXPECT_EQ(s.code(), Code::kOutOfRange) << t.name << ": " << s.to_string();
      ASSERT_TRUE(c.insert(co, t, 5, val(5, 1)).is_ok());
      EXPECT_EQ(c.insert(co, t, 5, val(5, 1)).code(), Code::kAlreadyExists) << t.name;
      EXPECT_EQ(c.update(co, t, 77777, val(77777, 1)).code(), Code::kNotFound) << t.name;
      EXPECT_EQ(c.remove(co, t, 77777).code(), Code::kNotFound) << t.name;
    }
    // A table sized for 64 records a partition takes three times as many:
    // it grows (a heap at the end of its address space: growth_test.cc).
    const TableSpec& h = f.t(kHashT);
    for (uint64_t k = 100; k < 100 + 64 * kParts * 3; ++k) {
      ASSERT_TRUE(c.insert(co, h, k, val(k, 1)).is_ok()) << k;
    }
    std::vector<uint64_t> keys;
    std::vector<uint8_t> vals;
    EXPECT_EQ(c.scan(co, h, 0, 10, keys, vals).code(), Code::kInvalidArgument);
    std::vector<uint8_t> small(kValue - 1);
    EXPECT_EQ(c.get(co, h, 5, small).status().code(), Code::kInvalidArgument);
  });
}

// Tables grow (plan.h "Growth"): every table is planned for 16 rows, and
// 6 000 rows go into each while the other node reads them one-sided — the
// records, buckets and leaves it meets lie in extents the owner backed
// after the reader's caches were trained. Every key published is found
// with its value; memory follows the rows (backed far below the address
// space, at most a few times the rows' and index bytes).
TEST(Tables, TablesGrowPastTheirSizeWhileTheOtherNodeReadsThem) {
  Fixture f(make_catalog(/*capacity=*/16));
  constexpr uint64_t kRows = 6000;
  std::array<std::atomic<uint64_t>, 3> published{};
  std::atomic<int> writers_done{0};
  std::atomic<uint64_t> reads{0};
  const TableId ids[3] = {kHashT, kRangeT, kRecT};
  f.run([&](r2::Co& co, TableClient& c, int idx) {
    std::vector<uint8_t> out(kValue);
    if (idx < 3) {  // node 0: one writer per table, keys in order
      const TableSpec& t = f.t(ids[idx]);
      for (uint64_t i = 0; i < kRows; ++i) {
        const uint64_t k = key_of(ids[idx], i);
        Status s = c.insert(co, t, k, val(k, i + 1));
        ASSERT_TRUE(s.is_ok()) << t.name << " row " << i << ": " << s.to_string();
        published[idx].store(i + 1, std::memory_order_release);
        if (i % 64 == 0) co.yield_idle();
      }
      writers_done.fetch_add(1);
      return;
    }
    if (idx < kCos) return;
    // node 1: readers of whatever is published, newest rows first.
    std::mt19937_64 rng(idx);
    for (int round = 0; round < 200000 && writers_done.load() < 3; ++round) {
      const int which = static_cast<int>(rng() % 3);
      const uint64_t n = published[which].load(std::memory_order_acquire);
      if (n == 0) {
        co.yield_idle();
        continue;
      }
      const uint64_t i = rng() % 2 == 0 ? n - 1 - rng() % std::min<uint64_t>(n, 64) : rng() % n;
      const uint64_t k = key_of(ids[which], i);
      Result<bool> got = c.get(co, f.t(ids[which]), k, out);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_TRUE(*got) << f.t(ids[which]).name << " key " << k << " published but not found";
      ASSERT_EQ(key_in(out), k);
      ASSERT_EQ(gen_of(out), i + 1);
      reads.fetch_add(1);
    }
  });
  EXPECT_EQ(writers_done.load(), 3);
  EXPECT_GT(reads.load(), 1000u);
  EXPECT_GT(f.stats.reads, 0u) << "the reads must include one-sided ones";
  uint64_t rows = 0;  // records of the hash and record tables, both nodes
  for (uint16_t n = 0; n < kNodes; ++n) {
    for (const TableMemory& m : f.nodes[n]->memory()) {
      if (m.table != kRangeT) rows += m.rows;
      if (m.index_bytes == 0) continue;  // no copy of it took a row
      EXPECT_LT(m.backed, m.reserved / 1000) << "node " << n << " table " << m.table;
      EXPECT_LT(m.backed, 4 * (m.row_bytes + m.index_bytes) + (uint64_t{1} << 20) * m.copies)
          << "node " << n << " table " << m.table;
    }
  }
  EXPECT_EQ(rows, 2 * kRows);
}

}  // namespace
}  // namespace drtmx::store::tables
