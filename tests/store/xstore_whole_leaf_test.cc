// Whole-leaf GETs (XClientOptions::whole_leaf_max_bytes: keys and value
// slots in one READ, the value taken from the copy) against the real owner
// while it writes: an owner thread updates "stable" keys in place, deletes
// and re-inserts "churn" keys, and inserts "grow" keys (splits, incarnation
// bumps, slots moved by deletes and splits) in the same few dozen leaves,
// while client coroutines GET one-sided. Every answer must be a value the
// key really had during the GET: its own key, a version no older than the
// last write finished before the GET and no newer than the last write
// started before it returned. Stable keys are never absent. (xstore_* tests
// link both sides: tests/CMakeLists.txt.)
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "r2/support/worker_cluster.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/client/xstore_client.h"
#include "store/xstore/server/xstore_service.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {
namespace {

constexpr r2::RegionId kLeafRegion = 1, kScratchRegion = 2;
constexpr uint32_t kTree = 5;
constexpr r2::NodeId kOwner = 0, kClient = 1;
constexpr int kCos = 3;
constexpr uint32_t kKeys =
    600;  // ~40 leaves: writes and reads meet often  // stable: i % 3 == 0, churn: 1, grow: 2

struct Val {
  uint64_t key;
  uint64_t ver;
};

uint64_t key_of(uint32_t i) {
  return 1000 + uint64_t{i} * 7;
}

// The tree's leaf area in kLeafRegion: `capacity` leaves of 16 Vals.
LeafArea leaf_area(uint32_t capacity) {
  LeafArea area;
  area.region = kLeafRegion;
  area.leaf_offset = 64;
  area.fanout = 16;
  area.value_bytes = sizeof(Val);
  area.leaf_capacity = capacity;
  return area;
}

TEST(XStoreWholeLeaf, GetsDuringUpdatesDeletesAndSplitsReturnOnlyRealValues) {
  const LeafArea area = leaf_area(4096);
  XClientOptions copt;
  ASSERT_LE(leaf_used_bytes(area.fanout, area.value_bytes), copt.whole_leaf_max_bytes);
  const size_t scratch = XStoreClient::scratch_bytes(area, copt);
  auto cluster = r2::testing::InProcCluster::make(
      2, 1, {{kLeafRegion, area.leaf_offset + area.bytes()}, {kScratchRegion, scratch * kCos}});
  ASSERT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
  XTreeOptions to;
  to.area = area;
  auto tr = XTree::create(cluster->base(kOwner, kLeafRegion), area.leaf_offset + area.bytes(), to);
  ASSERT_TRUE(tr.is_ok()) << tr.status().to_string();
  XTree& tree = **tr;
  XStoreService svc;
  ASSERT_TRUE(svc.add_tree(kTree, &tree).is_ok());

  // Versions: started[i] is raised before a write of key i, done[i] after.
  std::vector<std::atomic<uint64_t>> started(kKeys), done(kKeys);
  for (uint32_t i = 0; i < kKeys; ++i) {
    if (i % 3 == 2) continue;  // grow keys come later
    const Val v{key_of(i), 1};
    ASSERT_EQ(tree.insert(v.key, &v), XStatus::kOk);
    started[i] = done[i] = 1;
  }
  XCache cache(XCacheOptions{});
  const XRemote remote{{kOwner, 0}, kTree, area};
  std::vector<std::unique_ptr<XStoreClient>> cl;
  for (int i = 0; i < kCos; ++i) {
    cl.push_back(std::make_unique<XStoreClient>(
        cache, remote,
        std::span<uint8_t>(cluster->base(kClient, kScratchRegion) + i * scratch, scratch), copt));
    ASSERT_TRUE(cl.back()->check().is_ok());
  }

  std::atomic<bool> warmed{false}, writer_done{false};
  std::atomic<uint64_t> writes{0};
  std::thread writer([&] {
    while (!warmed.load()) std::this_thread::yield();
    std::mt19937_64 rng(7);
    uint32_t grown = 0;
    // A fixed amount of work (every grow key inserted); the readers read
    // until it is done, so reads and writes overlap however the threads
    // are scheduled.
    for (int n = 0; n < 300000; ++n) {
      uint32_t i = static_cast<uint32_t>(rng() % kKeys);
      if (i % 3 == 2) {
        // Grow keys in key order (splits all along); once all are in, a
        // stable key instead.
        i = grown * 3 + 2 < kKeys ? grown++ * 3 + 2 : i - 2;
      }
      const uint64_t ver = started[i].load() + 1;
      const Val v{key_of(i), ver};
      started[i] = ver;
      if (i % 3 == 0) {
        ASSERT_EQ(tree.update(v.key, &v), XStatus::kOk);
      } else if (i % 3 == 1) {
        ASSERT_EQ(tree.remove(v.key), XStatus::kOk);
        ASSERT_EQ(tree.insert(v.key, &v), XStatus::kOk);
      } else {
        ASSERT_EQ(tree.insert(v.key, &v), XStatus::kOk);
      }
      done[i] = ver;
      ++writes;
    }
    writer_done = true;
  });

  std::atomic<uint64_t> found{0}, absent{0}, bad{0};
  auto run = r2::testing::run_workers(
      *cluster, r2::WorkerConfig{.coroutines = kCos},
      [&](r2::Worker& w) {
        if (w.node() == kOwner) {
          ASSERT_TRUE(svc.register_on(w).is_ok());
          return;
        }
        for (int c = 0; c < kCos; ++c) {
          ASSERT_TRUE(w.spawn([&, c](r2::Co& co) {
                         XStoreClient& x = *cl[c];
                         if (c == 0) {
                           ASSERT_TRUE(x.warm(co).is_ok());
                           warmed = true;
                         }
                         while (!warmed.load()) co.yield();
                         std::mt19937_64 rng(100 + c);
                         for (int q = 0; q < 20000 || !writer_done.load(); ++q) {
                           if (c == 0 && q % 1000 == 999) {
                             ASSERT_TRUE(x.apply_splits(co).is_ok());
                           }
                           const auto i = static_cast<uint32_t>(rng() % kKeys);
                           const uint64_t lo = done[i].load();
                           Val v{0, 0};
                           auto r = x.get(co, key_of(i), &v);
                           const uint64_t hi = started[i].load();
                           ASSERT_TRUE(r.is_ok()) << r.status().to_string();
                           if (!*r) {
                             ++absent;
                             EXPECT_NE(i % 3, 0u) << "stable key " << key_of(i) << " not found";
                             continue;
                           }
                           ++found;
                           if (v.key != key_of(i) || v.ver < lo || v.ver > hi) {
                             ++bad;
                             ADD_FAILURE() << "key " << key_of(i) << " got {" << v.key << ", "
                                           << v.ver << "}, versions " << lo << ".." << hi;
                           }
                         }
                       }).is_ok());
        }
      },
      std::chrono::seconds(120));
  warmed = true;  // (if warming failed)
  writer.join();
  EXPECT_FALSE(run.timed_out);
  XClientStats s;
  for (auto& c : cl) s.add(c->stats());
  std::printf(
      "%llu writes (%llu splits); %llu GETs: %llu found, %llu absent; %llu from the leaf copy, "
      "%llu torn, %llu fallbacks, %llu mismatches, spec %llu/%llu\n",
      (unsigned long long)writes.load(), (unsigned long long)tree.stats().splits,
      (unsigned long long)s.gets, (unsigned long long)found.load(),
      (unsigned long long)absent.load(), (unsigned long long)s.values_in_leaf,
      (unsigned long long)s.torn, (unsigned long long)s.fallbacks, (unsigned long long)s.mismatches,
      (unsigned long long)s.spec_hits, (unsigned long long)s.spec_reads);
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(writes.load(), 300000u);
  EXPECT_GE(tree.stats().splits, 40u);  // 49: the writer is deterministic
  EXPECT_GT(s.values_in_leaf, 0u);

  // Quiescent, splits applied: every key found, each from one whole-leaf
  // READ, with its last version.
  auto quiet = r2::testing::run_workers(*cluster, r2::WorkerConfig{}, [&](r2::Worker& w) {
    if (w.node() == kOwner) {
      ASSERT_TRUE(svc.register_on(w).is_ok());
      return;
    }
    ASSERT_TRUE(w.spawn([&](r2::Co& co) {
                   XStoreClient& x = *cl[0];
                   ASSERT_TRUE(x.apply_splits(co).is_ok());
                   x.reset_stats();
                   for (uint32_t i = 0; i < kKeys; ++i) {
                     Val v{0, 0};
                     auto r = x.get(co, key_of(i), &v);
                     ASSERT_TRUE(r.is_ok() && *r) << key_of(i);
                     EXPECT_EQ(v.key, key_of(i));
                     EXPECT_EQ(v.ver, done[i].load());
                   }
                   EXPECT_EQ(x.stats().values_in_leaf, kKeys);
                   EXPECT_EQ(x.stats().round_trips, kKeys);
                   EXPECT_EQ(x.stats().fallbacks, 0u);
                 }).is_ok());
  });
  EXPECT_FALSE(quiet.timed_out);
}

}  // namespace
}  // namespace drtmx::store::xstore

namespace drtmx::store::xstore {
namespace {

// A client of a tree the owner does not serve: warm() fails with the
// owner's reason and the request it was answering (built only on failure).
TEST(XStoreClientErrors, AnUnservedTreeNamesTheRequestAndTheReason) {
  const LeafArea area = leaf_area(64);
  const size_t scratch = XStoreClient::scratch_bytes(area, {});
  auto cluster = r2::testing::InProcCluster::make(
      2, 1, {{kLeafRegion, area.leaf_offset + area.bytes()}, {kScratchRegion, scratch}});
  ASSERT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
  XTreeOptions to;
  to.area = area;
  auto tr = XTree::create(cluster->base(kOwner, kLeafRegion), area.leaf_offset + area.bytes(), to);
  ASSERT_TRUE(tr.is_ok()) << tr.status().to_string();
  XStoreService svc;
  ASSERT_TRUE(svc.add_tree(kTree, tr->get()).is_ok());
  XCache cache(XCacheOptions{});
  XStoreClient client(cache, XRemote{{kOwner, 0}, kTree + 94, area},
                      std::span<uint8_t>(cluster->base(kClient, kScratchRegion), scratch));
  ASSERT_TRUE(client.check().is_ok());
  Status warm;
  auto run = r2::testing::run_workers(
      *cluster, r2::WorkerConfig{.coroutines = 1},
      [&](r2::Worker& w) {
        if (w.node() == kOwner) {
          ASSERT_TRUE(svc.register_on(w).is_ok());
          return;
        }
        ASSERT_TRUE(w.spawn([&](r2::Co& co) { warm = client.warm(co); }).is_ok());
      },
      std::chrono::seconds(60));
  ASSERT_FALSE(run.timed_out);
  ASSERT_FALSE(warm.is_ok());
  EXPECT_NE(warm.message().find("xstore FETCH_RUN [0, "), std::string::npos) << warm.message();
  EXPECT_NE(warm.message().find("no tree with id 99"), std::string::npos) << warm.message();
  std::printf("[ error    ] %s\n", warm.to_string().c_str());
}

}  // namespace
}  // namespace drtmx::store::xstore
