// VersionStore: chains newest first, reads at a timestamp, bounded room with
// reservations, GC by the low-water mark that never frees what a snapshot
// at or above it can read, the graveyard of deleted keys, and concurrent
// readers against pushers and GC.
#include "dst/version_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "random_reader.h"
#include "record_image.h"

namespace drtmx::dst {
namespace {

constexpr uint32_t kVs = 24;

// An aligned area for a store.
struct Area {
  explicit Area(uint64_t capacity) : bytes(VersionStore::bytes_for(capacity, kVs)) {
    mem = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) & ~uint64_t{63}));
    std::memset(mem, 0xEE, bytes);  // not zero: nothing may rely on it
  }
  ~Area() { std::free(mem); }
  std::span<uint8_t> span() { return {mem, bytes}; }
  uint64_t bytes;
  uint8_t* mem;
};

std::unique_ptr<VersionStore> make(Area& a, uint64_t capacity, uint64_t slots = 16) {
  auto s = VersionStore::create(a.span(), {"t/p0", kVs, slots, capacity});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s.value()) : nullptr;
}

// A record image: key k, version v, commit timestamp wts, value filled with v.
std::vector<uint8_t> rec(uint64_t k, uint64_t v, Timestamp wts) {
  return testing::record_image(kVs, k, v, wts, static_cast<uint8_t>(v));
}

uint8_t value_at(const VersionStore& s, uint64_t slot, Timestamp ts, Found* f,
                 VersionInfo* info = nullptr) {
  uint8_t v[32] = {};
  VersionInfo i;
  *f = s.find(slot, ts, v, &i);
  if (info) *info = i;
  return v[0];
}

TEST(VersionStore, ChainIsNewestFirstAndReadsTheNewestNotAfterTheTimestamp) {
  Area a(64);
  auto s = make(a, 64);
  // Versions 1 (wts 10), 2 (wts 20), 3 (wts 30) replaced in turn; 4 in place (wts 40).
  for (uint64_t v = 1; v <= 3; ++v) {
    ASSERT_TRUE(s->reserve(1));
    ASSERT_TRUE(s->push(3, rec(7, v, 10 * v).data(), 10 * (v + 1), true));
  }
  Found f;
  VersionInfo info;
  EXPECT_EQ(value_at(*s, 3, 35, &f, &info), 3);
  EXPECT_EQ(f, Found::kVersion);
  EXPECT_EQ(info.wts, 30u);
  EXPECT_EQ(info.version, 3u);
  EXPECT_EQ(value_at(*s, 3, 20, &f), 2);
  EXPECT_EQ(value_at(*s, 3, 29, &f), 2);
  EXPECT_EQ(value_at(*s, 3, 10, &f), 1);
  value_at(*s, 3, 9, &f);
  EXPECT_EQ(f, Found::kNone);  // the record did not exist then (as far as kept)
  value_at(*s, 4, 100, &f);
  EXPECT_EQ(f, Found::kNone);  // another slot: empty chain
  EXPECT_EQ(s->stats().pushed, 3u);
  EXPECT_EQ(s->stats().in_use, 3u);
}

TEST(VersionStore, RoomIsBoundedAndReservationsAreKept) {
  Area a(4);
  auto s = make(a, 4);
  ASSERT_TRUE(s->reserve(3));
  EXPECT_FALSE(s->reserve(2));  // 3 + 2 > 4
  ASSERT_TRUE(s->reserve(1));
  EXPECT_FALSE(s->push(0, rec(1, 1, 5).data(), 6, false));  // all room is promised
  for (uint64_t v = 1; v <= 4; ++v) ASSERT_TRUE(s->push(0, rec(1, v, v).data(), v + 1, true));
  EXPECT_FALSE(s->reserve(1));
  EXPECT_EQ(s->stats().full, 3u);
  // GC below every superseded_at frees nothing; at 3 it frees versions 1, 2.
  EXPECT_EQ(s->gc(1), 0u);
  EXPECT_EQ(s->gc(3), 2u);
  EXPECT_TRUE(s->reserve(2));
  s->unreserve(2);
  EXPECT_EQ(s->stats().reserved, 0u);
  EXPECT_EQ(s->stats().in_use, 2u);
}

TEST(VersionStore, GcStopsAtTheFirstVersionASnapshotAtTheLowWaterMarkMayRead) {
  Area a(16);
  auto s = make(a, 16);
  // Slot 0: versions superseded at 20, 40; slot 1: one superseded at 25.
  ASSERT_TRUE(s->push(0, rec(1, 1, 10).data(), 20, false));
  ASSERT_TRUE(s->push(1, rec(2, 1, 12).data(), 25, false));
  ASSERT_TRUE(s->push(0, rec(1, 2, 20).data(), 40, false));
  EXPECT_EQ(s->gc(24), 1u);  // only the first: superseded at 20
  Found f;
  // A snapshot at 24 (>= lwm) reads slot 1's version (superseded at 25).
  EXPECT_EQ(value_at(*s, 1, 24, &f), 1);
  EXPECT_EQ(f, Found::kVersion);
  EXPECT_EQ(value_at(*s, 0, 24, &f), 2);
  EXPECT_EQ(f, Found::kVersion);
  // Below the lwm the chain's reclaimed tail is detected, never misread.
  value_at(*s, 0, 15, &f);
  EXPECT_EQ(f, Found::kReclaimed);
}

TEST(VersionStore, ReusedSlotsAreDetectedNotMisread) {
  Area a(2);
  auto s = make(a, 2);
  ASSERT_TRUE(s->push(0, rec(1, 1, 10).data(), 20, false));
  ASSERT_TRUE(s->push(0, rec(1, 2, 20).data(), 30, false));
  ASSERT_EQ(s->gc(30), 2u);
  // The ring wraps: slot 1's versions reuse the positions slot 0's chain names.
  ASSERT_TRUE(s->push(1, rec(2, 1, 50).data(), 60, false));
  Found f;
  value_at(*s, 0, 25, &f);
  EXPECT_EQ(f, Found::kReclaimed);
}

TEST(VersionStore, GraveyardKeepsDeletedKeysForOlderSnapshots) {
  Area a(16);
  auto s = make(a, 16);
  // Key 9 in slot 2: version 1 (wts 10), replaced by version 2 (wts 20),
  // deleted at 30. Then re-inserted elsewhere and deleted again at 50.
  ASSERT_TRUE(s->push(2, rec(9, 1, 10).data(), 20, false));
  ASSERT_TRUE(s->reserve(1));
  s->bury(2, 9, rec(9, 2, 20).data(), 30);
  Found f;
  value_at(*s, 2, 100, &f);
  EXPECT_EQ(f, Found::kNone);  // the slot's chain moved to the graveyard
  ASSERT_TRUE(s->reserve(1));
  s->bury(5, 9, rec(9, 4, 40).data(), 50);
  uint8_t v[32];
  VersionInfo info;
  EXPECT_EQ(s->find_buried(9, 25, v, &info), Found::kVersion);
  EXPECT_FALSE(info.deleted);
  EXPECT_EQ(v[0], 2);
  EXPECT_EQ(s->find_buried(9, 15, v, &info), Found::kVersion);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(s->find_buried(9, 35, v, &info), Found::kVersion);
  EXPECT_TRUE(info.deleted);  // between the two incarnations
  EXPECT_EQ(s->find_buried(9, 45, v, &info), Found::kVersion);
  EXPECT_FALSE(info.deleted);
  EXPECT_EQ(v[0], 4);
  EXPECT_EQ(s->find_buried(9, 55, v, &info), Found::kVersion);
  EXPECT_TRUE(info.deleted);
  EXPECT_EQ(s->find_buried(9, 5, v, &info), Found::kNone);
  EXPECT_EQ(s->find_buried(8, 25, v, &info), Found::kNone);
  std::vector<uint64_t> seen;
  s->buried_in(0, 100, 45, [&](uint64_t k, const uint8_t* val, const VersionInfo&) {
    seen.push_back(k);
    EXPECT_EQ(val[0], 4);
  });
  EXPECT_EQ(seen, std::vector<uint64_t>{9});
  s->buried_in(0, 100, 35, [&](uint64_t, const uint8_t*, const VersionInfo&) { ADD_FAILURE(); });
  EXPECT_EQ(s->stats().buried, 1u);
  // Once the last deletion is below the lwm the key is forgotten.
  s->gc(50);
  EXPECT_EQ(s->stats().buried, 0u);
  EXPECT_EQ(s->find_buried(9, 60, v, &info), Found::kNone);
}

// Writers push versions of many records with growing timestamps while GC
// follows a low-water mark and readers read at snapshots >= it: every read
// returns exactly the version that was current at its timestamp.
TEST(VersionStore, ConcurrentReadersNeverSeeAReclaimedOrWrongVersion) {
  constexpr uint64_t kSlots = 8, kCap = 64;
  Area a(kCap);
  auto s = make(a, kCap, kSlots);
  // Per slot, the in-place wts (the newest version), published by the writer.
  std::vector<std::atomic<uint64_t>> newest(kSlots);
  for (auto& n : newest) n = 0;
  std::atomic<uint64_t> clock{1};  // timestamps: writes take clock++
  std::atomic<uint64_t> lwm{0};    // readers read at >= this
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  std::thread writer([&] {
    std::mt19937_64 rng(3);
    // At least 20 000 versions and until the reader has read 1 000 (on a
    // loaded machine it may start late); bounded by 1 000 000 versions or 2 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (int i = 0; (i < 20000 || reads.load() < 1000) && i < 1000000 &&
                    std::chrono::steady_clock::now() < until;
         ++i) {
      const uint64_t slot = rng() % kSlots;
      const uint64_t ts = clock.fetch_add(1) + 1;
      const uint64_t old = newest[slot].load();
      // The version in place (wts old, value = old % 251) is superseded at ts.
      while (!s->reserve(1)) s->gc(lwm.load());
      ASSERT_TRUE(s->push(slot, rec(slot, old % 251, old).data(), ts, true));
      newest[slot].store(ts);
      // The lwm trails the clock by 40 timestamps.
      const uint64_t c = clock.load();
      if (c > 40) {
        lwm.store(c - 40);
        s->gc(c - 40);
      }
    }
    stop = true;
  });
  std::thread reader(
      [&] { testing::read_randomly(*s, newest, clock, lwm, stop, &bad, &reads, 5); });
  writer.join();
  reader.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 100u);
  EXPECT_GT(s->stats().reclaimed, 1000u);
  EXPECT_LE(s->stats().peak, kCap);
}

TEST(VersionStore, BadOptionsAreRefusedWithTheirName) {
  Area a(4);
  auto s = VersionStore::create(a.span(), {"t/p0", kVs, 4, 0});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("capacity"), std::string::npos);
  auto t = VersionStore::create(a.span(), {"t/p0", kVs, 4, 1000});
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("area"), std::string::npos);
}

}  // namespace
}  // namespace drtmx::dst
