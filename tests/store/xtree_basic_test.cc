// XTree on one thread against std::map: get/insert/update/delete, scans
// from every kind of start point, the leaf format in registered memory
// (seals, fences, NXT chain), training export, split log, leaf exhaustion
// and option errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "store/xstore/leaf.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {
namespace {

// Region memory for a tree (64-byte aligned, zeroed).
struct Arena {
  explicit Arena(size_t n) : bytes(n) {
    mem = static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) & ~size_t{63}));
    std::memset(mem, 0, n);
  }
  ~Arena() { std::free(mem); }
  uint8_t* mem;
  size_t bytes;
};

XTreeOptions opts(uint32_t fanout, uint32_t vb, uint32_t cap, uint64_t off = 128) {
  XTreeOptions o;
  o.area.region = 1;
  o.area.leaf_offset = off;
  o.area.fanout = fanout;
  o.area.value_bytes = vb;
  o.area.leaf_capacity = cap;
  return o;
}

// A value that names its key and a version: byte i = (key * 31 + ver + i).
std::vector<uint8_t> value_of(uint64_t key, uint32_t ver, uint32_t vb) {
  std::vector<uint8_t> v(vb);
  for (uint32_t i = 0; i < vb; ++i) v[i] = static_cast<uint8_t>(key * 31 + ver + i);
  return v;
}

// Walks the leaf chain in the region as a client would see it and checks
// the format: every leaf seal verifies, used value slots verify and name
// their key, keys respect the fences, and the chain holds exactly `ref`.
void check_leaves(const Arena& a, const XTree& t, const std::map<uint64_t, uint32_t>& ref) {
  const LeafArea& ar = t.area();
  std::vector<uint64_t> all;
  auto runs = t.export_all();
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.front().aln, 0u);
  EXPECT_EQ(runs.front().low, 0u);
  EXPECT_TRUE(runs.back().last_leaf);
  for (size_t r = 0; r < runs.size(); ++r) {
    const LeafRun& run = runs[r];
    const uint8_t* l = a.mem + ar.leaf_addr(run.aln);
    uint64_t meta, seal;
    std::memcpy(&meta, l, 8);
    std::memcpy(&seal, l + 8, 8);
    ASSERT_EQ(keys_seal(meta, reinterpret_cast<const uint64_t*>(l + 16), ar.fanout), seal)
        << "leaf " << run.aln;
    LeafMeta m = unpack_meta(meta);
    EXPECT_EQ(m.count, run.count);
    EXPECT_EQ(m.incarnation, run.incarnation);
    if (r + 1 < runs.size()) {
      EXPECT_EQ(m.next, runs[r + 1].aln + 1);
      EXPECT_EQ(run.high, runs[r + 1].low);
      EXPECT_LT(run.low, run.high);
    } else {
      EXPECT_EQ(m.next, 0u);
    }
    for (uint32_t i = 0; i < m.count; ++i) {
      uint64_t k;
      std::memcpy(&k, l + 16 + 8 * i, 8);
      EXPECT_GE(k, run.low);
      if (!run.last_leaf) {
        EXPECT_LT(k, run.high);
      }
      const uint8_t* s = a.mem + ar.value_addr(run.aln, i);
      uint64_t sk, ss;
      std::memcpy(&sk, s, 8);
      std::memcpy(&ss, s + 8, 8);
      EXPECT_EQ(sk, k);
      EXPECT_EQ(value_seal(sk, s + 16, ar.value_bytes), ss);
      auto it = ref.find(k);
      ASSERT_NE(it, ref.end()) << "leaf holds key " << k << " the reference does not";
      EXPECT_EQ(std::memcmp(s + 16, value_of(k, it->second, ar.value_bytes).data(), ar.value_bytes),
                0);
    }
    for (uint32_t i = m.count; i < ar.fanout; ++i) {
      // Unused value slots never verify (if they were ever used).
      const uint8_t* s = a.mem + ar.value_addr(run.aln, i);
      uint64_t sk, ss;
      std::memcpy(&sk, s, 8);
      std::memcpy(&ss, s + 8, 8);
      if (ss != 0) {
        EXPECT_NE(value_seal(sk, s + 16, ar.value_bytes), ss);
      }
    }
    EXPECT_TRUE(std::is_sorted(run.keys.begin(), run.keys.end()));
    all.insert(all.end(), run.keys.begin(), run.keys.end());
  }
  ASSERT_EQ(all.size(), ref.size());
  size_t i = 0;
  for (auto& [k, v] : ref) EXPECT_EQ(all[i++], k);
}

// Inserts key k (value_of(k, 1)) into t and ref: refused exactly when ref
// holds k already.
void insert_as_ref_says(XTree& t, std::map<uint64_t, uint32_t>& ref, uint64_t k) {
  const XStatus want = ref.count(k) ? XStatus::kAlreadyExists : XStatus::kOk;
  ASSERT_EQ(t.insert(k, value_of(k, 1, 8).data()), want) << k;
  ref.emplace(k, 1);
}

// Every key of `ref` reads back its value (8-byte values).
void expect_gets(const XTree& t, const std::map<uint64_t, uint32_t>& ref) {
  for (const auto& [k, ver] : ref) {
    std::vector<uint8_t> out(8);
    ASSERT_EQ(t.get(k, out.data()), XStatus::kOk) << k;
    EXPECT_EQ(out, value_of(k, ver, 8)) << k;
  }
}

class XTreeBasic : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

TEST_P(XTreeBasic, MatchesStdMap) {
  const auto [fanout, vb] = GetParam();
  Arena a(8 << 20);
  const uint32_t cap = static_cast<uint32_t>((a.bytes - 128) / leaf_bytes(fanout, vb));
  auto tr = XTree::create(a.mem, a.bytes, opts(fanout, vb, cap));
  ASSERT_TRUE(tr.is_ok()) << tr.status().to_string();
  XTree& t = **tr;
  std::map<uint64_t, uint32_t> ref;
  std::mt19937_64 rng(fanout * 1000 + vb);
  const uint64_t space = 4000;
  std::vector<uint8_t> out(vb);
  for (int op = 0; op < 30000; ++op) {
    const uint64_t k = rng() % space * 7 + 3;  // gaps, so absent keys lie between
    const uint32_t ver = static_cast<uint32_t>(rng());
    auto v = value_of(k, ver, vb);
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {
        XStatus s = t.insert(k, v.data());
        EXPECT_EQ(s, ref.count(k) ? XStatus::kAlreadyExists : XStatus::kOk);
        if (s == XStatus::kOk) ref[k] = ver;
        break;
      }
      case 3:
        EXPECT_EQ(t.insert(k, v.data(), /*upsert=*/true), XStatus::kOk);
        ref[k] = ver;
        break;
      case 4: {
        XStatus s = t.update(k, v.data());
        EXPECT_EQ(s, ref.count(k) ? XStatus::kOk : XStatus::kNotFound);
        if (s == XStatus::kOk) ref[k] = ver;
        break;
      }
      case 5: {
        XStatus s = t.remove(k);
        EXPECT_EQ(s, ref.count(k) ? XStatus::kOk : XStatus::kNotFound);
        ref.erase(k);
        break;
      }
      default: {
        const uint64_t q = rng() % (space * 7 + 10);
        XStatus s = t.get(q, out.data());
        auto it = ref.find(q);
        ASSERT_EQ(s, it == ref.end() ? XStatus::kNotFound : XStatus::kOk) << "key " << q;
        if (it != ref.end()) {
          EXPECT_EQ(out, value_of(q, it->second, vb));
        }
      }
    }
  }
  EXPECT_GT(t.stats().splits, fanout > 100 ? 10u : 50u);
  check_leaves(a, t, ref);

  // Scans from present keys, absent keys, before the first and after the
  // last key, of lengths that cross many leaves.
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  for (int s = 0; s < 400; ++s) {
    uint64_t start =
        s < 3 ? std::vector<uint64_t>{0, space * 7 + 100, UINT64_MAX}[s] : rng() % (space * 7 + 10);
    const size_t n = s % 5 == 0 ? 1 + rng() % 500 : 1 + rng() % 40;
    const bool end = t.scan(start, n, keys, vals);
    auto it = ref.lower_bound(start);
    size_t i = 0;
    for (; it != ref.end() && i < n; ++it, ++i) {
      ASSERT_LT(i, keys.size()) << "scan(" << start << ", " << n << ") too short";
      ASSERT_EQ(keys[i], it->first);
      ASSERT_EQ(std::memcmp(vals.data() + i * vb, value_of(it->first, it->second, vb).data(), vb),
                0);
    }
    EXPECT_EQ(keys.size(), i);
    if (keys.size() < n) {
      EXPECT_TRUE(end) << "short scan must have walked off the last leaf";
    }
    // The same bounded by `until`: exactly the keys in [start, until] (at
    // most n), and the end reported whenever fewer than n came back.
    const uint64_t until = start + rng() % 2000;
    const bool bounded_end = t.scan(start, n, keys, vals, until);
    std::vector<uint64_t> want;
    for (auto w = ref.lower_bound(start); w != ref.end() && w->first <= until && want.size() < n;
         ++w) {
      want.push_back(w->first);
    }
    ASSERT_EQ(keys, want) << "scan(" << start << ", " << n << ", until " << until << ")";
    if (keys.size() < n) {
      EXPECT_TRUE(bounded_end);
    }
  }

  // Export of a sub-range: the leaves covering [lo, hi], cut and resumed.
  const uint64_t lo = 7 * 1000, hi = 7 * 2500;
  uint64_t next = 0;
  std::vector<LeafRun> part = t.export_range(lo, hi, 5, &next);
  ASSERT_EQ(part.size(), 5u);
  ASSERT_NE(next, 0u);
  while (next != 0) {
    auto more = t.export_range(next, hi, 5, &next);
    part.insert(part.end(), more.begin(), more.end());
  }
  EXPECT_LE(part.front().low, lo);
  EXPECT_TRUE(part.back().last_leaf || part.back().high > hi);
  for (size_t i = 1; i < part.size(); ++i) EXPECT_EQ(part[i - 1].high, part[i].low);
}

INSTANTIATE_TEST_SUITE_P(Shapes, XTreeBasic,
                         ::testing::Values(std::pair<uint32_t, uint32_t>{16, 8},
                                           std::pair<uint32_t, uint32_t>{3, 20},
                                           std::pair<uint32_t, uint32_t>{64, 1},
                                           std::pair<uint32_t, uint32_t>{255, 8}));

TEST(XTree, SplitsBumpIncarnationAndAreLogged) {
  Arena a(1 << 20);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 100));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  auto v = value_of(1, 1, 8);
  for (uint64_t k = 10; k <= 40; k += 10) ASSERT_EQ(t.insert(k, v.data()), XStatus::kOk);
  EXPECT_EQ(t.split_seq(), 0u);
  uint32_t aln, inc;
  t.locate(40, &aln, &inc);
  EXPECT_EQ(aln, 0u);
  EXPECT_EQ(inc, 0u);
  ASSERT_EQ(t.insert(25, v.data()), XStatus::kOk);  // 5 pairs: 10 20 | 25 30 40
  EXPECT_EQ(t.split_seq(), 1u);
  t.locate(10, &aln, &inc);
  EXPECT_EQ(aln, 0u);
  EXPECT_EQ(inc, 1u);
  t.locate(25, &aln, &inc);
  EXPECT_EQ(aln, 1u);
  EXPECT_EQ(inc, 0u);
  uint64_t next;
  bool lost;
  auto ev = t.splits_since(0, 10, &next, &lost);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(lost);
  EXPECT_EQ(next, 1u);
  EXPECT_EQ(ev[0].lo, 0u);
  EXPECT_EQ(ev[0].hi, UINT64_MAX);
  EXPECT_EQ(ev[0].left, 0u);
  EXPECT_EQ(ev[0].right, 1u);
  auto runs = t.export_all();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].keys, (std::vector<uint64_t>{10, 20}));
  EXPECT_EQ(runs[1].keys, (std::vector<uint64_t>{25, 30, 40}));
  EXPECT_EQ(runs[0].high, 25u);
  EXPECT_EQ(runs[1].low, 25u);
  EXPECT_TRUE(t.splits_since(1, 10, &next, &lost).empty());
  EXPECT_EQ(next, 1u);
}

// A key above every key of a full leaf splits off a sibling holding that
// key alone: ascending inserts leave full leaves behind (a half split would
// leave each half empty for good), the old leaf's incarnation changes, and
// a later insert among that leaf's keys still splits it in halves.
TEST(XTree, AppendsFillLeaves) {
  Arena a(1 << 20);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 100));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  std::map<uint64_t, uint32_t> ref;
  for (uint64_t k = 10; k <= 120; k += 10) {
    ASSERT_EQ(t.insert(k, value_of(k, 1, 8).data()), XStatus::kOk);
    ref[k] = 1;
  }
  auto runs = t.export_all();
  ASSERT_EQ(runs.size(), 3u);  // 12 ascending keys in three full leaves
  EXPECT_EQ(runs[0].keys, (std::vector<uint64_t>{10, 20, 30, 40}));
  EXPECT_EQ(runs[1].keys, (std::vector<uint64_t>{50, 60, 70, 80}));
  EXPECT_EQ(runs[2].keys, (std::vector<uint64_t>{90, 100, 110, 120}));
  EXPECT_EQ(runs[0].high, 50u);
  EXPECT_EQ(runs[1].low, 50u);
  EXPECT_EQ(t.stats().splits, 2u);
  uint32_t aln, inc;
  t.locate(40, &aln, &inc);
  EXPECT_EQ(aln, 0u);
  EXPECT_EQ(inc, 1u);  // the leaf kept its pairs, not its range
  check_leaves(a, t, ref);
  // 25 goes to the full leaf {10..40}, inside its keys: halves.
  ASSERT_EQ(t.insert(25, value_of(25, 1, 8).data()), XStatus::kOk);
  ref[25] = 1;
  runs = t.export_all();
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].keys, (std::vector<uint64_t>{10, 20}));
  EXPECT_EQ(runs[1].keys, (std::vector<uint64_t>{25, 30, 40}));
  check_leaves(a, t, ref);
  expect_gets(t, ref);
}

// An ascending run that meets keys of another range in its leaf (a
// district's newest orders below the next district's oldest): the split
// falls right above the run's key, so the run goes on filling full leaves
// and the foreign keys move out once — a halving split would split again
// every fanout / 2 inserts and leave half-empty leaves behind.
TEST(XTree, AnAscendingRunBelowAnotherRangeFillsLeaves) {
  Arena a(1 << 22);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 4000));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  std::map<uint64_t, uint32_t> ref;
  auto put = [&](uint64_t k) { insert_as_ref_says(t, ref, k); };
  put(1000);
  put(1001);
  put(10);
  put(20);  // one full leaf: {1000, 1001, 10, 20}, 20 taken last
  const uint64_t splits_before = t.stats().splits;
  for (uint64_t k = 30; k <= 420; k += 10) put(k);  // 40 keys of the run
  const uint64_t splits = t.stats().splits - splits_before;
  // One split moves {1000, 1001} out; then one per full leaf of the run.
  EXPECT_LE(splits, 1 + 42 / 4) << "the run is split in halves";
  const auto runs = t.export_all();
  size_t full = 0;
  for (const auto& r : runs) full += r.keys.size() == 4;
  EXPECT_GE(full, runs.size() - 2) << "half-empty leaves left behind";
  EXPECT_EQ(runs.back().keys, (std::vector<uint64_t>{1000, 1001}));
  check_leaves(a, t, ref);
  expect_gets(t, ref);
  // A key inside a full leaf of the run, not after its last insert: halves.
  put(15);
  EXPECT_EQ(t.export_all().front().keys, (std::vector<uint64_t>{10, 15}));
  check_leaves(a, t, ref);
  expect_gets(t, ref);
}

// Inserts start at the leaf of the previous insert (no descent) when that
// leaf covers the key. Interleaved ascending streams, keys just below and
// above a stream's leaf, keys that land in ranges a split gave away, and
// descending runs: every key must end in the leaf whose fences hold it, and
// the tree must match the reference after every step.
TEST(XTree, InsertsAtThePreviousLeafStayInsideItsFences) {
  Arena a(1 << 22);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 4000));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  std::map<uint64_t, uint32_t> ref;
  auto put = [&](uint64_t k) { insert_as_ref_says(t, ref, k); };
  // Three streams of ascending keys, a few at a time each (a New-Order's lines).
  for (uint64_t round = 0; round < 40; ++round) {
    for (uint64_t stream = 1; stream <= 3; ++stream) {
      for (uint64_t line = 0; line < 5; ++line) put(stream * 100000 + round * 10 + line);
    }
    check_leaves(a, t, ref);
  }
  // Around and between what is there: each key right after a key of
  // another leaf, then the keys just below every stream's start.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    auto it = ref.begin();
    std::advance(it, static_cast<long>(rng() % ref.size()));
    put(it->first + 1 + rng() % 3);
    if (i % 50 == 49) check_leaves(a, t, ref);
  }
  for (uint64_t stream = 1; stream <= 3; ++stream) {
    for (uint64_t k = stream * 100000; k > stream * 100000 - 30; --k) put(k - 1);
  }
  check_leaves(a, t, ref);
  // A present key is refused wherever the insert starts; an upsert
  // overwrites it in place.
  EXPECT_EQ(t.insert(100000, value_of(100000, 1, 8).data()), XStatus::kAlreadyExists);
  ASSERT_EQ(t.insert(100001, value_of(100001, 2, 8).data(), /*upsert=*/true), XStatus::kOk);
  ref[100001] = 2;
  check_leaves(a, t, ref);
  expect_gets(t, ref);
}

TEST(XTree, SplitLogReportsLostEvents) {
  Arena a(4 << 20);
  XTreeOptions o = opts(4, 8, 5000);
  o.split_log_capacity = 8;
  auto tr = XTree::create(a.mem, a.bytes, o);
  ASSERT_TRUE(tr.is_ok());
  auto v = value_of(1, 1, 8);
  for (uint64_t k = 0; k < 200; ++k) ASSERT_EQ((*tr)->insert(k, v.data()), XStatus::kOk);
  const uint64_t seq = (*tr)->split_seq();
  ASSERT_GT(seq, 20u);
  uint64_t next;
  bool lost;
  auto ev = (*tr)->splits_since(0, 100, &next, &lost);
  EXPECT_TRUE(lost);
  ASSERT_EQ(ev.size(), 8u);
  EXPECT_EQ(ev.back().seq, seq);
  EXPECT_EQ(next, seq);
  ev = (*tr)->splits_since(seq - 3, 2, &next, &lost);
  EXPECT_FALSE(lost);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].seq, seq - 2);
  EXPECT_EQ(next, seq - 1);
}

TEST(XTree, PositionHint) {
  Arena a(1 << 20);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 100));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  for (uint64_t k = 1; k <= 20; ++k) ASSERT_EQ(t.insert(k, value_of(k, 0, 8).data()), XStatus::kOk);
  uint32_t aln, inc;
  t.locate(7, &aln, &inc);
  uint32_t galn = 99, ginc = 99;
  std::vector<uint8_t> tmp(8);
  ASSERT_EQ(t.get(7, tmp.data(), &galn, &ginc), XStatus::kOk);
  EXPECT_EQ(galn, aln);
  EXPECT_EQ(ginc, inc);
  ASSERT_EQ(t.get(1000, tmp.data(), &galn, &ginc), XStatus::kNotFound);
  uint32_t laln, linc;
  t.locate(1000, &laln, &linc);
  EXPECT_EQ(galn, laln);
  EXPECT_EQ(ginc, linc);
  bool used = false;
  auto v1 = value_of(7, 1, 8);
  EXPECT_EQ(t.update_hinted(7, v1.data(), aln, inc, &used), XStatus::kOk);
  EXPECT_TRUE(used);
  std::vector<uint8_t> out(8);
  ASSERT_EQ(t.get(7, out.data()), XStatus::kOk);
  EXPECT_EQ(out, v1);
  // Stale incarnation, wrong leaf, leaf out of range: the normal path runs.
  auto v2 = value_of(7, 2, 8);
  EXPECT_EQ(t.update_hinted(7, v2.data(), aln, inc + 1, &used), XStatus::kOk);
  EXPECT_FALSE(used);
  EXPECT_EQ(t.update_hinted(7, v2.data(), aln == 0 ? 1 : 0, 0, &used), XStatus::kOk);
  EXPECT_FALSE(used);
  EXPECT_EQ(t.update_hinted(7, v2.data(), 1000000, 0, &used), XStatus::kOk);
  EXPECT_FALSE(used);
  ASSERT_EQ(t.get(7, out.data()), XStatus::kOk);
  EXPECT_EQ(out, v2);
  EXPECT_EQ(t.update_hinted(99, v2.data(), aln, inc, &used), XStatus::kNotFound);
}

TEST(XTree, DeletesNeverFreeLeaves) {
  Arena a(1 << 20);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 200));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  std::map<uint64_t, uint32_t> ref;
  for (uint64_t k = 0; k < 100; ++k) {
    ASSERT_EQ(t.insert(k, value_of(k, 0, 8).data()), XStatus::kOk);
    ref[k] = 0;
  }
  const auto leaves = t.stats().leaves_used;
  for (uint64_t k = 0; k < 100; k += 1) {
    if (k % 10 == 0) continue;
    ASSERT_EQ(t.remove(k), XStatus::kOk);
    ref.erase(k);
  }
  EXPECT_EQ(t.stats().leaves_used, leaves);
  check_leaves(a, t, ref);
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  EXPECT_TRUE(t.scan(1, 100, keys, vals));  // crosses empty leaves
  EXPECT_EQ(keys, (std::vector<uint64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90}));
  // Re-inserting reuses the emptied leaves' room: no new leaves needed.
  for (uint64_t k = 1; k < 10; ++k) ASSERT_EQ(t.insert(k, value_of(k, 0, 8).data()), XStatus::kOk);
}

TEST(XTree, OutOfLeavesIsAClearErrorAndChangesNothing) {
  Arena a(1 << 20);
  auto tr = XTree::create(a.mem, a.bytes, opts(4, 8, 3));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  uint64_t k = 0;
  XStatus s = XStatus::kOk;
  std::map<uint64_t, uint32_t> ref;
  for (; k < 100 && s == XStatus::kOk; ++k) {
    s = t.insert(k, value_of(k, 0, 8).data());
    if (s == XStatus::kOk) ref[k] = 0;
  }
  ASSERT_EQ(s, XStatus::kOutOfLeaves);
  EXPECT_EQ(t.stats().leaves_used, 3u);
  Status st = to_status(s, k - 1);
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_NE(st.message().find("leaf_capacity"), std::string::npos) << st.message();
  check_leaves(a, t, ref);
  std::vector<uint8_t> out(8);
  EXPECT_EQ(t.get(k - 1, out.data()), XStatus::kNotFound);
  // Updates and deletes still work; a delete makes room again.
  EXPECT_EQ(t.update(0, value_of(0, 5, 8).data()), XStatus::kOk);
  ref[0] = 5;
  EXPECT_EQ(t.remove(k - 2), XStatus::kOk);
  ref.erase(k - 2);
  EXPECT_EQ(t.insert(k - 2, value_of(k - 2, 1, 8).data()), XStatus::kOk);
  ref[k - 2] = 1;
  check_leaves(a, t, ref);
}

TEST(XTree, OptionErrorsNameTheOption) {
  Arena a(1 << 16);
  auto bad = [&](XTreeOptions o, const char* word) {
    auto r = XTree::create(a.mem, a.bytes, o);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(word), std::string::npos) << r.status().message();
  };
  bad(opts(1, 8, 4), "fanout");
  bad(opts(256, 8, 4), "fanout");
  bad(opts(16, 0, 4), "value_bytes");
  bad(opts(16, 8, 0), "leaf_capacity");
  bad(opts(16, 8, 4, 100), "leaf_offset");
  bad(opts(16, 8, 1000), "region");
  XTreeOptions o = opts(16, 8, 4);
  o.inner_keys = 1;
  bad(o, "inner_keys");
  o.inner_keys = kMaxInnerKeys + 1;
  bad(o, "inner_keys");
  EXPECT_FALSE(XTree::create(nullptr, 0, opts(16, 8, 4)).is_ok());
}

TEST(XTree, ExtremeKeys) {
  Arena a(1 << 20);
  auto tr = XTree::create(a.mem, a.bytes, opts(3, 8, 100));
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  std::vector<uint64_t> ks = {0, 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63, 5, 6, 7};
  for (uint64_t k : ks) ASSERT_EQ(t.insert(k, value_of(k, 0, 8).data()), XStatus::kOk);
  std::sort(ks.begin(), ks.end());
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  EXPECT_TRUE(t.scan(0, 100, keys, vals));
  EXPECT_EQ(keys, ks);
  EXPECT_TRUE(t.scan(UINT64_MAX, 100, keys, vals));
  EXPECT_EQ(keys, (std::vector<uint64_t>{UINT64_MAX}));
  EXPECT_TRUE(t.scan(0, 8, keys, vals));  // n pairs and nothing after them
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_FALSE(t.scan(0, 7, keys, vals));
  EXPECT_EQ(keys.size(), 7u);
}

// Owner-side speed on one thread (a report, not a target): 200 K random
// inserts, 200 K gets, 20 K scans of 50, fanout 16, 8-byte values.
TEST(XTree, ThroughputReport) {
  constexpr uint32_t kKeys = 200000;
  XTreeOptions o = opts(16, 8, 40000);
  Arena a(o.area.leaf_offset + o.area.bytes());
  auto tr = XTree::create(a.mem, a.bytes, o);
  ASSERT_TRUE(tr.is_ok());
  XTree& t = **tr;
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(kKeys);
  for (auto& k : keys) k = rng();
  using C = std::chrono::steady_clock;
  auto mops = [](C::time_point s, size_t n) {
    return n / std::chrono::duration<double, std::micro>(C::now() - s).count();
  };
  auto s0 = C::now();
  for (uint64_t k : keys) ASSERT_EQ(t.insert(k, &k), XStatus::kOk);
  const double ins = mops(s0, kKeys);
  uint64_t out = 0, sum = 0;
  s0 = C::now();
  for (uint64_t k : keys) {
    ASSERT_EQ(t.get(k, &out), XStatus::kOk);
    sum += out;
  }
  const double get = mops(s0, kKeys);
  std::vector<uint64_t> ks;
  std::vector<uint8_t> vs;
  s0 = C::now();
  for (uint32_t i = 0; i < kKeys / 10; ++i) {
    t.scan(keys[i], 50, ks, vs);
    ASSERT_FALSE(ks.empty());
  }
  const double scan = mops(s0, kKeys / 10);
  std::printf(
      "owner side, 1 thread, %u keys: insert %.2f Mops/s, get %.2f Mops/s, scan(50) "
      "%.3f Mops/s; %llu leaves, %llu splits\n",
      kKeys, ins, get, scan, (unsigned long long)t.stats().leaves_used,
      (unsigned long long)t.stats().splits);
  EXPECT_NE(sum, 0u);
}

}  // namespace
}  // namespace drtmx::store::xstore
