// The learned cache against the real owner: node 0 runs an XTree with the
// XStoreService handlers, node 1 runs XStoreClients. Static phase: answers
// equal a std::map with no fallback. Concurrent phase: a thread inserts
// keys into the tree (splits, incarnation bumps, torn leaf images) while
// client coroutines GET and SCAN one-sided; keys loaded before are always
// found with their values, keys never inserted are never found, keys being
// inserted are either absent or right. Then everything equals the map again
// and the model expands. (xstore_* tests link both sides: tests/CMakeLists.txt.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "r2/support/worker_cluster.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/client/xstore_client.h"
#include "store/xstore/server/xstore_service.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {
namespace {

constexpr r2::RegionId kLeafRegion = 1, kScratchRegion = 2;
constexpr uint32_t kTree = 9;
constexpr r2::NodeId kOwner = 0, kClient = 1;
constexpr int kCos = 3;

uint64_t value_of(uint64_t key) {
  return key * 0x9E3779B97F4A7C15ull + 11;
}

// Keys by class: loaded before (4r), inserted concurrently (4r+1), never (4r+2).
std::vector<uint64_t> make_keys(size_t n, uint64_t seed, uint64_t cls) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> s;
  while (s.size() < n) s.insert(((rng() >> 4) & ~uint64_t{3}) | cls);
  std::vector<uint64_t> v(s.begin(), s.end());
  std::shuffle(v.begin(), v.end(), rng);  // random insert order
  return v;
}

struct Owner {
  Owner() {
    area.region = kLeafRegion;
    area.leaf_offset = 64;
    area.fanout = 16;
    area.value_bytes = 8;
    area.leaf_capacity = 16384;
    scratch = XStoreClient::scratch_bytes(area);
    cluster = r2::testing::InProcCluster::make(
        2, 1, {{kLeafRegion, area.leaf_offset + area.bytes()}, {kScratchRegion, scratch * kCos}});
    EXPECT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
    XTreeOptions o;
    o.area = area;
    auto t = XTree::create(cluster->base(kOwner, kLeafRegion), area.leaf_offset + area.bytes(), o);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    tree = std::move(t.value());
    EXPECT_TRUE(svc.add_tree(kTree, tree.get()).is_ok());
  }
  void insert(uint64_t k) {
    const uint64_t v = value_of(k);
    ASSERT_EQ(tree->insert(k, &v), XStatus::kOk);
  }
  XRemote remote() const { return {{kOwner, 0}, kTree, area}; }
  std::span<uint8_t> buf(int i) {
    return {cluster->base(kClient, kScratchRegion) + i * scratch, scratch};
  }
  void run(const std::function<void(r2::Co&, int)>& body) {
    r2::WorkerConfig cfg;
    cfg.coroutines = kCos;
    auto r = r2::testing::run_workers(
        *cluster, cfg,
        [&](r2::Worker& w) {
          if (w.node() == kOwner) {
            ASSERT_TRUE(svc.register_on(w).is_ok());
          }
          if (w.node() == kClient) {
            for (int i = 0; i < kCos; ++i) {
              ASSERT_TRUE(w.spawn([&, i](r2::Co& co) { body(co, i); }).is_ok());
            }
          }
        },
        std::chrono::seconds(120));
    EXPECT_FALSE(r.timed_out);
  }

  LeafArea area;
  size_t scratch = 0;
  std::unique_ptr<r2::testing::InProcCluster> cluster;
  std::unique_ptr<XTree> tree;
  XStoreService svc;
};

void expect_exact(XStoreClient& c, r2::Co& co, const std::map<uint64_t, uint64_t>& m,
                  const std::vector<uint64_t>& probes) {
  uint64_t v = 0;
  for (uint64_t k : probes) {
    auto r = c.get(co, k, &v);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto it = m.find(k);
    ASSERT_EQ(*r, it != m.end()) << k;
    if (*r) {
      ASSERT_EQ(v, it->second) << k;
    }
  }
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  for (size_t i = 0; i < probes.size(); i += 4) {
    const size_t n = 1 + probes[i] % 80;
    bool end = false;
    ASSERT_TRUE(c.scan(co, probes[i], n, keys, vals, &end).is_ok());
    auto it = m.lower_bound(probes[i]);
    size_t j = 0;
    for (; j < n && it != m.end(); ++j, ++it) {
      ASSERT_LT(j, keys.size());
      ASSERT_EQ(keys[j], it->first);
      ASSERT_EQ(std::memcmp(vals.data() + 8 * j, &it->second, 8), 0);
    }
    ASSERT_EQ(keys.size(), j);
    ASSERT_EQ(end, it == m.end());
  }
}

std::vector<uint64_t> probes_of(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                                size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> p;
  for (size_t i = 0; i < n; ++i) p.push_back(i % 2 ? a[rng() % a.size()] : b[rng() % b.size()]);
  p.push_back(0);
  p.push_back(UINT64_MAX);
  return p;
}

TEST(XCacheOnXTree, StaticThenConcurrentInsertsThenExpansion) {
  Owner own;
  const auto loaded = make_keys(20000, 1, 0), fresh = make_keys(20000, 2, 1),
             never = make_keys(5000, 3, 2);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : loaded) {
    own.insert(k);
    m[k] = value_of(k);
  }
  XCache cache(XCacheOptions{});
  std::vector<std::unique_ptr<XStoreClient>> cl;
  for (int i = 0; i < kCos; ++i) {
    cl.push_back(std::make_unique<XStoreClient>(cache, own.remote(), own.buf(i)));
    ASSERT_TRUE(cl.back()->check().is_ok());
  }

  // Static: exact, one-sided only.
  own.run([&](r2::Co& co, int i) {
    if (i == 0) {
      ASSERT_TRUE(cl[0]->warm(co, 100).is_ok());  // 200 keys per sub-model
    } else {
      return;
    }
    cl[0]->reset_stats();
    expect_exact(*cl[0], co, m, probes_of(loaded, never, 4000, 4));
    EXPECT_EQ(cl[0]->stats().fallbacks, 0u);
    // YCSB-C-like GETs of present keys on a tree grown by random inserts.
    cl[0]->reset_stats();
    std::mt19937_64 rng(7);
    uint64_t v;
    for (int q = 0; q < 20000; ++q) {
      const uint64_t k = loaded[rng() % loaded.size()];
      auto r = cl[0]->get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
    }
    const XClientStats& st = cl[0]->stats();
    std::printf(
        "static XTree (%llu leaves): %u sub-models, %.3f READ round trips and %.3f READs per "
        "GET\n",
        (unsigned long long)own.tree->stats().leaves_used, cache.sub_models(),
        double(st.round_trips) / double(st.gets), double(st.reads) / double(st.gets));
    EXPECT_LE(double(st.round_trips) / double(st.gets), 2.2);
    EXPECT_EQ(st.fallbacks, 0u);
    // The same with best_leaf_first (the XTree's leaves are not in key order).
    XClientOptions bo;
    bo.best_leaf_first = true;
    XStoreClient bf(cache, own.remote(), own.buf(1), bo);
    rng.seed(7);
    for (int q = 0; q < 20000; ++q) {
      const uint64_t k = loaded[rng() % loaded.size()];
      auto r = bf.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(k));
    }
    std::printf("  best leaf first: %.3f READ round trips and %.3f READs per GET\n",
                double(bf.stats().round_trips) / double(bf.stats().gets),
                double(bf.stats().reads) / double(bf.stats().gets));
    EXPECT_EQ(bf.stats().fallbacks, 0u);
  });

  // Concurrent: an owner thread inserts `fresh` while clients read.
  std::atomic<bool> inserting{true};
  std::thread writer([&] {
    for (uint64_t k : fresh) own.insert(k);
    inserting = false;
  });
  std::set<uint64_t> fresh_set(fresh.begin(), fresh.end());
  std::set<uint64_t> loaded_set(loaded.begin(), loaded.end());
  own.run([&](r2::Co& co, int i) {
    std::mt19937_64 rng(10 + i);
    uint64_t v = 0;
    std::vector<uint64_t> keys;
    std::vector<uint8_t> vals;
    // Bounded by count; usually outlasts the writer.
    for (int q = 0; q < 6000; ++q) {
      if (i == 0 && q % 500 == 0) {
        ASSERT_TRUE(cl[i]->apply_splits(co).is_ok());
      }
      const uint64_t k = q % 3 == 0   ? loaded[rng() % loaded.size()]
                         : q % 3 == 1 ? fresh[rng() % fresh.size()]
                                      : never[rng() % never.size()];
      auto r = cl[i]->get(co, k, &v);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      if (q % 3 == 0) {
        ASSERT_TRUE(*r) << "loaded key " << k << " not found";
      }
      if (q % 3 == 2) {
        ASSERT_FALSE(*r) << "never-inserted key " << k << " found";
      }
      if (*r) {
        ASSERT_EQ(v, value_of(k));
      }
      if (q % 10 == 0) {
        const uint64_t start = loaded[rng() % loaded.size()] - rng() % 1000;
        const size_t n = 1 + rng() % 60;
        ASSERT_TRUE(cl[i]->scan(co, start, n, keys, vals).is_ok());
        ASSERT_LE(keys.size(), n);
        for (size_t j = 0; j < keys.size(); ++j) {
          ASSERT_GE(keys[j], start);
          if (j > 0) {
            ASSERT_GT(keys[j], keys[j - 1]);
          }
          ASSERT_TRUE(loaded_set.count(keys[j]) || fresh_set.count(keys[j])) << keys[j];
          const uint64_t want = value_of(keys[j]);
          ASSERT_EQ(std::memcmp(vals.data() + 8 * j, &want, 8), 0);
        }
        // No loaded key is skipped inside the returned range.
        if (!keys.empty()) {
          for (auto it = loaded_set.lower_bound(start);
               it != loaded_set.end() && *it <= keys.back(); ++it) {
            ASSERT_TRUE(std::binary_search(keys.begin(), keys.end(), *it)) << "lost " << *it;
          }
        }
        if (keys.size() < n) {
          ASSERT_EQ(loaded_set.lower_bound(keys.empty() ? start : keys.back() + 1),
                    loaded_set.end());
        }
      }
    }
  });
  writer.join();
  for (uint64_t k : fresh) m[k] = value_of(k);
  XClientStats s;
  for (auto& c : cl) s.add(c->stats());
  std::printf(
      "concurrent inserts (%llu splits): %llu GETs %llu SCANs, fallbacks %llu, spec %llu/%llu, "
      "mismatches %llu, torn %llu, refreshes %llu (failed %llu)\n",
      (unsigned long long)own.tree->stats().splits, (unsigned long long)s.gets,
      (unsigned long long)s.scans, (unsigned long long)s.fallbacks, (unsigned long long)s.spec_hits,
      (unsigned long long)s.spec_reads, (unsigned long long)s.mismatches,
      (unsigned long long)s.torn, (unsigned long long)s.refreshes,
      (unsigned long long)s.refresh_failures);

  // Quiescent again: exact; then expansion (40 000 keys on 100 sub-models).
  own.run([&](r2::Co& co, int i) {
    if (i != 0) return;
    expect_exact(*cl[0], co, m, probes_of(fresh, never, 3000, 5));
    ASSERT_TRUE(cl[0]->apply_splits(co).is_ok());
    bool expanded = false;
    ASSERT_TRUE(cl[0]->expand_if_needed(co, &expanded).is_ok());
    EXPECT_TRUE(expanded);
    EXPECT_GE(cache.sub_models(), 200u);
    cl[0]->reset_stats();
    expect_exact(*cl[0], co, m, probes_of(loaded, fresh, 3000, 6));
    EXPECT_EQ(cl[0]->stats().fallbacks, 0u);
  });
}

}  // namespace
}  // namespace drtmx::store::xstore
