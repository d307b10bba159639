// XTree under concurrency: owner threads insert (many splits), update and
// delete disjoint key sets and check every answer against their own
// std::map, a scanner checks scans against a set of keys nobody changes,
// and a thread of another node READs leaves one-sided through the shm
// fabric: every copy whose seal verifies must be a consistent image (the
// values embed a checksum of their key), every other copy counts as torn.
// Bounded in time (about 1.5 s) and in operations.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "r2/support/inproc_cluster.h"
#include "store/xstore/leaf.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kVb = 24;  // value: key | version | key ^ version * C
constexpr uint64_t kC = 0x9E3779B97F4A7C15ull;
constexpr uint32_t kWriters = 3;
constexpr uint64_t kSpace = 3000;  // keys per writer (and stable keys)
constexpr r2::RegionId kTreeRegion = 1, kBufRegion = 2;

struct Val {
  uint64_t w[3];
};
Val make_val(uint64_t key, uint64_t ver) {
  return Val{{key, ver, key ^ (ver * kC)}};
}
bool val_ok(const uint8_t* p, uint64_t key) {
  Val v;
  std::memcpy(&v, p, sizeof v);
  return v.w[0] == key && v.w[2] == (key ^ (v.w[1] * kC));
}
// Writer t owns keys 4r + t; keys 4r + 3 are the stable set.
uint64_t writer_key(uint32_t t, uint64_t r) {
  return 4 * r + t;
}
uint64_t stable_key(uint64_t r) {
  return 4 * r + 3;
}

TEST(XTreeConcurrent, WritersScannersAndOneSidedReaders) {
  XTreeOptions o;
  o.area.region = kTreeRegion;
  o.area.leaf_offset = 0;
  o.area.fanout = 8;
  o.area.value_bytes = kVb;
  o.area.leaf_capacity = 12000;
  const size_t region_bytes = o.area.bytes();
  auto c =
      r2::testing::InProcCluster::make(2, 1, {{kTreeRegion, region_bytes}, {kBufRegion, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto served = c->serve({0});  // the tree's node answers one-sided READs (ucx over TCP)
  auto tr = XTree::create(c->base(0, kTreeRegion), region_bytes, o);
  ASSERT_TRUE(tr.is_ok()) << tr.status().to_string();
  XTree& t = **tr;
  const LeafArea area = t.area();

  for (uint64_t r = 0; r < kSpace; ++r) {
    Val v = make_val(stable_key(r), 7);
    ASSERT_EQ(t.insert(stable_key(r), &v), XStatus::kOk);
  }
  const uint64_t splits_before = t.stats().splits;

  const auto deadline = Clock::now() + std::chrono::milliseconds(1500);
  std::atomic<bool> stop{false};
  std::atomic<int> writers_left{kWriters};
  // The one-sided reader needs enough images to show anything; over ucx on
  // TCP each READ waits for the target's worker, a thread among six on the
  // machine's cores, so the writers go on (up to 20 s more) until it has
  // them. On shm the reader has far more by the deadline.
  const bool shm = c->f(0).info().backend == "shm";
  const uint64_t want_sealed = shm ? 1000 : 100, want_values = shm ? 100 : 10;
  std::atomic<uint64_t> sealed{0}, torn{0}, values_ok{0}, values_torn{0}, values_moved{0};
  // A writer's 400 000 ops can end in half a second while the reader, over
  // ucx/tcp, has a dozen images: it goes on then too, for the reader.
  auto running = [&](int op) {
    const auto now = Clock::now();
    if (now < deadline && op < 400000) return true;
    return (sealed.load() < want_sealed || values_ok.load() < want_values) &&
           now < deadline + std::chrono::seconds(20);
  };
  std::vector<std::map<uint64_t, uint64_t>> refs(kWriters);
  std::vector<std::string> errors(kWriters + 2);
  std::atomic<uint64_t> hot_key{0};  // writer 0's latest key: the reader aims at its leaf

  auto writer = [&](uint32_t id) {
    std::mt19937_64 rng(id + 1);
    auto& ref = refs[id];
    Val out;
    for (int op = 0; running(op); ++op) {
      const uint64_t k = writer_key(id, rng() % kSpace);
      const uint64_t ver = rng();
      if (id == 0) hot_key.store(k, std::memory_order_relaxed);
      Val v = make_val(k, ver);
      const int kind = static_cast<int>(rng() % 10);
      const bool present = ref.count(k) != 0;
      XStatus s;
      XStatus want;
      if (kind < 5) {  // inserts dominate, so the tree grows and splits
        s = t.insert(k, &v);
        want = present ? XStatus::kAlreadyExists : XStatus::kOk;
        if (!present) ref[k] = ver;
      } else if (kind < 7) {
        s = t.update(k, &v);
        want = present ? XStatus::kOk : XStatus::kNotFound;
        if (present) ref[k] = ver;
      } else if (kind < 8) {
        s = t.remove(k);
        want = present ? XStatus::kOk : XStatus::kNotFound;
        ref.erase(k);
      } else {
        s = t.get(k, &out);
        want = present ? XStatus::kOk : XStatus::kNotFound;
        if (present && s == XStatus::kOk && std::memcmp(&out, &(v = make_val(k, ref[k])), kVb)) {
          errors[id] = "get(" + std::to_string(k) + ") returned a wrong value";
          break;
        }
      }
      if (s != want) {
        errors[id] = "op " + std::to_string(kind) + " on key " + std::to_string(k) + " gave " +
                     xstatus_name(s) + ", expected " + xstatus_name(want);
        break;
      }
    }
    if (--writers_left == 0) stop = true;
  };

  std::atomic<uint64_t> scans{0};
  auto scanner = [&] {
    std::mt19937_64 rng(99);
    std::vector<uint64_t> keys;
    std::vector<uint8_t> vals;
    while (!stop.load() && Clock::now() < deadline + std::chrono::seconds(21)) {
      const uint64_t start = rng() % (4 * kSpace);
      const size_t n = 1 + rng() % 64;
      t.scan(start, n, keys, vals);
      ++scans;
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i > 0 && keys[i] <= keys[i - 1]) {
          errors[kWriters] = "scan out of order";
          return;
        }
        if (keys[i] < start || !val_ok(vals.data() + i * kVb, keys[i])) {
          errors[kWriters] = "scan returned a bad pair for key " + std::to_string(keys[i]);
          return;
        }
      }
      // Every stable key in [start, last returned] is there.
      if (!keys.empty()) {
        uint64_t want = 0;
        for (uint64_t k = start; k <= keys.back(); ++k) want += (k % 4 == 3);
        uint64_t got = 0;
        for (uint64_t k : keys) got += (k % 4 == 3);
        if (got != want) {
          errors[kWriters] = "scan from " + std::to_string(start) +
                             " lost stable keys: " + std::to_string(got) + " of " +
                             std::to_string(want);
          return;
        }
      } else if (start <= stable_key(kSpace - 1)) {
        errors[kWriters] = "empty scan from " + std::to_string(start);
        return;
      }
    }
  };

  // One-sided reader on node 1.
  auto remote = [&] {
    r2::Endpoint* ep = c->f(1).endpoint(0);
    uint8_t* buf = c->base(1, kBufRegion);
    uint8_t* vbuf = buf + 32768;
    std::mt19937_64 rng(7);
    auto read = [&](uint64_t off, void* dst, uint32_t len) {
      r2::WorkRequest wr;
      wr.verb = r2::Verb::kRead;
      wr.len = len;
      wr.local = dst;
      wr.remote = r2::RemoteAddr{0, kTreeRegion, off};
      if (ep->post(wr) != r2::PostResult::kOk) return false;
      ep->doorbell(0);
      auto comps = r2::testing::poll_n(ep, 1);
      return comps.size() == 1 && comps[0].status == r2::OpStatus::kOk;
    };
    uint64_t leaves = 1;
    for (uint64_t it = 0;
         !stop.load() && Clock::now() < deadline + std::chrono::seconds(21) && it < 5000000; ++it) {
      if ((it & 63) == 0) leaves = t.stats().leaves_used;
      uint32_t aln = static_cast<uint32_t>(rng() % leaves);
      if (it & 1) {  // half of the READs go where a writer is busy
        uint32_t inc;
        t.locate(hot_key.load(std::memory_order_relaxed), &aln, &inc);
      }
      if (!read(area.leaf_addr(aln), buf, leaf_keys_bytes(area.fanout))) {
        errors[kWriters + 1] = "remote READ failed";
        return;
      }
      uint64_t meta, seal;
      std::memcpy(&meta, buf, 8);
      std::memcpy(&seal, buf + 8, 8);
      const auto* keys = reinterpret_cast<const uint64_t*>(buf + 16);
      if (keys_seal(meta, keys, area.fanout) != seal) {
        ++torn;
        continue;
      }
      ++sealed;
      LeafMeta m = unpack_meta(meta);
      if (m.count > area.fanout) {
        errors[kWriters + 1] = "sealed leaf image with count " + std::to_string(m.count);
        return;
      }
      for (uint32_t i = 0; i < m.count; ++i) {
        for (uint32_t j = i + 1; j < m.count; ++j) {
          if (keys[i] == keys[j]) {
            errors[kWriters + 1] =
                "sealed leaf image holds key " + std::to_string(keys[i]) + " twice";
            return;
          }
        }
      }
      if (m.count == 0) continue;
      const uint32_t i = static_cast<uint32_t>(rng() % m.count);
      const uint64_t key = keys[i];
      if (!read(area.value_addr(aln, i), vbuf, static_cast<uint32_t>(value_slot_bytes(kVb)))) {
        errors[kWriters + 1] = "remote value READ failed";
        return;
      }
      uint64_t sk, ss;
      std::memcpy(&sk, vbuf, 8);
      std::memcpy(&ss, vbuf + 8, 8);
      if (value_seal(sk, vbuf + 16, kVb) != ss) {
        ++values_torn;
      } else if (sk != key) {
        ++values_moved;  // the slot was reused since the keys READ: re-read the leaf
      } else if (!val_ok(vbuf + 16, key)) {
        errors[kWriters + 1] =
            "sealed value slot of key " + std::to_string(key) + " is inconsistent";
        return;
      } else {
        ++values_ok;
      }
    }
  };

  std::vector<std::thread> ts;
  for (uint32_t w = 0; w < kWriters; ++w) ts.emplace_back(writer, w);
  ts.emplace_back(scanner);
  ts.emplace_back(remote);
  for (auto& th : ts) th.join();
  for (auto& e : errors) EXPECT_TRUE(e.empty()) << e;

  const XTreeStats st = t.stats();
  std::printf(
      "splits %llu, leaves %llu, restarts %llu, scans %llu, one-sided leaf images: %llu "
      "sealed, %llu torn; values: %llu ok, %llu torn, %llu moved\n",
      (unsigned long long)(st.splits - splits_before), (unsigned long long)st.leaves_used,
      (unsigned long long)st.restarts, (unsigned long long)scans.load(),
      (unsigned long long)sealed.load(), (unsigned long long)torn.load(),
      (unsigned long long)values_ok.load(), (unsigned long long)values_torn.load(),
      (unsigned long long)values_moved.load());
  EXPECT_GT(st.splits - splits_before, 100u);
  EXPECT_GE(sealed.load(), want_sealed);
  EXPECT_GE(values_ok.load(), want_values);
  EXPECT_GT(scans.load(), 10u);

  // Final state equals the union of the references, by get, scan and export.
  std::map<uint64_t, uint64_t> all;
  for (auto& r : refs) all.insert(r.begin(), r.end());
  for (uint64_t r = 0; r < kSpace; ++r) all[stable_key(r)] = 7;
  Val out;
  for (auto& [k, ver] : all) {
    ASSERT_EQ(t.get(k, &out), XStatus::kOk) << k;
    Val want = make_val(k, ver);
    ASSERT_EQ(std::memcmp(&out, &want, kVb), 0) << k;
  }
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  EXPECT_TRUE(t.scan(0, all.size() + 10, keys, vals));
  ASSERT_EQ(keys.size(), all.size());
  size_t i = 0;
  for (auto& [k, ver] : all) ASSERT_EQ(keys[i++], k);
  std::vector<uint64_t> exported;
  for (const LeafRun& r : t.export_all())
    exported.insert(exported.end(), r.keys.begin(), r.keys.end());
  EXPECT_EQ(exported, keys);
  uint64_t next;
  bool lost;
  auto ev = t.splits_since(0, SIZE_MAX, &next, &lost);
  EXPECT_EQ(next, st.splits);
  EXPECT_EQ(lost, st.splits > 4096);
}

// One writer hammering one leaf (appends, deletes that move the last pair,
// in-place updates) while a remote thread READs the whole leaf (keys and
// values in one READ): a copy whose keys seal verifies has consistent keys;
// each value slot whose seal verifies and names the expected key holds a
// consistent value. On two busy cores the threads overlap only sometimes,
// so torn copies are counted, not required.
TEST(XTreeConcurrent, OneHotLeaf) {
  XTreeOptions o;
  o.area.region = kTreeRegion;
  o.area.fanout = 8;
  o.area.value_bytes = kVb;
  o.area.leaf_capacity = 4;
  const size_t region_bytes = o.area.bytes();
  auto c =
      r2::testing::InProcCluster::make(2, 1, {{kTreeRegion, region_bytes}, {kBufRegion, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto served = c->serve({0});  // the tree's node answers one-sided READs (ucx over TCP)
  auto tr = XTree::create(c->base(0, kTreeRegion), region_bytes, o);
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  const LeafArea area = t.area();
  const auto deadline = Clock::now() + std::chrono::milliseconds(400);
  std::atomic<bool> stop{false};
  // The writer goes on (up to 20 s more) until the reader has its images:
  // over ucx/tcp a READ waits for the target's worker (see above).
  std::atomic<uint64_t> sealed_seen{0};
  std::thread w([&] {
    std::mt19937_64 rng(3);
    auto running = [&] {
      const auto now = Clock::now();
      return now < deadline ||
             (sealed_seen.load() <= 100 && now < deadline + std::chrono::seconds(20));
    };
    for (int op = 0; (op < 2000000 || sealed_seen.load() <= 100) && running(); ++op) {
      const uint64_t k = 100 + rng() % 6;  // at most 6 keys: leaf 0 never splits
      Val v = make_val(k, rng());
      switch (rng() % 3) {
        case 0:
          (void)t.insert(k, &v);
          break;
        case 1:
          (void)t.update(k, &v);
          break;
        default:
          (void)t.remove(k);
      }
    }
    stop = true;
  });
  r2::Endpoint* ep = c->f(1).endpoint(0);
  uint8_t* buf = c->base(1, kBufRegion);
  uint64_t sealed = 0, torn = 0, vok = 0, vbad = 0;
  std::string err;
  for (uint64_t it = 0; !stop.load() && it < 3000000 && err.empty(); ++it) {
    r2::WorkRequest wr;
    wr.len = static_cast<uint32_t>(area.leaf_size());
    wr.local = buf;
    wr.remote = r2::RemoteAddr{0, kTreeRegion, area.leaf_addr(0)};
    ASSERT_EQ(ep->post(wr), r2::PostResult::kOk);
    ep->doorbell(0);
    auto comps = r2::testing::poll_n(ep, 1);
    ASSERT_EQ(comps.size(), 1u);
    uint64_t meta, seal;
    std::memcpy(&meta, buf, 8);
    std::memcpy(&seal, buf + 8, 8);
    const auto* keys = reinterpret_cast<const uint64_t*>(buf + 16);
    if (keys_seal(meta, keys, area.fanout) != seal) {
      ++torn;
      continue;
    }
    sealed_seen.store(++sealed);
    const LeafMeta m = unpack_meta(meta);
    if (m.count > 6) err = "sealed image with count " + std::to_string(m.count);
    for (uint32_t i = 0; i < m.count && err.empty(); ++i) {
      if (keys[i] < 100 || keys[i] > 105) err = "sealed image with a foreign key";
      const uint8_t* s = buf + value_slot_offset(area.fanout, kVb, i);
      uint64_t sk, ss;
      std::memcpy(&sk, s, 8);
      std::memcpy(&ss, s + 8, 8);
      if (value_seal(sk, s + 16, kVb) != ss || sk != keys[i]) {
        ++vbad;
      } else if (!val_ok(s + 16, sk)) {
        err = "sealed value slot is inconsistent";
      } else {
        ++vok;
      }
    }
  }
  stop = true;
  w.join();
  EXPECT_TRUE(err.empty()) << err;
  std::printf("hot leaf: %llu sealed, %llu torn images; values %llu ok, %llu torn or moved\n",
              (unsigned long long)sealed, (unsigned long long)torn, (unsigned long long)vok,
              (unsigned long long)vbad);
  EXPECT_GT(sealed, 100u);
}

// Threads race to insert the same keys (each in its own order) in a deep
// tree (3 separators per inner node: many concurrent inner and root
// splits), while others delete and re-insert: every key ends up exactly
// once, and every insert of a key succeeded exactly once more than its
// deletes.
TEST(XTreeConcurrent, RacingInsertsOfTheSameKeysInADeepTree) {
  constexpr uint32_t kThreads = 4;
  constexpr uint64_t kKeys = 20000;
  XTreeOptions o;
  o.area.region = kTreeRegion;
  o.area.fanout = 4;
  o.area.value_bytes = kVb;
  o.area.leaf_capacity = 20000;
  o.inner_keys = 3;
  std::vector<uint64_t> mem(o.area.bytes() / 8);
  auto tr = XTree::create(reinterpret_cast<uint8_t*>(mem.data()), mem.size() * 8, o);
  ASSERT_TRUE(tr.is_ok()) << tr.status().to_string();
  XTree& t = **tr;
  std::vector<std::vector<int64_t>> net(kThreads, std::vector<int64_t>(kKeys, 0));
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  std::vector<std::thread> ts;
  for (uint32_t id = 0; id < kThreads; ++id) {
    ts.emplace_back([&, id] {
      std::vector<uint64_t> order(kKeys);
      for (uint64_t i = 0; i < kKeys; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937_64(id));
      std::mt19937_64 rng(id + 100);
      for (uint64_t i = 0; i < kKeys && Clock::now() < deadline; ++i) {
        const uint64_t k = order[i] * 2654435761ull % (1ull << 40);  // spread, not sequential
        Val v = make_val(k, id);
        if (t.insert(k, &v) == XStatus::kOk) ++net[id][order[i]];
        if (id % 2 == 1 && rng() % 4 == 0) {  // odd threads also delete some
          const uint64_t j = order[rng() % (i + 1)];
          if (t.remove(j * 2654435761ull % (1ull << 40)) == XStatus::kOk) --net[id][j];
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  uint64_t present = 0;
  Val out;
  for (uint64_t i = 0; i < kKeys; ++i) {
    int64_t n = 0;
    for (auto& v : net) n += v[i];
    const uint64_t k = i * 2654435761ull % (1ull << 40);
    const XStatus s = t.get(k, &out);
    ASSERT_TRUE(n == 0 || n == 1) << "key " << k << " net inserts " << n;
    ASSERT_EQ(s, n == 1 ? XStatus::kOk : XStatus::kNotFound) << "key " << k;
    if (n == 1) {
      ASSERT_TRUE(val_ok(reinterpret_cast<uint8_t*>(&out), k));
      ++present;
    }
  }
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  EXPECT_TRUE(t.scan(0, kKeys + 1, keys, vals));
  EXPECT_EQ(keys.size(), present);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  std::printf("deep tree: %llu keys, %llu leaves, %llu inner nodes, %llu restarts\n",
              (unsigned long long)present, (unsigned long long)t.stats().leaves_used,
              (unsigned long long)t.stats().inner_nodes, (unsigned long long)t.stats().restarts);
  EXPECT_GT(t.stats().inner_nodes, 1000u);
}

}  // namespace
}  // namespace drtmx::store::xstore
