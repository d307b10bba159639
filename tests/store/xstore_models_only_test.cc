// Models-only clients against the real owner: node 0 runs an XTree, the
// XStoreService handlers and a TtPublisher that trains the models over the
// tree and writes the sealed TT image into the owner's registered memory
// (the leaf region, after the leaves); node 1 runs XStoreClients whose
// shared XCache holds only the models fetched with FETCH_MODELS and READs
// TT entries from the image.
//   ModelsRoundTripBitExact: encode/install in pages gives the same
//     predictions (LR and spline top models); sealed chunks verify only
//     under their generation.
//   StaticExactAndReadCost: every present key, key±1, 0, 2^64-1 and SCANs
//     equal a std::map with no fallback; READs per GET and client bytes
//     against a full-mode client on the same tree.
//   RepublishedImageIsNeverUsedWithOldModels: after splits and a republish,
//     a client still on the old models sees every chunk seal fail and gets
//     its answers by RPC (all right); after fetch_models one-sided again.
//   ConcurrentSplitsAndRepublish: a thread inserts (splits) while an owner
//     maintenance thread republishes every few ms and client coroutines GET
//     and SCAN (one of them re-fetches the models now and then): loaded keys
//     always found with their value, never-inserted keys never; then a
//     final republish and everything exact again.
//   Misuse: unpublished tree, tree without publisher, bad areas.
// xstore_* tests link both sides (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "r2/support/worker_cluster.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/client/xstore_client.h"
#include "store/xstore/server/tt_publisher.h"
#include "store/xstore/server/xstore_service.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {
namespace {

constexpr r2::RegionId kLeafRegion = 1, kScratchRegion = 2;
constexpr uint32_t kTree = 9;
constexpr r2::NodeId kOwner = 0, kClient = 1;
constexpr int kCos = 3;
constexpr uint64_t kImageCapacity = 256 * 1024;

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
  explicit Owner(bool with_publisher = true) {
    area.region = kLeafRegion;
    area.leaf_offset = 64;
    area.fanout = 16;
    area.value_bytes = 8;
    area.leaf_capacity = 16384;
    image_offset = (area.leaf_offset + area.bytes() + 63) & ~uint64_t{63};
    region_bytes = image_offset + kImageCapacity;
    scratch = XStoreClient::scratch_bytes(area);
    cluster = r2::testing::InProcCluster::make(
        2, 1, {{kLeafRegion, region_bytes}, {kScratchRegion, scratch * (kCos + 1)}});
    EXPECT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
    XTreeOptions o;
    o.area = area;
    auto t = XTree::create(cluster->base(kOwner, kLeafRegion), region_bytes, o);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    tree = std::move(t.value());
    EXPECT_TRUE(svc.add_tree(kTree, tree.get()).is_ok());
    if (with_publisher) {
      auto p = TtPublisher::create(tree.get(), cluster->base(kOwner, kLeafRegion), region_bytes,
                                   publisher_options());
      EXPECT_TRUE(p.is_ok()) << p.status().to_string();
      pub = std::move(p.value());
      EXPECT_TRUE(svc.add_publisher(kTree, pub.get()).is_ok());
    }
  }
  TtPublisherOptions publisher_options() const {
    TtPublisherOptions po;
    po.cache.fanout = area.fanout;
    po.image = {kLeafRegion, image_offset, kImageCapacity};
    return po;
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
        std::chrono::seconds(240));
    EXPECT_FALSE(r.timed_out);
  }

  LeafArea area;
  uint64_t image_offset = 0;
  size_t region_bytes = 0;
  size_t scratch = 0;
  std::unique_ptr<r2::testing::InProcCluster> cluster;
  std::unique_ptr<XTree> tree;
  std::unique_ptr<TtPublisher> pub;
  XStoreService svc;
};

XCacheOptions cache_options() {
  XCacheOptions o;
  o.fanout = 16;
  return o;
}

// GET of every probe and SCANs from every 4th probe, against the map.
void expect_exact(XStoreClient& c, r2::Co& co, const std::map<uint64_t, uint64_t>& m,
                  const std::vector<uint64_t>& probes, size_t scan_every = 4) {
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
  for (size_t i = 0; i < probes.size(); i += scan_every) {
    const size_t n = 1 + probes[i] % 80;
    bool end = false;
    auto st = c.scan(co, probes[i], n, keys, vals, &end);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
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

// Every key of `present`, key-1 and key+1 of each, 0 and 2^64-1.
std::vector<uint64_t> all_probes(const std::vector<uint64_t>& present) {
  std::vector<uint64_t> p;
  for (uint64_t k : present) {
    p.push_back(k);
    p.push_back(k - 1);
    p.push_back(k + 1);
  }
  p.push_back(0);
  p.push_back(UINT64_MAX);
  return p;
}

std::vector<LeafRun> run_of(const std::vector<uint64_t>& sorted, uint32_t per_leaf) {
  std::vector<LeafRun> run;
  for (size_t i = 0; i < sorted.size(); i += per_leaf) {
    LeafRun l;
    l.aln = static_cast<uint32_t>(run.size());
    l.incarnation = 3;
    l.low = run.empty() ? 0 : sorted[i];
    const size_t e = std::min(sorted.size(), i + per_leaf);
    l.keys.assign(sorted.begin() + i, sorted.begin() + e);
    l.count = static_cast<uint32_t>(l.keys.size());
    l.last_leaf = e == sorted.size();
    l.high = l.last_leaf ? 0 : sorted[e];
    run.push_back(std::move(l));
  }
  return run;
}

TEST(XStoreModelsOnly, ModelsRoundTripBitExact) {
  std::vector<uint64_t> keys = make_keys(30000, 41, 0);
  // Two clusters far apart so the spline top model has work to do.
  for (uint64_t& k : keys) {
    if (k % 8 == 0) k = (k >> 20) | 1;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const auto run = run_of(keys, 11);
  for (TopKind kind : {TopKind::kLinear, TopKind::kSpline}) {
    XCacheOptions o = cache_options();
    o.top_model = kind;
    XCache full(o);
    ASSERT_TRUE(full.train(run).is_ok());
    std::vector<uint64_t> image(full.sealed_image_bytes() / 8);
    ASSERT_TRUE(
        full.write_sealed_image(reinterpret_cast<uint8_t*>(image.data()), image.size() * 8, 77)
            .is_ok());
    EXPECT_EQ(image[0], 77u);
    EXPECT_EQ(image[1], XCache::kSealedImageMagic);
    // Pages of 100 sub-models, reassembled as the client does.
    XModelsReply first;
    std::vector<uint8_t> knots, subs;
    for (uint32_t at = 0; at < full.sub_models();) {
      XModelsReply h;
      std::vector<uint8_t> out;
      full.encode_models(at, 100, &h, out);
      ASSERT_EQ(h.first_sub, at);
      ASSERT_GT(h.count, 0u);
      const size_t kb = size_t{h.knots} * sizeof(XKnotRec);
      if (at == 0) {
        first = h;
        knots.assign(out.begin(), out.begin() + static_cast<ptrdiff_t>(kb));
      }
      subs.insert(subs.end(), out.begin() + static_cast<ptrdiff_t>(kb), out.end());
      at += h.count;
    }
    first.count = first.m;
    first.generation = 77;
    first.image_bytes = image.size() * 8;
    first.region = 5;
    first.image_offset = 4096;
    XCache mo(cache_options());
    ASSERT_TRUE(mo.install_models(first, knots, subs, {2, 5, 4096}).is_ok());
    EXPECT_TRUE(mo.models_only());
    EXPECT_TRUE(mo.sealed_image());
    EXPECT_EQ(mo.image_generation(), 77u);
    ASSERT_EQ(mo.sub_models(), full.sub_models());
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < keys.size() + 20000; ++i) {
      const uint64_t k = i < keys.size() ? keys[i] + (i % 3) - 1 : rng();
      const Prediction p = full.predict(k), q = mo.predict(k);
      ASSERT_EQ(p.sub, q.sub);
      ASSERT_EQ(p.first, q.first);
      ASSERT_EQ(p.last, q.last);
      ASSERT_EQ(p.best, q.best);
    }
    // Every TT entry is where the models say, in a chunk that verifies
    // under generation 77 only.
    for (uint32_t s = 0; s < full.sub_models(); ++s) {
      for (uint32_t l = 0; l < full.sub_leaves(s); ++l) {
        const uint32_t c = l / XCache::kChunkEntries;
        const r2::RemoteAddr a = mo.tt_chunk_addr(s, c);
        ASSERT_EQ(a.node, 2);
        ASSERT_EQ(a.region, 5);
        const uint64_t* w = image.data() + (a.offset - 4096) / 8;
        ASSERT_EQ(w[1 + l % XCache::kChunkEntries], pack_tt(full.tt(s, l)));
        ASSERT_EQ(tt_chunk_seal(77, s, c, w + 1), w[0]);
        ASSERT_NE(tt_chunk_seal(78, s, c, w + 1), w[0]);
      }
    }
    // Malformed records are refused and leave the cache as it was.
    std::vector<uint8_t> cut(subs.begin(), subs.end() - 8);
    EXPECT_FALSE(mo.install_models(first, knots, cut, {2, 5, 4096}).is_ok());
    XModelsReply other = first;
    other.fanout = 32;
    EXPECT_FALSE(mo.install_models(other, knots, subs, {2, 5, 4096}).is_ok());
    EXPECT_EQ(mo.image_generation(), 77u);
    std::printf(
        "%s top: %u sub-models, models %zu B on the wire, image %zu B, client %zu B "
        "(full %zu B)\n",
        kind == TopKind::kLinear ? "LR" : "spline", full.sub_models(),
        sizeof(XModelsReply) + knots.size() + subs.size(), image.size() * 8, mo.memory_bytes(),
        full.memory_bytes());
  }
}

TEST(XStoreModelsOnly, StaticExactAndReadCost) {
  Owner own;
  const auto loaded = make_keys(20000, 1, 0);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : loaded) {
    own.insert(k);
    m[k] = value_of(k);
  }
  ASSERT_TRUE(own.pub->publish().is_ok());
  const TtPublisherStats ps = own.pub->stats();
  EXPECT_EQ(ps.generation, own.pub->generation());
  XCache mo(cache_options()), full(cache_options());
  XStoreClient c(mo, own.remote(), own.buf(0));
  XStoreClient f(full, own.remote(), own.buf(1));
  ASSERT_TRUE(c.check().is_ok());
  ASSERT_TRUE(f.check().is_ok());
  own.run([&](r2::Co& co, int i) {
    if (i != 0) return;
    bool changed = false;
    ASSERT_TRUE(c.fetch_models(co, &changed).is_ok());
    EXPECT_TRUE(changed);
    EXPECT_TRUE(mo.models_only());
    EXPECT_EQ(mo.image_generation(), ps.generation);
    EXPECT_EQ(mo.sub_models(), ps.sub_models);
    ASSERT_TRUE(c.fetch_models(co, &changed).is_ok());  // same generation: "unchanged"
    EXPECT_FALSE(changed);
    EXPECT_EQ(c.stats().model_fetches, 1u);
    ASSERT_TRUE(f.warm(co, mo.sub_models()).is_ok());  // full mode, same M

    std::vector<uint64_t> sorted(loaded.begin(), loaded.end());
    std::sort(sorted.begin(), sorted.end());
    c.reset_stats();
    expect_exact(c, co, m, all_probes(sorted), 10);
    EXPECT_EQ(c.stats().fallbacks, 0u);
    EXPECT_EQ(c.stats().tt_seal_failures, 0u);
    // Cost of a GET of a present key: models-only vs full, same models.
    std::mt19937_64 rng(7);
    std::vector<uint64_t> ks;
    for (int q = 0; q < 20000; ++q) ks.push_back(loaded[rng() % loaded.size()]);
    c.reset_stats();
    f.reset_stats();
    uint64_t v;
    for (uint64_t k : ks) {
      auto r = c.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(k));
      r = f.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
    }
    const XClientStats& a = c.stats();
    const XClientStats& b = f.stats();
    const double n = double(ks.size());
    std::printf(
        "tree: %llu leaves, %llu keys; models: %u sub-models, generation %llu, publish %.1f ms\n"
        "  models-only: %.3f round trips, %.3f READs (%.3f of them TT) per GET; client %zu B; "
        "FETCH_MODELS %llu B; image %llu B in the owner's region\n"
        "  full:        %.3f round trips, %.3f READs per GET; client %zu B\n",
        (unsigned long long)own.tree->stats().leaves_used, (unsigned long long)m.size(),
        mo.sub_models(), (unsigned long long)ps.generation, ps.last_publish_ms,
        double(a.round_trips) / n, double(a.reads) / n, double(a.tt_reads) / n, mo.memory_bytes(),
        (unsigned long long)ps.models_bytes, (unsigned long long)ps.image_bytes,
        double(b.round_trips) / n, double(b.reads) / n, full.memory_bytes());
    EXPECT_EQ(a.fallbacks + b.fallbacks, 0u);
    EXPECT_EQ(a.tt_reads, a.gets);                     // one TT READ per GET
    EXPECT_EQ(a.round_trips, b.round_trips + a.gets);  // ... and nothing else more
    EXPECT_EQ(a.reads, b.reads + a.gets);
    EXPECT_LT(mo.memory_bytes() * 2, full.memory_bytes());
  });
}

TEST(XStoreModelsOnly, RepublishedImageIsNeverUsedWithOldModels) {
  Owner own;
  const auto loaded = make_keys(8000, 11, 0), fresh = make_keys(8000, 12, 1);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : loaded) {
    own.insert(k);
    m[k] = value_of(k);
  }
  ASSERT_TRUE(own.pub->publish().is_ok());
  const uint64_t g1 = own.pub->generation();
  XCache mo(cache_options());
  XStoreClient c(mo, own.remote(), own.buf(0));
  ASSERT_TRUE(c.check().is_ok());
  own.run([&](r2::Co& co, int i) {
    if (i == 0) {
      ASSERT_TRUE(c.fetch_models(co).is_ok());
    }
  });
  // Splits, then a republish with twice the keys: new layout, new generation.
  for (uint64_t k : fresh) {
    own.insert(k);
    m[k] = value_of(k);
  }
  bool published = false;
  ASSERT_TRUE(own.pub->republish_if_stale(&published).is_ok());
  EXPECT_TRUE(published);
  EXPECT_GT(own.pub->generation(), g1);
  EXPECT_GT(own.pub->stats().sub_models, mo.sub_models());
  own.run([&](r2::Co& co, int i) {
    if (i != 0) return;
    EXPECT_EQ(mo.image_generation(), g1);  // still the old models
    c.reset_stats();
    uint64_t v;
    for (uint64_t k : loaded) {
      auto r = c.get(co, k, &v);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ASSERT_TRUE(*r) << "loaded key " << k << " not found with the old models";
      ASSERT_EQ(v, value_of(k));
    }
    // Every lookup READ chunks of the new image and refused them.
    EXPECT_EQ(c.stats().tt_seal_failures, loaded.size());
    EXPECT_EQ(c.stats().fallbacks, loaded.size());
    std::printf("old models on a republished image: %llu GETs, %llu seal failures, %llu by RPC\n",
                (unsigned long long)c.stats().gets, (unsigned long long)c.stats().tt_seal_failures,
                (unsigned long long)c.stats().fallbacks);
    bool changed = false;
    ASSERT_TRUE(c.fetch_models(co, &changed).is_ok());
    EXPECT_TRUE(changed);
    EXPECT_EQ(mo.image_generation(), own.pub->generation());
    c.reset_stats();
    std::vector<uint64_t> all;
    for (auto& [k, val] : m) all.push_back(k);
    expect_exact(c, co, m, all_probes(all), 16);
    EXPECT_EQ(c.stats().fallbacks, 0u);
  });
}

TEST(XStoreModelsOnly, ConcurrentSplitsAndRepublish) {
  Owner own;
  const auto loaded = make_keys(20000, 1, 0), fresh = make_keys(20000, 2, 1),
             never = make_keys(5000, 3, 2);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : loaded) {
    own.insert(k);
    m[k] = value_of(k);
  }
  ASSERT_TRUE(own.pub->publish().is_ok());
  XCache mo(cache_options());
  std::vector<std::unique_ptr<XStoreClient>> cl;
  for (int i = 0; i < kCos; ++i) {
    cl.push_back(std::make_unique<XStoreClient>(mo, own.remote(), own.buf(i)));
    ASSERT_TRUE(cl.back()->check().is_ok());
  }
  own.run([&](r2::Co& co, int i) {
    if (i == 0) {
      ASSERT_TRUE(cl[0]->fetch_models(co).is_ok());
    }
  });

  // The writer inserts `fresh`, paced (1 ms every 100 keys) so that the
  // inserts overlap the clients' operations; the owner's maintenance thread
  // republishes every few ms while it does (bounded by the writer).
  std::atomic<bool> inserting{true};
  std::atomic<uint64_t> republishes{0};
  std::thread writer([&] {
    for (size_t j = 0; j < fresh.size(); ++j) {
      own.insert(fresh[j]);
      if (j % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    inserting = false;
  });
  std::thread maintenance([&] {
    while (inserting.load()) {
      bool p = false;
      const Status st = own.pub->republish_if_stale(&p);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      if (p) ++republishes;
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  });
  std::set<uint64_t> fresh_set(fresh.begin(), fresh.end());
  std::set<uint64_t> loaded_set(loaded.begin(), loaded.end());
  own.run([&](r2::Co& co, int i) {
    std::mt19937_64 rng(10 + i);
    uint64_t v = 0;
    std::vector<uint64_t> keys;
    std::vector<uint8_t> vals;
    for (int q = 0; q < 6000; ++q) {
      if (i == 0 && q % 250 == 0) {
        const Status st = cl[0]->fetch_models(co);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
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
        const Status st = cl[i]->scan(co, start, n, keys, vals);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
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
  maintenance.join();
  for (uint64_t k : fresh) m[k] = value_of(k);
  XClientStats s;
  for (auto& c : cl) s.add(c->stats());
  std::printf(
      "concurrent inserts (%llu splits), %llu republishes: %llu GETs %llu SCANs, fallbacks %llu, "
      "seal failures %llu, model fetches %llu, mismatches %llu, spec %llu/%llu, torn %llu\n",
      (unsigned long long)own.tree->stats().splits, (unsigned long long)republishes.load(),
      (unsigned long long)s.gets, (unsigned long long)s.scans, (unsigned long long)s.fallbacks,
      (unsigned long long)s.tt_seal_failures, (unsigned long long)s.model_fetches,
      (unsigned long long)s.mismatches, (unsigned long long)s.spec_hits,
      (unsigned long long)s.spec_reads, (unsigned long long)s.torn);

  // Quiescent: republish, fetch, exact with no fallback.
  bool published = false;
  ASSERT_TRUE(own.pub->republish_if_stale(&published).is_ok());
  own.run([&](r2::Co& co, int i) {
    if (i != 0) return;
    ASSERT_TRUE(cl[0]->fetch_models(co).is_ok());
    EXPECT_EQ(mo.image_generation(), own.pub->generation());
    cl[0]->reset_stats();
    std::vector<uint64_t> all;
    for (auto& [k, val] : m) all.push_back(k);
    std::vector<uint64_t> probes = all_probes(all);
    for (size_t j = 0; j < never.size(); j += 5) probes.push_back(never[j]);
    expect_exact(*cl[0], co, m, probes, 20);
    EXPECT_EQ(cl[0]->stats().fallbacks, 0u);
    EXPECT_EQ(cl[0]->stats().tt_seal_failures, 0u);
    std::printf("after the final republish: %u sub-models, %zu B client, exact with no fallback\n",
                mo.sub_models(), mo.memory_bytes());
  });
}

TEST(XStoreModelsOnly, Misuse) {
  Owner own;
  for (uint64_t k : make_keys(500, 51, 0)) own.insert(k);
  // Bad areas: overlapping the leaves, outside the region, misaligned, fanout.
  TtPublisherOptions po = own.publisher_options();
  po.image.offset = 128;
  EXPECT_FALSE(TtPublisher::create(own.tree.get(), own.cluster->base(kOwner, kLeafRegion),
                                   own.region_bytes, po)
                   .is_ok());
  po = own.publisher_options();
  po.image.capacity += 8;
  EXPECT_FALSE(TtPublisher::create(own.tree.get(), own.cluster->base(kOwner, kLeafRegion),
                                   own.region_bytes, po)
                   .is_ok());
  po = own.publisher_options();
  po.image.offset += 4;
  po.image.capacity -= 64;
  EXPECT_FALSE(TtPublisher::create(own.tree.get(), own.cluster->base(kOwner, kLeafRegion),
                                   own.region_bytes, po)
                   .is_ok());
  po = own.publisher_options();
  po.cache.fanout = 8;
  EXPECT_FALSE(TtPublisher::create(own.tree.get(), own.cluster->base(kOwner, kLeafRegion),
                                   own.region_bytes, po)
                   .is_ok());
  // An area too small for the image: publish fails, nothing is served.
  po = own.publisher_options();
  po.image.capacity = 128;
  auto small = TtPublisher::create(own.tree.get(), own.cluster->base(kOwner, kLeafRegion),
                                   own.region_bytes, po);
  ASSERT_TRUE(small.is_ok());
  Status st = (*small)->publish();
  EXPECT_EQ(st.code(), Code::kResourceExhausted) << st.to_string();
  EXPECT_EQ((*small)->generation(), 0u);
  // A second publisher for the same tree, a publisher for an unknown tree.
  EXPECT_FALSE(own.svc.add_publisher(kTree, small->get()).is_ok());
  EXPECT_FALSE(own.svc.add_publisher(kTree + 1, small->get()).is_ok());

  XStoreService bare;  // a tree without a publisher
  ASSERT_TRUE(bare.add_tree(kTree, own.tree.get()).is_ok());
  XFetchModelsReq req;
  req.h.tree = kTree;
  std::vector<uint8_t> out;
  st = bare.handle(kRpcXFetchModels, {reinterpret_cast<const uint8_t*>(&req), sizeof req}, out);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.to_string();

  XCache mo(cache_options());
  XStoreClient c(mo, own.remote(), own.buf(0));
  own.run([&](r2::Co& co, int i) {
    if (i != 0) return;
    uint64_t v;
    EXPECT_FALSE(c.get(co, 1, &v).is_ok());  // not trained
    const Status s1 = c.fetch_models(co);    // not published yet
    EXPECT_FALSE(s1.is_ok());
    EXPECT_NE(s1.message().find("not been published"), std::string::npos) << s1.to_string();
    EXPECT_FALSE(mo.trained());
  });
  ASSERT_TRUE(own.pub->publish().is_ok());
  const uint64_t g = own.pub->generation();
  bool p = true;
  ASSERT_TRUE(own.pub->republish_if_stale(&p).is_ok());
  EXPECT_FALSE(p);  // no split since
  EXPECT_EQ(own.pub->generation(), g);
  // A publisher re-created over the same area continues the generations.
  auto again = TtPublisher::create(own.tree.get(), own.cluster->base(kOwner, kLeafRegion),
                                   own.region_bytes, own.publisher_options());
  ASSERT_TRUE(again.is_ok());
  ASSERT_TRUE((*again)->publish().is_ok());
  EXPECT_GT((*again)->generation(), g);
}

}  // namespace
}  // namespace drtmx::store::xstore
