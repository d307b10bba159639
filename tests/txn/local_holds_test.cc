// LocalHolds: the per-worker table of held records. Random holds and drops
// against a std::map model (the backward-shift deletion must keep every
// remaining entry findable), refusals when another coroutine is recorded or
// the table is full, and the waiter lists.
#include "txn/local_holds.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace drtmx::txn {
namespace {

TEST(LocalHolds, RandomHoldsAndDropsMatchAModel) {
  LocalHolds h(64, 8);  // 128 slots, at most 64 entries
  std::map<std::pair<uint16_t, uint64_t>, uint16_t> model;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 200000; ++step) {
    // Few distinct keys and tables: long probe runs and many collisions.
    const uint16_t t = static_cast<uint16_t>(rng() % 3);
    const uint64_t k = rng() % 97;
    const uint16_t co = static_cast<uint16_t>(rng() % 8);
    const auto key = std::make_pair(t, k);
    if (rng() % 2 == 0) {
      const bool ok = h.hold(t, k, co);
      auto it = model.find(key);
      if (it != model.end()) {
        EXPECT_EQ(ok, it->second == co) << "step " << step;
      } else if (model.size() < 64) {
        EXPECT_TRUE(ok) << "step " << step << ": refused with room left";
        model[key] = co;
      } else {
        EXPECT_FALSE(ok) << "step " << step << ": accepted beyond its room";
      }
    } else {
      h.drop(t, k, co);
      auto it = model.find(key);
      if (it != model.end() && it->second == co) model.erase(it);
    }
    ASSERT_EQ(h.size(), model.size()) << "step " << step;
    if (step % 97 == 0) {
      for (uint16_t tt = 0; tt < 3; ++tt) {
        for (uint64_t kk = 0; kk < 97; ++kk) {
          auto it = model.find({tt, kk});
          ASSERT_EQ(h.holder(tt, kk), it == model.end() ? LocalHolds::kNobody : it->second)
              << "step " << step << " table " << tt << " key " << kk;
        }
      }
    }
  }
}

TEST(LocalHolds, AnotherHoldersEntryIsNeitherTakenNorDropped) {
  LocalHolds h(4, 4);
  EXPECT_TRUE(h.hold(1, 42, 0));
  EXPECT_FALSE(h.hold(1, 42, 1)) << "a second coroutine took a held record";
  h.drop(1, 42, 1);  // not its entry
  EXPECT_EQ(h.holder(1, 42), 0);
  EXPECT_TRUE(h.hold(1, 42, 0)) << "the holder itself again";
  EXPECT_EQ(h.holder(2, 42), LocalHolds::kNobody) << "tables are part of the key";
  h.drop(1, 42, 0);
  EXPECT_EQ(h.holder(1, 42), LocalHolds::kNobody);
  EXPECT_EQ(h.size(), 0u);
}

TEST(LocalHolds, WaitersAreListedPerHolder) {
  LocalHolds h(4, 4);
  h.add_waiter(2, 0);
  h.add_waiter(2, 3);
  h.add_waiter(1, 2);
  h.add_waiter(9, 1);  // no such coroutine: ignored
  EXPECT_EQ(h.waiters_of(2), (std::vector<uint16_t>{0, 3}));
  EXPECT_EQ(h.waiters_of(1), (std::vector<uint16_t>{2}));
  EXPECT_TRUE(h.waiters_of(0).empty());
}

}  // namespace
}  // namespace drtmx::txn
