// XStoreClient over the shm fabric without the owner's XTree: node 0 holds a
// "test tree" — sorted keys laid into leaves of leaf.h format in a
// registered region (keys unsorted inside a leaf, NXT links, seals), with
// splits simulated by moving a leaf's upper half to a new leaf and bumping
// its incarnation — and answers GET / SCAN / FETCH_RUN by RPC with the wire
// formats of xstore_rpc.h. A coroutine on node 1 runs the client against a
// std::map oracle. Tree changes happen between worker runs (never
// concurrently with the client).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "r2/support/worker_cluster.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/client/xstore_client.h"
#include "store/xstore/leaf.h"
#include "store/xstore/server/xstore_rpc.h"

namespace drtmx::store::xstore {
namespace {

constexpr r2::RegionId kLeafRegion = 1, kScratchRegion = 2, kTTRegion = 3;
constexpr uint32_t kTree = 5;
constexpr r2::NodeId kOwner = 0, kClient = 1;

uint64_t value_of(uint64_t key) {
  return key * 0x9E3779B97F4A7C15ull + 7;
}

// The owner side for the tests: leaves in key order, written to `base`.
class TestTree {
 public:
  TestTree(uint8_t* base, const LeafArea& area) : base_(base), area_(area) {}

  // Lays sorted unique keys into leaves of random fill in [min_fill,
  // max_fill]. With shuffle_alns the physical numbers are a permutation of
  // the key order (as in a tree grown by random inserts).
  void load(const std::vector<uint64_t>& keys, uint32_t min_fill, uint32_t max_fill, uint64_t seed,
            bool shuffle_alns = false) {
    std::mt19937_64 rng(seed);
    size_t i = 0;
    do {
      Leaf l;
      const uint32_t fill = min_fill + static_cast<uint32_t>(rng() % (max_fill - min_fill + 1));
      for (uint32_t t = 0; t < fill && i < keys.size(); ++t) l.keys.push_back(keys[i++]);
      l.low = leaves_.empty() ? 0 : l.keys.front();
      l.inca = 1;
      leaves_.push_back(std::move(l));
    } while (i < keys.size());
    std::vector<uint32_t> alns(leaves_.size());
    for (uint32_t j = 0; j < alns.size(); ++j) alns[j] = j;
    if (shuffle_alns) std::shuffle(alns.begin(), alns.end(), rng);
    for (size_t j = 0; j < leaves_.size(); ++j) leaves_[j].aln = alns[j];
    next_aln_ = static_cast<uint32_t>(leaves_.size());
    EXPECT_LE(next_aln_, area_.leaf_capacity);
    for (size_t j = 0; j < leaves_.size(); ++j) write(j);
  }

  uint64_t val(uint64_t key) const {
    auto it = vals_.find(key);
    return it == vals_.end() ? value_of(key) : it->second;
  }

  // Splits the leaf at chain position j: the upper half moves to a new
  // right sibling, the leaf's incarnation is bumped, the split is logged.
  // Returns the new ALN.
  uint32_t split(size_t j) {
    Leaf r;
    Leaf& l = leaves_[j];
    const size_t m = l.keys.size() / 2;
    r.keys.assign(l.keys.begin() + static_cast<long>(m), l.keys.end());
    l.keys.resize(m);
    r.low = r.keys.empty() ? l.low + 1 : r.keys.front();
    r.aln = next_aln_++;
    r.inca = 1;
    ++l.inca;
    EXPECT_LE(next_aln_, area_.leaf_capacity);
    leaves_.insert(leaves_.begin() + static_cast<long>(j) + 1, std::move(r));
    write(j + 1);
    write(j);
    XSplitRec e;
    e.seq = split_log_.size() + 1;
    e.lo = leaves_[j].low;
    e.hi = j + 2 < leaves_.size() ? leaves_[j + 2].low - 1 : UINT64_MAX;
    e.left = leaves_[j].aln;
    e.right = leaves_[j + 1].aln;
    split_log_.push_back(e);
    return leaves_[j + 1].aln;
  }

  // Inserts a key (absent) into its covering leaf, splitting it first when full.
  void insert(uint64_t key) {
    size_t j = covering(key);
    if (leaves_[j].keys.size() >= area_.fanout) {
      split(j);
      j = covering(key);
    }
    auto& k = leaves_[j].keys;
    k.insert(std::upper_bound(k.begin(), k.end(), key), key);
    write(j);
  }

  size_t covering(uint64_t key) const {
    size_t lo = 0, hi = leaves_.size();
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (leaves_[mid].low <= key) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
  size_t leaves() const { return leaves_.size(); }
  uint64_t low_at(size_t j) const { return leaves_[j].low; }
  uint32_t aln_at(size_t j) const { return leaves_[j].aln; }
  const std::vector<uint64_t>& keys_at(size_t j) const { return leaves_[j].keys; }
  // Breaks (or restores) the keys seal of the leaf at chain position j.
  void corrupt_seal(size_t j, bool broken) {
    uint8_t* p = base_ + area_.leaf_addr(leaves_[j].aln);
    if (broken) {
      uint64_t bad = 0x0BADBADBADull;
      std::memcpy(p + 8, &bad, 8);
    } else {
      write(j);
    }
  }

  // Breaks (or restores) the value slot seal of `key` in the leaf at chain
  // position j.
  void corrupt_value(size_t j, uint64_t key, bool broken) {
    if (!broken) return write(j);
    uint8_t* p = base_ + area_.leaf_addr(leaves_[j].aln);
    for (uint32_t t = 0; t < area_.fanout; ++t) {
      uint64_t w;
      std::memcpy(&w, p + 16 + 8 * size_t{t}, 8);
      if (w != key) continue;
      uint8_t* slot = p + value_slot_offset(area_.fanout, area_.value_bytes, t);
      uint64_t seal;
      std::memcpy(&seal, slot + 8, 8);
      seal = ~seal;
      std::memcpy(slot + 8, &seal, 8);
    }
  }

  void serve(r2::Worker& w) {
    auto reg = [&](uint16_t id, std::vector<uint8_t> (TestTree::*fn)(std::span<const uint8_t>)) {
      ASSERT_TRUE(w.register_handler(id, [this, fn](r2::RpcRequest& req) {
                     ++rpcs;
                     std::vector<uint8_t> out = (this->*fn)(req.payload());
                     req.reply(out.data(), static_cast<uint32_t>(out.size()));
                   }).is_ok());
    };
    reg(kRpcXGet, &TestTree::on_get);
    reg(kRpcXScan, &TestTree::on_scan);
    reg(kRpcXFetchRun, &TestTree::on_fetch_run);
    reg(kRpcXUpdate, &TestTree::on_update);
    reg(kRpcXSplitsSince, &TestTree::on_splits);
  }

  uint64_t rpcs = 0;           // requests served (owner thread only)
  uint64_t runs_attached = 0;  // kWithRun replies

 private:
  struct Leaf {
    uint32_t aln = 0;
    uint32_t inca = 0;
    uint64_t low = 0;
    std::vector<uint64_t> keys;  // ascending
  };

  // Writes leaf j's image: keys rotated (unsorted), values, meta, seal.
  void write(size_t j) {
    const Leaf& l = leaves_[j];
    uint8_t* p = base_ + area_.leaf_addr(l.aln);
    std::memset(p, 0, area_.leaf_size());
    const size_t c = l.keys.size();
    std::vector<uint64_t> words(area_.fanout, 0);
    for (size_t t = 0; t < c; ++t) {
      const uint64_t k = l.keys[(t + l.aln) % c];
      words[t] = k;
      const uint64_t v = val(k);
      uint8_t* slot =
          p + value_slot_offset(area_.fanout, area_.value_bytes, static_cast<uint32_t>(t));
      const uint64_t seal = value_seal(k, &v, 8);
      std::memcpy(slot, &k, 8);
      std::memcpy(slot + 8, &seal, 8);
      std::memcpy(slot + 16, &v, 8);
    }
    const uint32_t next = j + 1 < leaves_.size() ? leaves_[j + 1].aln + 1 : 0;
    const uint64_t meta = pack_meta({l.inca, static_cast<uint32_t>(c), next});
    const uint64_t seal = keys_seal(meta, words.data(), area_.fanout);
    std::memcpy(p, &meta, 8);
    std::memcpy(p + 8, &seal, 8);
    std::memcpy(p + 16, words.data(), 8 * size_t{area_.fanout});
  }

  std::vector<uint8_t> on_get(std::span<const uint8_t> in) {
    XGetReq r;
    EXPECT_TRUE(wire_get(in, 0, &r));
    const size_t j = covering(r.key);
    const Leaf& l = leaves_[j];
    XGetReply g;
    g.aln = l.aln;
    g.incarnation = l.inca;
    const bool found = std::binary_search(l.keys.begin(), l.keys.end(), r.key);
    g.status = static_cast<uint8_t>(found ? XStatus::kOk : XStatus::kNotFound);
    std::vector<uint8_t> out;
    wire_put(out, g);
    if (found) wire_put(out, val(r.key));
    with_run(in, sizeof r, r.h.flags, out);
    return out;
  }

  std::vector<uint8_t> on_scan(std::span<const uint8_t> in) {
    XScanReq r;
    EXPECT_TRUE(wire_get(in, 0, &r));
    const uint32_t want = std::min(r.n, kMaxScanPairs);
    std::vector<uint64_t> keys;
    size_t j = covering(r.start);
    for (; j < leaves_.size() && keys.size() < want; ++j) {
      for (uint64_t k : leaves_[j].keys) {
        if (k >= r.start && keys.size() < want) keys.push_back(k);
      }
    }
    bool end = true;  // no key after the returned ones?
    if (!keys.empty()) {
      const size_t jl = covering(keys.back());
      for (size_t q = jl; q < leaves_.size() && end; ++q) {
        for (uint64_t k : leaves_[q].keys) end = end && k <= keys.back();
      }
    }
    XScanReply h;
    h.end_of_tree = end ? 1 : 0;
    h.count = static_cast<uint32_t>(keys.size());
    std::vector<uint8_t> out;
    wire_put(out, h);
    for (uint64_t k : keys) wire_put(out, k);
    for (uint64_t k : keys) wire_put(out, val(k));
    with_run(in, sizeof r, r.h.flags, out);
    return out;
  }

  std::vector<uint8_t> on_update(std::span<const uint8_t> in) {
    XUpdateReq r;
    EXPECT_TRUE(wire_get(in, 0, &r));
    uint64_t v = 0;
    EXPECT_TRUE(wire_get(in, sizeof r, &v));
    const size_t j = covering(r.key);
    const Leaf& l = leaves_[j];
    XPosReply p;
    const bool found = std::binary_search(l.keys.begin(), l.keys.end(), r.key);
    p.status = static_cast<uint8_t>(found ? XStatus::kOk : XStatus::kNotFound);
    p.hint_used = found && (r.h.flags & kUpdateHasHint) != 0 && r.hint_aln == l.aln &&
                  r.hint_incarnation == l.inca;
    p.aln = l.aln;
    p.incarnation = l.inca;
    if (found) {
      vals_[r.key] = v;
      write(j);
    }
    std::vector<uint8_t> out;
    wire_put(out, p);
    return out;
  }

  std::vector<uint8_t> on_splits(std::span<const uint8_t> in) {
    XSplitsReq r;
    EXPECT_TRUE(wire_get(in, 0, &r));
    XSplitsReply h;
    std::vector<uint8_t> body;
    for (uint64_t q = r.since; q < split_log_.size() && h.count < r.max; ++q) {
      wire_put(body, split_log_[q]);
      ++h.count;
    }
    h.next = r.since + h.count;
    std::vector<uint8_t> out;
    wire_put(out, h);
    out.insert(out.end(), body.begin(), body.end());
    return out;
  }

  // kWithRun: the request's XRunTail names a range whose run is appended.
  void with_run(std::span<const uint8_t> in, size_t off, uint32_t flags,
                std::vector<uint8_t>& out) {
    if ((flags & kWithRun) == 0) return;
    XRunTail t;
    EXPECT_TRUE(wire_get(in, off, &t));
    ++runs_attached;
    append_run(t.lo, t.hi, t.max_leaves, out);
  }

  std::vector<uint8_t> on_fetch_run(std::span<const uint8_t> in) {
    XFetchRunReq r;
    EXPECT_TRUE(wire_get(in, 0, &r));
    std::vector<uint8_t> out;
    append_run(r.lo, r.hi, r.max_leaves, out);
    return out;
  }

  void append_run(uint64_t lo, uint64_t hi, uint32_t max_leaves, std::vector<uint8_t>& out) {
    struct {
      uint64_t lo, hi;
      uint32_t max_leaves;
    } r{lo, hi, max_leaves};
    const size_t a = covering(r.lo), b = covering(r.hi);
    const size_t cap = std::min<size_t>(std::max<uint32_t>(r.max_leaves, 1), page_leaves);
    const size_t e = std::min(b + 1, a + cap);
    XRunReply h;
    h.split_seq = split_log_.size();
    h.done = e == b + 1 ? 1 : 0;
    h.leaves = static_cast<uint32_t>(e - a);
    h.next_lo = e == b + 1 ? 0 : leaves_[e].low;
    wire_put(out, h);
    for (size_t j = a; j < e; ++j) {
      const Leaf& l = leaves_[j];
      XRunLeaf rl;
      rl.aln = l.aln;
      rl.incarnation = l.inca;
      rl.count = static_cast<uint32_t>(l.keys.size());
      rl.flags = j + 1 == leaves_.size() ? kRunLeafLast : 0;
      rl.low = l.low;
      rl.high = j + 1 == leaves_.size() ? UINT64_MAX : leaves_[j + 1].low;
      wire_put(out, rl);
      for (uint64_t k : l.keys) wire_put(out, k);
    }
  }

 public:
  size_t page_leaves = kMaxRunLeaves;  // FETCH_RUN page size (small to test paging)

 private:
  uint8_t* base_;
  LeafArea area_;
  std::vector<Leaf> leaves_;
  uint32_t next_aln_ = 0;
  std::map<uint64_t, uint64_t> vals_;  // values changed by UPDATE
  std::vector<XSplitRec> split_log_;
};

// Two nodes, one thread each: node 0 owns the tree, node 1 runs the client.
struct Env {
  explicit Env(uint32_t leaf_capacity, size_t tt_bytes = 4096) {
    area.region = kLeafRegion;
    area.leaf_offset = 64;
    area.fanout = 16;
    area.value_bytes = 8;
    area.leaf_capacity = leaf_capacity;
    scratch_bytes = XStoreClient::scratch_bytes(area);
    cluster = r2::testing::InProcCluster::make(2, 1,
                                               {{kLeafRegion, area.leaf_offset + area.bytes()},
                                                {kScratchRegion, scratch_bytes * 8},
                                                {kTTRegion, tt_bytes}});
    EXPECT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
    tree = std::make_unique<TestTree>(cluster->base(kOwner, kLeafRegion), area);
  }

  XRemote remote() const { return {{kOwner, 0}, kTree, area}; }
  std::span<uint8_t> scratch(int i) {
    return {cluster->base(kClient, kScratchRegion) + i * scratch_bytes, scratch_bytes};
  }

  // Runs `body` on coroutine i of the client (count coroutines) while the
  // owner serves; returns when all bodies finished.
  void run(const std::function<void(r2::Co&, int)>& body, int count = 1) {
    r2::WorkerConfig cfg;
    cfg.coroutines = static_cast<uint16_t>(count);
    auto r = r2::testing::run_workers(
        *cluster, cfg,
        [&](r2::Worker& w) {
          if (w.node() == kOwner) tree->serve(w);
          if (w.node() == kClient) {
            for (int i = 0; i < count; ++i) {
              ASSERT_TRUE(w.spawn([&, i](r2::Co& co) { body(co, i); }).is_ok());
            }
          }
        },
        std::chrono::seconds(120));
    EXPECT_FALSE(r.timed_out);
    for (auto& w : r.workers) EXPECT_TRUE(w->failure().is_ok()) << w->failure().to_string();
  }

  LeafArea area;
  size_t scratch_bytes = 0;
  std::unique_ptr<r2::testing::InProcCluster> cluster;
  std::unique_ptr<TestTree> tree;
};

std::vector<uint64_t> uniform_keys(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> s;
  while (s.size() < n) s.insert(rng() >> 1);
  return {s.begin(), s.end()};
}
std::vector<uint64_t> sequential_keys(size_t n) {
  std::vector<uint64_t> k(n);
  for (size_t i = 0; i < n; ++i) k[i] = 5000 + 2 * i;
  return k;
}
// Dense clusters of keys at random places of a 2^40 range.
std::vector<uint64_t> clustered_keys(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> s;
  std::vector<uint64_t> centers(16);
  for (auto& c : centers) c = rng() % (1ull << 40);
  while (s.size() < n) s.insert(centers[rng() % centers.size()] + rng() % 20000);
  return {s.begin(), s.end()};
}
// A few clusters orders of magnitude apart: an LR top model puts most keys
// into one sub-model, whose line cannot follow them.
std::vector<uint64_t> extreme_clusters(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> s;
  const uint64_t centers[] = {100, 1ull << 32, 1ull << 50, 7ull << 58};
  while (s.size() < n) s.insert(centers[rng() % 4] + rng() % 20000);
  return {s.begin(), s.end()};
}

// Checks GET (present and absent) and SCAN against the oracle.
void check_against_map(XStoreClient& c, r2::Co& co, const std::map<uint64_t, uint64_t>& m,
                       const std::vector<uint64_t>& probes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (uint64_t k : probes) {
    uint64_t v = 0;
    auto r = c.get(co, k, &v);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto it = m.find(k);
    ASSERT_EQ(*r, it != m.end()) << "key " << k;
    if (*r) {
      ASSERT_EQ(v, it->second) << "key " << k;
    }
  }
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  for (uint64_t start : probes) {
    const size_t n = 1 + rng() % 100;
    bool end = false;
    ASSERT_TRUE(c.scan(co, start, n, keys, vals, &end).is_ok());
    auto it = m.lower_bound(start);
    size_t i = 0;
    for (; i < n && it != m.end(); ++i, ++it) {
      ASSERT_LT(i, keys.size()) << "scan(" << start << ", " << n << ") short";
      ASSERT_EQ(keys[i], it->first) << "scan(" << start << ", " << n << ") pair " << i;
      uint64_t v;
      std::memcpy(&v, vals.data() + 8 * i, 8);
      ASSERT_EQ(v, it->second);
    }
    ASSERT_EQ(keys.size(), i);
    ASSERT_EQ(vals.size(), 8 * i);
    ASSERT_EQ(end, it == m.end()) << "scan(" << start << ", " << n << ")";
  }
}

std::vector<uint64_t> probes_for(const std::vector<uint64_t>& keys, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> p;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = keys[rng() % keys.size()];
    switch (i % 4) {
      case 0:
        p.push_back(k);
        break;
      case 1:
        p.push_back(k + 1);
        break;  // usually absent, inside a gap
      case 2:
        p.push_back(k - 1);
        break;
      default:
        p.push_back(rng());
        break;
    }
  }
  p.push_back(0);
  p.push_back(UINT64_MAX);
  p.push_back(keys.back());
  p.push_back(keys.front());
  return p;
}

// A chain position >= from whose leaf lies inside one sub-model's interval
// (it does not straddle two), so that refreshing that sub-model refreshes
// every TT entry of the leaf.
size_t interior_leaf(const XCache& c, const TestTree& t, size_t from) {
  for (size_t j = from; j + 1 < t.leaves(); ++j) {
    if (c.pick(t.low_at(j)) == c.pick(t.low_at(j + 1) - 1)) return j;
  }
  return from;
}

class XCacheClientDist : public ::testing::TestWithParam<int> {};

TEST_P(XCacheClientDist, GetAndScanMatchAMapOnStaticData) {
  std::vector<uint64_t> keys = GetParam() == 0 || GetParam() == 5 ? uniform_keys(20000, 1)
                               : GetParam() == 1                  ? sequential_keys(20000)
                               : GetParam() == 2                  ? clustered_keys(20000, 2)
                                                                  : extreme_clusters(20000, 2);
  XCacheOptions o;
  if (GetParam() == 4) o.top_model = TopKind::kSpline;
  Env env(4096);
  env.tree->load(keys, 6, 16, 3, /*shuffle_alns=*/GetParam() == 0 || GetParam() == 5);
  env.tree->page_leaves = 300;  // several FETCH_RUN pages
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCache cache(o);
  XClientOptions co_opt;
  co_opt.best_leaf_first = GetParam() == 5;
  XStoreClient client(cache, env.remote(), env.scratch(0), co_opt);
  ASSERT_TRUE(client.check().is_ok());
  env.run([&](r2::Co& co, int) {
    ASSERT_TRUE(client.warm(co).is_ok());
    client.reset_stats();
    check_against_map(client, co, m, probes_for(keys, 4000, 4), 5);
    // Scan starts at every sub-model edge (the gap example of §4.6).
    std::vector<uint64_t> edges;
    for (uint32_t i = 0; i < cache.sub_models(); ++i) {
      if (cache.sub_empty(i)) continue;
      edges.push_back(cache.sub_lo(i));
      edges.push_back(cache.sub_hi(i));
      if (cache.sub_lo(i) > 0) edges.push_back(cache.sub_lo(i) - 1);
    }
    check_against_map(client, co, m, edges, 6);
  });
  const XClientStats& s = client.stats();
  EXPECT_EQ(s.invalid_entries + s.mismatches + s.torn + s.refreshes, 0u);
  EXPECT_EQ(s.fallbacks, s.wide);  // no stale entry on static data
  EXPECT_EQ(s.rpcs, s.fallbacks);  // and no refresh
  if (GetParam() < 2 || GetParam() == 5) {
    EXPECT_EQ(s.fallbacks, 0u);
  } else if (GetParam() == 2) {
    // Sub-models spanning the end of one cluster and the start of the next
    // predict wide ranges (measured 8% of the ops): RPC, still correct.
    EXPECT_LT(s.fallbacks * 5, s.gets + s.scans);
  } else if (GetParam() == 4) {
    // The spline top model spreads the clusters over all sub-models.
    EXPECT_LT(s.fallbacks * 20, s.gets + s.scans);
  }
  EXPECT_EQ(s.torn, 0u);
  EXPECT_GT(s.gets_found, 0u);
  const char* names[] = {"uniform",
                         "sequential",
                         "clustered",
                         "extreme clusters",
                         "extreme clusters, spline top",
                         "uniform, best leaf first"};
  std::printf(
      "%s: %u sub-models, %llu GETs %llu SCANs (%llu by RPC), %.2f round trips and %.2f READs "
      "per op\n",
      names[GetParam()], cache.sub_models(), (unsigned long long)s.gets,
      (unsigned long long)s.scans, (unsigned long long)s.fallbacks,
      double(s.round_trips) / double(s.gets + s.scans), double(s.reads) / double(s.gets + s.scans));
}

INSTANTIATE_TEST_SUITE_P(Dists, XCacheClientDist, ::testing::Values(0, 1, 2, 3, 4, 5));

// Splits after training: keys of a split leaf's lower half are found in
// the fetched image, the upper half by the speculative sibling READ; the
// stale entry is invalidated, so the next lookup there falls back by RPC
// and refreshes the sub-model, after which it is one-sided again. A leaf
// split twice (sibling split too) defeats speculation: fallback.
// refresh_keys_per_miss: a fallback retrains its sub-model only once the
// fallbacks it met, times R, reach the keys it holds (R = 1 here: about a
// hundred). Until then the answers come by RPC, correct; after the refresh
// the key is one-sided again.
TEST(XCacheClient, RefreshesAreAmortizedOverFallbacks) {
  const auto keys = uniform_keys(5000, 7);
  Env env(2048);
  env.tree->load(keys, 16, 16, 8);
  XCacheOptions o;
  o.refresh_keys_per_miss = 1;
  XCache cache(o);
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co).is_ok()); });
  const size_t a = interior_leaf(cache, *env.tree, 40);
  const std::vector<uint64_t> a_keys = env.tree->keys_at(a);
  env.tree->split(a);
  env.tree->split(a + 1);  // the upper half moves twice: no speculation
  env.run([&](r2::Co& co, int) {
    uint64_t v = 0;
    client.reset_stats();
    uint64_t fallbacks_before_refresh = 0;
    for (int i = 0; i < 2000 && client.stats().refreshes == 0; ++i) {
      auto r = client.get(co, a_keys[15], &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(a_keys[15]));
      fallbacks_before_refresh = client.stats().fallbacks;
    }
    EXPECT_EQ(client.stats().refreshes, 1u);
    // Sub-models hold about 100 keys (train_keys_per_model): dozens of
    // fallbacks were answered before one refresh.
    EXPECT_GE(fallbacks_before_refresh, 20u);
    const uint64_t fb = client.stats().fallbacks;
    auto r = client.get(co, a_keys[15], &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(a_keys[15]));
    EXPECT_EQ(client.stats().fallbacks, fb);  // one-sided again
  });
}

TEST(XCacheClient, StaleEntriesAfterSplitsSpeculateThenFallBackAndRefresh) {
  const auto keys = uniform_keys(5000, 7);
  Env env(2048);
  env.tree->load(keys, 16, 16, 8);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCache cache(XCacheOptions{});
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co).is_ok()); });

  // Split leaf A once, leaf B twice (B, then its new sibling).
  const size_t a = interior_leaf(cache, *env.tree, 40), b = 200;
  const std::vector<uint64_t> a_keys = env.tree->keys_at(a);
  env.tree->split(a);
  const size_t bb = b + 1;  // chain position shifted by the split of a
  const std::vector<uint64_t> b_keys = env.tree->keys_at(bb);
  env.tree->split(bb);
  env.tree->split(bb + 1);

  env.run([&](r2::Co& co, int) {
    uint64_t v = 0;
    client.reset_stats();
    // Upper half of A: speculative sibling READ finds it.
    auto r = client.get(co, a_keys[12], &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(a_keys[12]));
    EXPECT_EQ(client.stats().spec_hits, 1u);
    EXPECT_EQ(client.stats().fallbacks, 0u);
    EXPECT_EQ(client.stats().mismatches, 1u);
    // The entry is now invalid: RPC fallback, then the sub-model refreshes.
    r = client.get(co, a_keys[2], &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(a_keys[2]));
    EXPECT_EQ(client.stats().invalid_entries, 1u);
    EXPECT_EQ(client.stats().fallbacks, 1u);
    EXPECT_EQ(client.stats().refreshes, 1u);
    EXPECT_EQ(client.stats().rpcs, 1u);  // the GET reply carried the run (kWithRun)
    // Refreshed: one-sided again, for both halves.
    const uint64_t fb = client.stats().fallbacks;
    for (uint64_t k : a_keys) {
      r = client.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      EXPECT_EQ(v, value_of(k));
    }
    EXPECT_EQ(client.stats().fallbacks, fb);

    // B split twice: its last quarter is two leaves away: fallback.
    const uint64_t spec_before = client.stats().spec_reads;
    r = client.get(co, b_keys[15], &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(b_keys[15]));
    EXPECT_EQ(client.stats().spec_reads, spec_before + 1);
    EXPECT_EQ(client.stats().fallbacks, fb + 1);
    // Absent key in a split leaf's range is answered correctly as well.
    r = client.get(co, b_keys[3] + 1, &v);
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, m.count(b_keys[3] + 1) == 1);
    // Everything matches the map afterwards.
    check_against_map(client, co, m, probes_for(keys, 2000, 9), 10);
  });
}

TEST(XCacheClient, ScanOverASplitLeafFallsBackThenRefreshes) {
  const auto keys = sequential_keys(3000);
  Env env(1024);
  env.tree->load(keys, 16, 16, 11);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCache cache(XCacheOptions{});
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co).is_ok()); });
  const size_t j = interior_leaf(cache, *env.tree, 51);
  const uint64_t start = env.tree->keys_at(j - 1)[3];
  env.tree->split(j);
  // A new key lands in the split's sibling.
  const uint64_t added = env.tree->keys_at(j + 1).back() + 1;
  env.tree->insert(added);
  m[added] = value_of(added);
  env.run([&](r2::Co& co, int) {
    std::vector<uint64_t> k;
    std::vector<uint8_t> v;
    ASSERT_TRUE(client.scan(co, start, 60, k, v).is_ok());
    EXPECT_EQ(client.stats().fallbacks, 1u);
    EXPECT_EQ(client.stats().refreshes, 1u);
    auto it = m.lower_bound(start);
    ASSERT_EQ(k.size(), 60u);
    for (size_t i = 0; i < 60; ++i, ++it) EXPECT_EQ(k[i], it->first);
    const uint64_t fb = client.stats().fallbacks;
    ASSERT_TRUE(client.scan(co, start, 60, k, v).is_ok());
    EXPECT_EQ(client.stats().fallbacks, fb);  // one-sided after the refresh
    check_against_map(client, co, m, probes_for(keys, 1000, 12), 13);
  });
}

// A leaf straddling sub-models i and i+1 splits and its upper half lands
// above sub-model i's interval; only i is refreshed (as apply_splits or a
// fallback refresh may leave it). i's TT then ends with the leaf's new
// incarnation and i+1's starts with the old one: a scan crossing the
// boundary must not take the second entry for the same leaf and skip it
// (the moved upper half would be lost); its mismatch sends the scan to RPC.
TEST(XCacheClient, ScanAcrossAPartlyRefreshedBoundaryLosesNoKey) {
  const auto keys = uniform_keys(6000, 71);
  Env env(2048);
  env.tree->load(keys, 14, 16, 72);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCache cache(XCacheOptions{});
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co, 60).is_ok()); });
  uint32_t sub = UINT32_MAX;
  size_t j = 0;
  for (uint32_t i = 0; i + 1 < cache.sub_models() && sub == UINT32_MAX; ++i) {
    if (cache.sub_empty(i) || cache.sub_empty(i + 1) || cache.sub_leaves(i) < 2) continue;
    const size_t a = env.tree->covering(cache.sub_hi(i));
    const auto& ks = env.tree->keys_at(a);
    if (env.tree->covering(cache.sub_lo(i + 1)) == a && ks.size() >= 4 &&
        ks[ks.size() / 2] > cache.sub_hi(i) && ks.front() <= cache.sub_hi(i)) {
      sub = i;
      j = a;
    }
  }
  ASSERT_NE(sub, UINT32_MAX) << "no sub-model boundary inside a leaf's lower half";
  const uint64_t start = env.tree->keys_at(j).front();
  const std::vector<uint64_t> moved(
      env.tree->keys_at(j).begin() + static_cast<long>(env.tree->keys_at(j).size() / 2),
      env.tree->keys_at(j).end());
  env.tree->split(j);
  env.run([&](r2::Co& co, int) {
    ASSERT_TRUE(client.refresh_sub(co, sub).is_ok());
    std::vector<uint64_t> k;
    std::vector<uint8_t> v;
    ASSERT_TRUE(client.scan(co, start, 40, k, v).is_ok());
    auto it = m.lower_bound(start);
    ASSERT_EQ(k.size(), 40u);
    for (size_t i = 0; i < 40; ++i, ++it) ASSERT_EQ(k[i], it->first) << "pair " << i;
    for (uint64_t x : moved) EXPECT_TRUE(std::binary_search(k.begin(), k.end(), x)) << x;
    check_against_map(client, co, m, probes_for(keys, 1000, 73), 74);
  });
}

// Many inserts split many leaves; expansion retrains with more sub-models.
TEST(XCacheClient, ExpansionAfterManyInserts) {
  auto keys = uniform_keys(2000, 14);
  Env env(4096);
  env.tree->load(keys, 16, 16, 15);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCacheOptions o;
  o.expand_keys_per_model = 200;
  XCache cache(o);
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co, 10).is_ok()); });
  EXPECT_EQ(cache.sub_models(), 10u);
  std::mt19937_64 rng(16);
  for (int i = 0; i < 3000; ++i) {
    const uint64_t k = rng() >> 1;
    if (m.count(k)) continue;
    env.tree->insert(k);
    m[k] = value_of(k);
  }
  std::vector<uint64_t> all;
  for (auto& [k, v] : m) all.push_back(k);
  env.run([&](r2::Co& co, int) {
    // Stale everywhere: still correct (speculation and fallbacks).
    check_against_map(client, co, m, probes_for(all, 1000, 17), 18);
    // Refreshed sub-models hold more keys than the threshold allows.
    for (uint32_t i = 0; i < cache.sub_models(); ++i)
      ASSERT_TRUE(client.refresh_sub(co, i).is_ok());
    EXPECT_TRUE(cache.needs_expansion());
    bool expanded = false;
    ASSERT_TRUE(client.expand_if_needed(co, &expanded).is_ok());
    EXPECT_TRUE(expanded);
    EXPECT_GE(cache.sub_models(), 20u);
    EXPECT_FALSE(cache.needs_expansion());
    client.reset_stats();
    check_against_map(client, co, m, probes_for(all, 2000, 19), 20);
    EXPECT_EQ(client.stats().fallbacks, 0u);
  });
}

// Coroutines of one worker share one cache: while three of them GET and
// SCAN through stale entries (speculating, falling back, refreshing
// sub-models), the fourth pulls the split log and expands the model.
TEST(XCacheClient, CoroutinesShareOneCacheWhileItIsRetrained) {
  auto keys = uniform_keys(3000, 41);
  Env env(4096);
  env.tree->load(keys, 16, 16, 42);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCache cache(XCacheOptions{});
  constexpr int kCos = 4;
  std::vector<std::unique_ptr<XStoreClient>> clients;
  for (int i = 0; i < kCos; ++i) {
    clients.push_back(std::make_unique<XStoreClient>(cache, env.remote(), env.scratch(i)));
  }
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(clients[0]->warm(co, 10).is_ok()); });
  std::mt19937_64 rng(43);
  for (int i = 0; i < 4000; ++i) {
    const uint64_t k = rng() >> 1;
    if (m.count(k)) continue;
    env.tree->insert(k);
    m[k] = value_of(k);
  }
  std::vector<uint64_t> all;
  for (auto& [k, v] : m) all.push_back(k);
  env.run(
      [&](r2::Co& co, int i) {
        if (i == kCos - 1) {
          ASSERT_TRUE(clients[i]->apply_splits(co).is_ok());
          bool expanded = false;
          ASSERT_TRUE(clients[i]->expand_if_needed(co, &expanded).is_ok());
          EXPECT_TRUE(expanded);
        }
        check_against_map(*clients[i], co, m, probes_for(all, 600, 50 + i), 60 + i);
      },
      kCos);
  XClientStats s;
  for (auto& c : clients) s.add(c->stats());
  std::printf("shared cache: %llu fallbacks, %llu spec hits, %llu refreshes, %u sub-models\n",
              (unsigned long long)s.fallbacks, (unsigned long long)s.spec_hits,
              (unsigned long long)s.refreshes, cache.sub_models());
  EXPECT_GT(cache.sub_models(), 10u);
}

// Models-only: the owner publishes the TT image in its registered memory;
// the client keeps only the models and READs the TT entries it needs.
TEST(XCacheClient, ModelsOnlyReadsTheTranslationTableRemotely) {
  const auto keys = uniform_keys(10000, 21);
  Env env(2048, 64 * 1024);
  env.tree->load(keys, 8, 16, 22);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t k : keys) m[k] = value_of(k);
  XCache full(XCacheOptions{});
  XStoreClient trainer(full, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(trainer.warm(co).is_ok()); });
  ASSERT_TRUE(full.write_tt_image(env.cluster->base(kOwner, kTTRegion), 64 * 1024).is_ok());
  XCache mo = full.models_only_copy({kOwner, kTTRegion, 0});
  std::printf("models-only: %zu bytes vs full %zu bytes\n", mo.memory_bytes(), full.memory_bytes());
  EXPECT_LT(mo.memory_bytes() * 2, full.memory_bytes());  // measured 9.0 KB vs 22.9 KB
  XStoreClient client(mo, env.remote(), env.scratch(1));
  ASSERT_TRUE(client.check().is_ok());
  env.run([&](r2::Co& co, int) {
    uint64_t v;
    for (int i = 0; i < 2000; ++i) {
      const uint64_t k = keys[(i * 7919) % keys.size()];
      auto r = client.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(k));
    }
    // TT, then the leaves (read whole: 8-byte values come with the keys).
    EXPECT_EQ(client.stats().round_trips, 2u * 2000);
    EXPECT_EQ(client.stats().values_in_leaf, 2000u);
    EXPECT_EQ(client.stats().fallbacks, 0u);
    check_against_map(client, co, m, probes_for(keys, 1000, 23), 24);
    EXPECT_EQ(client.stats().fallbacks, 0u);
  });
  // A split: the published image is stale, the client falls back (no retrain).
  const std::vector<uint64_t> lk = env.tree->keys_at(100);
  env.tree->split(100);
  env.run([&](r2::Co& co, int) {
    uint64_t v;
    for (uint64_t k : lk) {
      auto r = client.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(k));
    }
    EXPECT_EQ(client.stats().refreshes, 0u);
  });
}

// The client's half of retraining after splits: SPLITS_SINCE names the
// split key ranges, the sub-models meeting them are refreshed, and lookups
// there are one-sided again without speculation or fallback.
TEST(XCacheClient, ApplySplitsRefreshesTheAffectedSubModels) {
  const auto keys = uniform_keys(8000, 31);
  Env env(2048);
  env.tree->load(keys, 16, 16, 32);
  XCache cache(XCacheOptions{});
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co).is_ok()); });
  std::vector<uint64_t> moved;
  for (size_t j : {30, 200, 201, 400}) {
    const size_t at = j + moved.size() / 16;  // earlier splits shift the chain
    for (uint64_t k : env.tree->keys_at(at)) moved.push_back(k);
    env.tree->split(at);
  }
  env.run([&](r2::Co& co, int) {
    size_t refreshed = 0;
    ASSERT_TRUE(client.apply_splits(co, &refreshed).is_ok());
    EXPECT_GE(refreshed, 3u);
    ASSERT_TRUE(client.apply_splits(co, &refreshed).is_ok());
    EXPECT_EQ(refreshed, 0u);  // nothing new
    client.reset_stats();
    uint64_t v;
    for (uint64_t k : moved) {
      auto r = client.get(co, k, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(k));
    }
    EXPECT_EQ(client.stats().mismatches + client.stats().fallbacks, 0u);
  });
}

// UPDATE goes to the owner with the predicted leaf as a position hint.
TEST(XCacheClient, UpdateSendsAPositionHint) {
  const auto keys = uniform_keys(5000, 33);
  Env env(1024);
  env.tree->load(keys, 12, 16, 34);
  XCache cache(XCacheOptions{});
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) {
    ASSERT_TRUE(client.warm(co).is_ok());
    for (size_t i = 0; i < 1000; ++i) {
      const uint64_t k = keys[i * 5], nv = i + 1;
      auto r = client.update(co, k, &nv);
      ASSERT_TRUE(r.is_ok() && *r);
      uint64_t got = 0;
      auto g = client.get(co, k, &got);
      ASSERT_TRUE(g.is_ok() && *g);
      ASSERT_EQ(got, nv);
    }
    uint64_t nv = 1;
    auto r = client.update(co, keys[0] + 1, &nv);  // absent
    ASSERT_TRUE(r.is_ok());
    EXPECT_FALSE(*r);
    std::printf("position hints used: %llu of %llu updates\n",
                (unsigned long long)client.stats().hints_used,
                (unsigned long long)client.stats().updates);
    EXPECT_GT(client.stats().hints_used * 2, client.stats().updates);
  });
}

// A leaf whose seal never verifies (a writer "in progress") is re-read a
// bounded number of times, then the GET goes to the owner (keys first,
// then the value: the leaf is not read whole).
TEST(XCacheClient, TornLeafIsRetriedThenFallsBack) {
  const auto keys = sequential_keys(1000);
  Env env(256);
  env.tree->load(keys, 16, 16, 25);
  XCache cache(XCacheOptions{});
  XClientOptions o;
  o.torn_retries = 3;
  o.whole_leaf_max_bytes = 0;
  XStoreClient client(cache, env.remote(), env.scratch(0), o);
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co).is_ok()); });
  const uint64_t k = env.tree->keys_at(10)[5];
  env.tree->corrupt_seal(10, true);
  env.run([&](r2::Co& co, int) {
    uint64_t v;
    auto r = client.get(co, k, &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(k));
    EXPECT_EQ(client.stats().torn, 4u);
    EXPECT_EQ(client.stats().fallbacks, 1u);
  });
  env.tree->corrupt_seal(10, false);
}

// Leaves read whole (8-byte values, the default whole_leaf_max_bytes): one
// READ per GET; the value is taken from the copy when its slot verifies,
// even if the keys seal does not (found-first); a miss is trusted only from
// a verified keys image; a slot that fails in the copy is READ again and,
// when it keeps failing, the GET goes to the owner.
TEST(XCacheClient, WholeLeafReadsTakeTheValueFromTheCopy) {
  const auto keys = sequential_keys(1000);
  Env env(256);
  env.tree->load(keys, 16, 16, 27);
  XCache cache(XCacheOptions{});
  XClientOptions o;
  o.torn_retries = 3;
  XStoreClient client(cache, env.remote(), env.scratch(0), o);
  env.run([&](r2::Co& co, int) { ASSERT_TRUE(client.warm(co).is_ok()); });
  const uint64_t k = env.tree->keys_at(10)[5];
  env.run([&](r2::Co& co, int) {
    uint64_t v;
    client.reset_stats();
    for (int i = 0; i < 500; ++i) {
      const uint64_t key = keys[(i * 7919) % keys.size()];
      auto r = client.get(co, key, &v);
      ASSERT_TRUE(r.is_ok() && *r);
      ASSERT_EQ(v, value_of(key));
      auto a = client.get(co, key + 1, &v);  // absent: between two keys
      ASSERT_TRUE(a.is_ok());
      ASSERT_FALSE(*a);
    }
    EXPECT_EQ(client.stats().values_in_leaf, 500u);
    EXPECT_EQ(client.stats().round_trips, 1000u);
    EXPECT_EQ(client.stats().reads, 1000u);  // leaves in key order: one READ
    EXPECT_EQ(client.stats().fallbacks, 0u);
    EXPECT_EQ(client.stats().torn, 0u);
  });
  // A broken keys seal: the present key still verifies in its slot; an
  // absent key of that leaf cannot be trusted: retried, then the owner.
  env.tree->corrupt_seal(10, true);
  env.run([&](r2::Co& co, int) {
    uint64_t v;
    client.reset_stats();
    auto r = client.get(co, k, &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(k));
    EXPECT_EQ(client.stats().torn, 0u);
    EXPECT_EQ(client.stats().fallbacks, 0u);
    auto a = client.get(co, k + 1, &v);
    ASSERT_TRUE(a.is_ok());
    EXPECT_FALSE(*a);
    EXPECT_EQ(client.stats().torn, 4u);
    EXPECT_EQ(client.stats().fallbacks, 1u);
  });
  env.tree->corrupt_seal(10, false);
  // A broken value slot (a writer in progress, or a slot abandoned by a
  // delete or split): never answered from; READ again, then the owner.
  env.tree->corrupt_value(10, k, true);
  env.run([&](r2::Co& co, int) {
    uint64_t v = 0;
    client.reset_stats();
    auto r = client.get(co, k, &v);
    ASSERT_TRUE(r.is_ok() && *r);
    EXPECT_EQ(v, value_of(k));
    EXPECT_EQ(client.stats().values_in_leaf, 0u);
    EXPECT_EQ(client.stats().torn, 8u);  // per attempt: the copy, then the slot READ
    EXPECT_EQ(client.stats().fallbacks, 1u);
  });
  env.tree->corrupt_value(10, k, false);
}

TEST(XCacheClient, MisuseIsReportedAsErrors) {
  Env env(64);
  env.tree->load(sequential_keys(100), 16, 16, 26);
  XCache cache(XCacheOptions{});
  XStoreClient small(cache, env.remote(), env.scratch(0).subspan(0, 100));
  Status st = small.check();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("scratch_bytes"), std::string::npos) << st.message();
  XCacheOptions o;
  o.fanout = 8;
  XCache wrong(o);
  EXPECT_FALSE(XStoreClient(wrong, env.remote(), env.scratch(0)).check().is_ok());
  XStoreClient client(cache, env.remote(), env.scratch(0));
  env.run([&](r2::Co& co, int) {
    uint64_t v;
    auto r = client.get(co, 5000, &v);  // not warmed
    EXPECT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("warm()"), std::string::npos);
  });
}

// The target: YCSB C, uniform, 1 M keys: at most 2.2 READs per GET
// on average, a doorbell batch counting as one READ as in Fig 3-8 (line 13:
// one round trip for the predicted leaves). Also reported: READ work
// requests per GET, with the leaves laid out in key order (sorted load)
// and with shuffled ALNs (a tree grown by random inserts).
TEST(XCacheClient, ReadsPerGetOnAMillionUniformKeys) {
  const size_t n = 1000000;
  const auto keys = uniform_keys(n, 27);
  for (int mode = 0; mode < 3; ++mode) {
    const bool shuffled = mode > 0;
    XClientOptions copt;
    copt.best_leaf_first = mode == 2;
    Env env(static_cast<uint32_t>(n / 10 + 1000));
    env.tree->load(keys, 10, 16, 28, shuffled);  // ~80% full leaves
    XCache cache(XCacheOptions{});
    constexpr int kCos = 4;
    constexpr int kGets = 50000;  // per coroutine
    std::vector<std::unique_ptr<XStoreClient>> clients;
    for (int i = 0; i < kCos; ++i) {
      clients.push_back(std::make_unique<XStoreClient>(cache, env.remote(), env.scratch(i), copt));
    }
    const auto t0 = std::chrono::steady_clock::now();
    env.run([&](r2::Co& co, int) { ASSERT_TRUE(clients[0]->warm(co).is_ok()); });
    const auto t1 = std::chrono::steady_clock::now();
    env.run(
        [&](r2::Co& co, int i) {
          std::mt19937_64 rng(100 + i);
          uint64_t v;
          for (int q = 0; q < kGets; ++q) {
            const uint64_t k = keys[rng() % n];
            auto r = clients[i]->get(co, k, &v);
            ASSERT_TRUE(r.is_ok() && *r);
            ASSERT_EQ(v, value_of(k));
          }
        },
        kCos);
    const auto t2 = std::chrono::steady_clock::now();
    XClientStats s;
    for (int i = 1; i < kCos; ++i) s.add(clients[i]->stats());
    XClientStats s0 = clients[0]->stats();
    s0.rpcs = 0;  // warm-up FETCH_RUNs
    s.add(s0);
    const double rt = double(s.round_trips) / double(s.gets);
    const double wr = double(s.reads) / double(s.gets);
    std::printf(
        "1M uniform keys (%s ALNs%s): %u sub-models, cache %.1f MB, train %.0f ms; %llu GETs: "
        "%.3f READ round trips/GET, %.3f READ requests/GET, fallbacks %llu, %.2f us/GET\n",
        shuffled ? "shuffled" : "key-order", copt.best_leaf_first ? ", best leaf first" : "",
        cache.sub_models(), cache.memory_bytes() / 1e6,
        std::chrono::duration<double, std::milli>(t1 - t0).count(), (unsigned long long)s.gets, rt,
        wr, (unsigned long long)s.fallbacks,
        std::chrono::duration<double, std::micro>(t2 - t1).count() / double(s.gets));
    EXPECT_EQ(s.gets, uint64_t{kCos} * kGets);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_LE(rt, 2.2);
    if (mode != 1) {
      EXPECT_LE(wr, 2.2);  // measured 2.000 (key order), 2.186 (best leaf first)
    }
  }
}

}  // namespace
}  // namespace drtmx::store::xstore
