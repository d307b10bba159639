// VersionStore lanes (version_store.h, "Lanes"): versions a coordinator
// writes into its lane with plain stores — as its one-sided WRITEs land —
// join the owner's chains, are read at their timestamps, are reclaimed only
// once written and superseded at or below the low-water mark, and a reused
// lane slot is never misread; mixed with the owner's pushes under
// concurrent readers and GC.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "dst/version_store.h"
#include "random_reader.h"
#include "record_image.h"

namespace drtmx::dst {
namespace {

constexpr uint32_t kVs = 24;

VersionStoreOptions lanes_options(uint64_t capacity, uint32_t lanes, uint64_t lane_capacity,
                                  uint64_t slots) {
  VersionStoreOptions o;
  o.name = "t/p0";
  o.value_size = kVs;
  o.record_slots = slots;
  o.capacity = capacity;
  o.lanes = lanes;
  o.lane_capacity = lane_capacity;
  return o;
}

// A registered region starts zeroed; the owner's ring may hold anything.
struct Area {
  explicit Area(const VersionStoreOptions& o) : bytes(VersionStore::area_bytes(o)) {
    mem = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) & ~uint64_t{63}));
    std::memset(mem, 0, bytes);
    std::memset(mem, 0xEE, VersionStore::bytes_for(o.capacity, o.value_size));
  }
  ~Area() { std::free(mem); }
  std::span<uint8_t> span() { return {mem, bytes}; }
  uint64_t bytes;
  uint8_t* mem;
};

std::vector<uint8_t> rec(uint64_t k, uint64_t v, Timestamp wts) {
  return testing::record_image(kVs, k, v, wts, static_cast<uint8_t>(v));
}

uint64_t* word(Area& a, uint64_t offset) {
  return reinterpret_cast<uint64_t*>(a.mem + offset);
}

// What a coordinator WRITEs, in its order: the lane header's head bound
// when the push would reach it (raised by `slack`, as the engine's lock
// batch does), then the commit's slot (one WRITE, its position word
// included), the chain head; `publish_position` = false lands every word of
// the slot but its position word and stops there (a WRITE still on its
// way), finish() lands the rest.
class LaneWriter {
 public:
  LaneWriter(Area& a, const VersionStoreOptions& o, uint32_t lane) : a_(a), o_(o), lane_(lane) {}
  uint64_t push(uint64_t slot, const std::vector<uint8_t>& image, Timestamp superseded_at,
                bool publish_position = true) {
    const uint64_t pos = head_++;
    if (head_ > bound_) {
      bound_ = head_ + slack_;
      __atomic_store_n(word(a_, VersionStore::lane_header_offset(o_, lane_) + 8), bound_,
                       __ATOMIC_RELEASE);
    }
    std::vector<uint8_t> s(VersionStore::slot_bytes(kVs));
    const uint64_t older =
        __atomic_load_n(word(a_, VersionStore::chain_head_offset(o_, slot)), __ATOMIC_ACQUIRE);
    const uint64_t link = VersionStore::lane_link(lane_, pos);
    VersionStore::build_lane_slot(s.data(), link, image.data(), superseded_at, older, kVs);
    const uint64_t at = VersionStore::lane_slot_offset(o_, lane_, pos);
    // Word by word, as the readers' relaxed loads expect.
    for (size_t i = 8; i < s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      __atomic_store_n(word(a_, at + i), w, __ATOMIC_RELAXED);
    }
    std::memcpy(&position_, s.data(), 8);
    if (publish_position) finish(pos, slot);
    return link;
  }
  void finish(uint64_t pos, uint64_t slot) {
    const uint64_t link = VersionStore::lane_link(lane_, pos);
    __atomic_store_n(word(a_, VersionStore::lane_slot_offset(o_, lane_, pos)), position_,
                     __ATOMIC_RELEASE);
    __atomic_store_n(word(a_, VersionStore::chain_head_offset(o_, slot)), link, __ATOMIC_RELEASE);
  }
  uint64_t head() const { return head_; }
  void set_slack(uint64_t slack) { slack_ = slack; }
  uint64_t tail() const {
    return __atomic_load_n(word(a_, VersionStore::lane_header_offset(o_, lane_)), __ATOMIC_ACQUIRE);
  }

 private:
  Area& a_;
  VersionStoreOptions o_;
  uint32_t lane_;
  uint64_t head_ = 0;
  uint64_t bound_ = 0;
  uint64_t slack_ = 0;
  uint64_t position_ = 0;  // the last slot's position word
};

TEST(VersionStoreLanes, LaneVersionsJoinTheChainsAndGoOnlyWhenWrittenAndSuperseded) {
  const VersionStoreOptions o = lanes_options(8, 2, 4, 16);
  Area a(o);
  auto made = VersionStore::create(a.span(), o);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  VersionStore& s = **made;
  LaneWriter w(a, o, 1);
  // Slot 3: version 1 (wts 10) pushed by the owner at 20, version 2 (wts
  // 20) by lane 1's coordinator at 30.
  ASSERT_TRUE(s.reserve(1));
  ASSERT_TRUE(s.push(3, rec(7, 1, 10).data(), 20, true));
  w.push(3, rec(7, 2, 20), 30);
  uint8_t v[32];
  VersionInfo info;
  ASSERT_EQ(s.find(3, 25, v, &info), Found::kVersion);
  EXPECT_EQ(info.version, 2u);
  EXPECT_EQ(v[0], 2);
  ASSERT_EQ(s.find(3, 15, v, &info), Found::kVersion);
  EXPECT_EQ(info.version, 1u);
  EXPECT_EQ(s.find(3, 5, v, &info), Found::kNone);
  EXPECT_EQ(s.stats().in_use, 2u);
  EXPECT_EQ(s.stats().pushed, 2u);

  // lwm 25: the owner's version (superseded at 20) goes, the lane's (30) stays.
  EXPECT_EQ(s.gc(25), 1u);
  EXPECT_EQ(w.tail(), 0u);
  ASSERT_EQ(s.find(3, 25, v, &info), Found::kVersion);
  EXPECT_EQ(s.find(3, 15, v, &info), Found::kReclaimed);  // below the lwm: detected

  // A slot still being written (its position not stored yet) stops GC
  // there, and the count of versions in use (the bound is ahead of it).
  w.set_slack(5);
  w.push(3, rec(7, 3, 30), 40, /*publish_position=*/false);
  EXPECT_EQ(s.stats().in_use, 1u);
  EXPECT_EQ(s.gc(100), 1u);  // lane position 0 only
  EXPECT_EQ(w.tail(), 1u);
  w.finish(1, 3);
  EXPECT_EQ(s.stats().in_use, 1u);  // not the bound's 7 - 1
  EXPECT_EQ(s.stats().pushed, 3u);
  EXPECT_EQ(s.gc(100), 1u);
  EXPECT_EQ(w.tail(), 2u);
  EXPECT_EQ(s.stats().in_use, 0u);
  EXPECT_EQ(s.stats().reclaimed, 3u);
}

// A coordinator on the store's own node runs its lane steps as loads and
// stores (push_lane, chain_head, lane_header, raise_lane_bound): they must
// leave the area exactly as the one-sided WRITEs of a remote coordinator
// do, and touch nothing for a lane or record slot out of range.
TEST(VersionStoreLanes, TheOwnNodesStepsStoreWhatTheOneSidedWritesStore) {
  const VersionStoreOptions o = lanes_options(8, 2, 4, 16);
  Area remote(o), here(o);
  auto rs = std::move(VersionStore::create(remote.span(), o).value());
  auto hs = std::move(VersionStore::create(here.span(), o).value());
  LaneWriter w(remote, o, 1);
  w.set_slack(2);
  uint64_t head = 0, bound = 0;
  for (uint64_t v = 1; v <= 4; ++v) {
    const uint64_t slot = v % 3;
    const std::vector<uint8_t> image = rec(slot, v, 10 * v);
    w.push(slot, image, 10 * v + 10);
    const uint64_t pos = head++;
    if (head > bound) {
      bound = head + 2;
      hs->raise_lane_bound(1, bound);
    }
    std::vector<uint8_t> s(VersionStore::slot_bytes(kVs));
    VersionStore::build_lane_slot(s.data(), VersionStore::lane_link(1, pos), image.data(),
                                  10 * v + 10, hs->chain_head(slot), kVs);
    hs->push_lane(1, pos, s.data(), slot);
  }
  ASSERT_EQ(std::memcmp(remote.mem, here.mem, remote.bytes), 0);
  EXPECT_EQ(hs->lane_header(1, 1), bound);
  EXPECT_EQ(hs->chain_head(1), VersionStore::lane_link(1, 3));  // v = 4 went to position 3
  uint8_t v[32];
  VersionInfo info;
  ASSERT_EQ(hs->find(1, 45, v, &info), Found::kVersion);
  EXPECT_EQ(info.version, 4u);
  ASSERT_EQ(hs->find(1, 15, v, &info), Found::kVersion);
  EXPECT_EQ(info.version, 1u);
  // GC moves the lane's tail in the header both read.
  EXPECT_EQ(rs->gc(35), hs->gc(35));
  EXPECT_EQ(hs->lane_header(1, 0), w.tail());
  EXPECT_EQ(hs->lane_header(1, 0), 2u);
  // Out of range: nothing stored, nothing read.
  std::vector<uint8_t> junk(VersionStore::slot_bytes(kVs), 0xAB);
  hs->push_lane(2, 0, junk.data(), 0);
  hs->push_lane(1, 0, junk.data(), 16);
  hs->raise_lane_bound(2, 99);
  EXPECT_EQ(std::memcmp(remote.mem, here.mem, remote.bytes), 0);
  EXPECT_EQ(hs->chain_head(16), 0u);
  EXPECT_EQ(hs->lane_header(2, 0), 0u);
  EXPECT_EQ(hs->lane_header(1, 2), 0u);
}

TEST(VersionStoreLanes, AReusedLaneSlotIsDetectedNotMisread) {
  const VersionStoreOptions o = lanes_options(8, 1, 4, 16);
  Area a(o);
  auto s = std::move(VersionStore::create(a.span(), o).value());
  LaneWriter w(a, o, 0);
  // Slot 5's first version goes to lane position 0 (superseded at 20).
  const uint64_t first = w.push(5, rec(1, 1, 10), 20);
  EXPECT_EQ(s->gc(100), 1u);
  // Four more versions of slot 6 wrap the lane: position 4 reuses the slot
  // of position 0.
  for (uint64_t v = 1; v <= 4; ++v) w.push(6, rec(2, v, 100 + 10 * v), 110 + 10 * v);
  uint8_t v[32];
  VersionInfo info;
  // Slot 5's chain still names position 0 (a read below the lwm: a bug).
  EXPECT_EQ(*word(a, VersionStore::chain_head_offset(o, 5)), first);
  EXPECT_EQ(s->find(5, 15, v, &info), Found::kReclaimed);
  ASSERT_EQ(s->find(6, 125, v, &info), Found::kVersion);
  EXPECT_EQ(info.version, 2u);
}

// A lane slot arrives in one WRITE whose words land in any order. Reusing
// a lane slot whose last tenant GC freed (superseded at 20, lwm 35),
// the new tenant (superseded at 50) half landed: its position word beside
// the old superseded_at, or the old position word beside its
// superseded_at. GC must take neither for the new version — the first
// would free a version snapshots above the lwm still read.
TEST(VersionStoreLanes, AHalfLandedLaneSlotIsNeverFreed) {
  const VersionStoreOptions o = lanes_options(8, 1, 2, 16);
  Area a(o);
  auto s = std::move(VersionStore::create(a.span(), o).value());
  LaneWriter w(a, o, 0);
  w.push(5, rec(1, 1, 10), 20);  // lane position 0
  w.push(5, rec(1, 2, 20), 30);  // lane position 1
  ASSERT_EQ(s->gc(35), 2u);
  ASSERT_EQ(w.tail(), 2u);
  // Position 2 reuses position 0's slot; its coordinator raised the bound.
  *word(a, VersionStore::lane_header_offset(o, 0) + 8) = 3;
  const uint64_t at = VersionStore::lane_slot_offset(o, 0, 2);
  ASSERT_EQ(at, VersionStore::lane_slot_offset(o, 0, 0));
  const uint64_t old_position = *word(a, at);
  const uint64_t old_sup = *word(a, at + 8);
  ASSERT_EQ(old_sup, 20u);
  std::vector<uint8_t> img(VersionStore::slot_bytes(kVs));
  VersionStore::build_lane_slot(img.data(), VersionStore::lane_link(0, 2), rec(1, 3, 30).data(), 50,
                                0, kVs);
  uint64_t new_position = 0, new_sup = 0;
  std::memcpy(&new_position, img.data(), 8);
  std::memcpy(&new_sup, img.data() + 8, 8);
  ASSERT_EQ(new_sup, 50u);
  // The new position word, the old superseded_at.
  *word(a, at) = new_position;
  EXPECT_EQ(s->gc(35), 0u);
  EXPECT_EQ(s->stats().in_use, 0u);
  // The old position word, the new superseded_at.
  *word(a, at) = old_position;
  *word(a, at + 8) = new_sup;
  EXPECT_EQ(s->gc(35), 0u);
  // Both landed: the version is the new tenant's, kept while the lwm is
  // below 50, freed at 100.
  *word(a, at) = new_position;
  EXPECT_EQ(s->gc(40), 0u);
  EXPECT_EQ(s->stats().in_use, 1u);
  EXPECT_EQ(s->gc(100), 1u);
  EXPECT_EQ(w.tail(), 3u);
}

TEST(VersionStoreLanes, BadLaneOptionsAreRefusedWithTheirName) {
  VersionStoreOptions o = lanes_options(8, 2, 0, 16);
  Area a(lanes_options(8, 2, 4, 16));
  auto r = VersionStore::create(a.span(), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("lane_capacity"), std::string::npos);
  o = lanes_options(8, 2, 4, 16);
  r = VersionStore::create(a.span().subspan(0, a.bytes - 64), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("t/p0"), std::string::npos);
}

// Owner pushes and one lane's pushes on the same records, GC by a trailing
// lwm, a reader at timestamps at or above it: never a reclaimed slot, never
// a version newer than the read timestamp or with the wrong value.
TEST(VersionStoreLanes, ConcurrentReadersNeverSeeAReclaimedOrWrongVersion) {
  constexpr uint64_t kSlots = 8;
  const VersionStoreOptions o = lanes_options(64, 2, 64, kSlots);
  Area a(o);
  auto s = std::move(VersionStore::create(a.span(), o).value());
  LaneWriter lane(a, o, 1);
  std::vector<std::atomic<uint64_t>> newest(kSlots);
  for (auto& n : newest) n = 0;
  std::atomic<uint64_t> clock{1}, lwm{0}, bad{0}, reads{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::mt19937_64 rng(11);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (int i = 0; (i < 20000 || reads.load() < 1000) && i < 1000000 &&
                    std::chrono::steady_clock::now() < until;
         ++i) {
      const uint64_t slot = rng() % kSlots;
      const uint64_t ts = clock.fetch_add(1) + 1;
      const uint64_t old = newest[slot].load();
      if (rng() % 2 == 0) {
        while (!s->reserve(1)) s->gc(lwm.load());
        ASSERT_TRUE(s->push(slot, rec(slot, old % 251, old).data(), ts, true));
      } else {
        // The coordinator's room check: its head against the lane's tail
        // (at most 30 timestamps are above the lwm, so GC makes room).
        while (lane.head() - lane.tail() >= o.lane_capacity) s->gc(lwm.load());
        lane.push(slot, rec(slot, old % 251, old), ts);
      }
      newest[slot].store(ts);
      const uint64_t c = clock.load();
      if (c > 30) {
        lwm.store(c - 30);
        s->gc(c - 30);
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
  EXPECT_GT(lane.tail(), 100u) << "the lane was never reclaimed";
}

}  // namespace
}  // namespace drtmx::dst
