// KeyIndex (txn/key_index.h) against std::map: growth, replacement, clear,
// the epoch's wrap, and keys that differ only in the table.
#include "txn/key_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>

namespace drtmx::txn {
namespace {

TEST(KeyIndex, MatchesAMapThroughGrowthAndClears) {
  KeyIndex idx;
  std::map<std::pair<uint16_t, uint64_t>, uint32_t> ref;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    const int n = 1 + static_cast<int>(rng() % 2000);  // grows well past 64 slots
    for (int i = 0; i < n; ++i) {
      const auto t = static_cast<uint16_t>(rng() % 3);
      const uint64_t k = rng() % 3000;  // repeats: replacement
      const auto pos = static_cast<uint32_t>(rng());
      idx.put(t, k, pos);
      ref[{t, k}] = pos;
    }
    ASSERT_EQ(idx.size(), ref.size());
    for (const auto& [tk, pos] : ref) ASSERT_EQ(idx.find(tk.first, tk.second), pos);
    for (int i = 0; i < 200; ++i) {
      const auto t = static_cast<uint16_t>(rng() % 4);
      const uint64_t k = rng() % 4000;
      auto it = ref.find({t, k});
      ASSERT_EQ(idx.find(t, k), it == ref.end() ? KeyIndex::kAbsent : it->second);
    }
    idx.clear();
    ref.clear();
    ASSERT_EQ(idx.size(), 0u);
    ASSERT_EQ(idx.find(0, 0), KeyIndex::kAbsent);
  }
}

TEST(KeyIndex, TheTableIsPartOfTheKey) {
  KeyIndex idx;
  idx.put(1, 42, 10);
  idx.put(2, 42, 20);
  EXPECT_EQ(idx.find(1, 42), 10u);
  EXPECT_EQ(idx.find(2, 42), 20u);
  EXPECT_EQ(idx.find(3, 42), KeyIndex::kAbsent);
}

TEST(KeyIndex, NothingSurvivesTheEpochWrap) {
  KeyIndex idx(~uint32_t{0} - 2);
  for (int round = 0; round < 6; ++round) {  // crosses the wrap
    for (uint64_t k = 0; k < 40; ++k) {
      EXPECT_EQ(idx.find(0, k), KeyIndex::kAbsent) << round << " " << k;
    }
    for (uint64_t k = 0; k < 40; ++k) idx.put(0, k, static_cast<uint32_t>(k + round));
    for (uint64_t k = 0; k < 40; ++k) EXPECT_EQ(idx.find(0, k), k + round);
    idx.clear();
  }
}

}  // namespace
}  // namespace drtmx::txn
