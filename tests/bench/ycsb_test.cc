// The YCSB generator: mixes, distributions, unique inserts, key scramble.
#include "ycsb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <unordered_set>

namespace drtmx::bench {
namespace {

TEST(Ycsb, MixesMatchTheStandardWorkloads) {
  for (const char* w : {"a", "B", "c", "d", "e", "f"}) {
    auto m = ycsb_mix(w);
    ASSERT_TRUE(m.is_ok()) << w;
    EXPECT_NEAR(m->read + m->update + m->insert + m->scan + m->rmw, 1.0, 1e-9) << w;
  }
  EXPECT_FALSE(ycsb_mix("g").is_ok());
  EXPECT_FALSE(ycsb_mix("").is_ok());
  auto a = ycsb_mix("a").value();
  YcsbGenerator g(a, KeyDist::kUniform, 0.99, 1000, 0, 1, 7);
  int reads = 0;
  for (int i = 0; i < 100000; ++i) reads += g.next().op == YcsbOp::kRead;
  EXPECT_NEAR(reads / 100000.0, 0.5, 0.01);
}

TEST(Ycsb, ZipfianRankFrequenciesFollowThePowerLaw) {
  Zipfian z(1000, 0.99);
  std::vector<uint64_t> hits(1000, 0);
  uint64_t s = 88172645463325252ull;
  const int n = 400000;
  for (int i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    hits[z.next(static_cast<double>(s >> 11) * 0x1.0p-53)]++;
  }
  double zeta = 0;
  for (int i = 1; i <= 1000; ++i) zeta += 1.0 / std::pow(i, 0.99);
  for (int r : {0, 1, 9}) {
    const double want = n / std::pow(r + 1, 0.99) / zeta;
    EXPECT_NEAR(hits[r], want, want * 0.1) << "rank " << r;
  }
  EXPECT_GT(hits[0], hits[500] * 100);
}

TEST(Ycsb, InsertsAreUniqueAcrossGeneratorsAndLatestFavoursThem) {
  auto d = ycsb_mix("d").value();
  std::unordered_set<uint64_t> inserted;
  std::vector<YcsbGenerator> gens;
  for (uint32_t i = 0; i < 4; ++i) gens.emplace_back(d, KeyDist::kLatest, 0.99, 10000, i, 4, 3);
  uint64_t reads_of_new = 0, reads = 0;
  std::unordered_set<uint64_t> mine;
  for (int k = 0; k < 50000; ++k) {
    for (uint32_t i = 0; i < 4; ++i) {
      auto op = gens[i].next();
      if (op.op == YcsbOp::kInsert) {
        EXPECT_TRUE(inserted.insert(op.key).second) << "duplicate insert";
        if (i == 0) mine.insert(op.key);
      } else if (i == 0) {
        ++reads;
        reads_of_new += mine.count(op.key);
      }
    }
  }
  EXPECT_GT(inserted.size(), 8000u);
  // Generator 0 inserted ~2500 keys into 12500: with "latest" far more than
  // a fifth of its reads hit them.
  EXPECT_GT(static_cast<double>(reads_of_new) / reads, 0.5);
}

TEST(Ycsb, ScanLengthsAndKeyScrambleIsABijectionOnASample) {
  auto e = ycsb_mix("e").value();
  YcsbGenerator g(e, KeyDist::kUniform, 0.99, 5000, 0, 1, 9);
  uint32_t lo = 1000, hi = 0;
  for (int i = 0; i < 20000; ++i) {
    auto op = g.next();
    if (op.op != YcsbOp::kScan) continue;
    lo = std::min(lo, op.scan_length);
    hi = std::max(hi, op.scan_length);
  }
  EXPECT_EQ(lo, 1u);
  EXPECT_EQ(hi, 100u);
  std::unordered_set<uint64_t> keys;
  for (uint64_t i = 0; i < 1000000; ++i) keys.insert(ycsb_key(i));
  EXPECT_EQ(keys.size(), 1000000u);
}

}  // namespace
}  // namespace drtmx::bench
