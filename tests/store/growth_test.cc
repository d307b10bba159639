// Growth of the owner-side structures (issue 46, store/tables/plan.h
// "Growth"): RecordHeap, XTree leaves and HashTable overflow buckets ask
// their `grow` callback to back memory in ascending extents before they
// use it, never touch memory beyond what was backed, report a failed grow
// as an error of that insert only (and go on afterwards), and a heap's
// recovery reads only the bytes that were ever backed. With a GrowAhead, a
// heap's extents are backed on that thread before the inserters need them,
// one grow() at a time and in order, also under concurrent inserters.
//
// "Never touch": the test regions are filled with a poison byte; after
// thousands of inserts every byte past the last backed extent still holds
// it. The structures work although the memory they take holds garbage
// (leaves and overflow buckets are formatted when taken).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/grow_ahead.h"
#include "store/hash/hash_table.h"
#include "store/heap.h"
#include "store/record.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store {
namespace {

constexpr uint8_t kPoison = 0xA5;

struct Mem {
  explicit Mem(size_t n, uint8_t fill = kPoison)
      : bytes(n), p(static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) & ~size_t{4095}))) {
    std::memset(p, fill, n);
  }
  ~Mem() { std::free(p); }
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
  std::span<uint8_t> span() { return {p, bytes}; }
  // True when every byte of [from, bytes) still holds the poison.
  bool untouched_from(uint64_t from) const {
    for (uint64_t i = from; i < bytes; ++i) {
      if (p[i] != kPoison) return false;
    }
    return true;
  }
  size_t bytes;
  uint8_t* p;
};

// Records the extents asked for; zeroes them as a fresh mapping would be;
// fails while `fail` is set.
struct Backer {
  explicit Backer(Mem& m) : mem(m) {}
  Status operator()(uint64_t offset, uint64_t bytes) {
    if (fail) return exhausted("test: no room for " + std::to_string(bytes) + " bytes");
    if (!extents.empty()) {
      EXPECT_EQ(offset, extents.back().first + extents.back().second)
          << "extents must follow each other";
    }
    EXPECT_LE(offset + bytes, mem.bytes);
    std::memset(mem.p + offset, 0, bytes);
    extents.emplace_back(offset, bytes);
    return Status::ok();
  }
  uint64_t end() const {
    return extents.empty() ? 0 : extents.back().first + extents.back().second;
  }
  Mem& mem;
  bool fail = false;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
};

// A heap of 100-byte values over `m` past its first page, in extents of
// 64 KiB and up that `b` backs.
HeapOptions growing_options(Mem& m, Backer& b, const std::string& name) {
  HeapOptions o;
  o.name = name;
  o.value_size = 100;
  o.range_offset = 4096;
  o.range_bytes = m.bytes - 4096;
  o.min_extent_bytes = 64 * 1024;
  o.grow = [&b](uint64_t off, uint64_t n) { return b(off, n); };
  return o;
}

TEST(HeapGrowth, BacksGrowingExtentsBeforeHandingOutTheirSlots) {
  Mem m(64 << 20);
  Backer b(m);
  const HeapOptions o = growing_options(m, b, "grow/p0");
  auto h = RecordHeap::create(m.span(), o);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_TRUE(b.extents.empty()) << "nothing is backed before the first slot";
  const uint64_t slot = (*h)->slot_bytes();
  for (int i = 0; i < 50000; ++i) {
    auto g = (*h)->allocate();
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    ASSERT_GE(g->offset, o.range_offset);
    ASSERT_LE(g->offset + slot, b.end()) << "slot " << i << " handed out before it was backed";
    std::memset(m.p + g->offset, 0x11, slot);  // the tenant writes it
  }
  // Extents: the first at least min_extent, each later one about an eighth
  // of what was backed before it, so there are few of them.
  ASSERT_GE(b.extents.size(), 2u);
  EXPECT_GE(b.extents[0].second, o.min_extent_bytes);
  uint64_t backed = 0;
  for (const auto& [off, n] : b.extents) {
    EXPECT_GE(n + 4096, std::max<uint64_t>(o.min_extent_bytes, backed / 8)) << off;
    backed += n;
  }
  EXPECT_LT(b.extents.size(), 40u);
  EXPECT_EQ((*h)->committed_bytes(), backed);
  EXPECT_LE(backed, 50000 * slot * 9 / 8 + 2 * o.min_extent_bytes + 4096);
  EXPECT_TRUE(m.untouched_from(o.range_offset + backed));
  EXPECT_EQ((*h)->stats().committed, backed / slot);
}

TEST(HeapGrowth, AFailedGrowFailsThatAllocationOnlyAndFreedSlotsNeedNone) {
  Mem m(8 << 20);
  Backer b(m);
  HeapOptions o;
  o.name = "grow/p1";
  o.value_size = 40;
  o.range_offset = 0;
  o.range_bytes = m.bytes;
  o.grow = [&b](uint64_t off, uint64_t n) { return b(off, n); };
  auto h = RecordHeap::create(m.span(), o);
  ASSERT_TRUE(h.is_ok());
  std::vector<uint64_t> offsets;
  while (b.extents.size() < 2) {
    auto g = (*h)->allocate();
    ASSERT_TRUE(g.is_ok());
    offsets.push_back(g->offset);
  }
  offsets.pop_back();
  (*h)->release(offsets.back());  // one slot back on the free list
  // Use up the backed slots, then the next one needs a grow that fails.
  b.fail = true;
  Status failed = Status::ok();
  for (int i = 0; i < 1 << 20 && failed.is_ok(); ++i) failed = (*h)->allocate().status();
  EXPECT_EQ(failed.code(), Code::kResourceExhausted);
  EXPECT_NE(failed.message().find("test: no room"), std::string::npos) << failed.message();
  b.fail = false;
  auto g = (*h)->allocate();
  ASSERT_TRUE(g.is_ok()) << "the heap goes on once memory is there";
  EXPECT_GE(g->offset + (*h)->slot_bytes(), b.extents.back().first) << "a slot of the new extent";
  EXPECT_LE(g->offset + (*h)->slot_bytes(), b.end());
}

TEST(HeapGrowth, AHeapAtTheEndOfItsAddressSpaceSaysSo) {
  Mem m(1 << 20);
  Backer b(m);
  HeapOptions o;
  o.name = "small/p2";
  o.value_size = 40;
  o.range_bytes = 64 * record_slot_size(40);
  o.grow = [&b](uint64_t off, uint64_t n) { return b(off, n); };
  auto h = RecordHeap::create(m.span(), o);
  ASSERT_TRUE(h.is_ok());
  for (int i = 0; i < 64; ++i) ASSERT_TRUE((*h)->allocate().is_ok()) << i;
  Status full = (*h)->allocate().status();
  EXPECT_EQ(full.code(), Code::kResourceExhausted);
  EXPECT_NE(full.message().find("small/p2"), std::string::npos) << full.message();
  EXPECT_NE(full.message().find("address space"), std::string::npos) << full.message();
}

// Recovery reads the slots below recover_bytes only: a sealed record past
// it (a page that was never backed holds nothing in a real pool; here it
// holds one to prove it is not read) is not found, those below are.
TEST(HeapGrowth, RecoverReadsOnlyWhatWasBacked) {
  Mem m(1 << 20, 0);
  const uint32_t vs = 40;
  const uint64_t slot = record_slot_size(vs);
  auto put = [&](uint64_t index, uint64_t key) {
    std::vector<uint8_t> img(slot, 0);
    RecordHeader h{};
    h.version = 3;
    h.key = key;
    h.incarnation = 1;
    h.flags = kLive;
    std::memcpy(img.data(), &h, sizeof h);
    seal(img.data(), vs);
    std::memcpy(m.p + index * slot, img.data(), slot);
  };
  put(0, 10);
  put(5, 15);
  put(400, 410);  // past the backed bytes
  Backer b(m);
  HeapOptions o;
  o.name = "rec/p0";
  o.value_size = vs;
  o.range_bytes = m.bytes;
  o.recover_bytes = 64 * slot;
  std::vector<std::pair<uint64_t, uint64_t>> regrown;
  o.grow = [&](uint64_t off, uint64_t n) {
    regrown.emplace_back(off, n);
    return Status::ok();
  };
  HeapRecovery found;
  auto h = RecordHeap::recover(m.span(), o, &found);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  ASSERT_EQ(found.live.size(), 2u);
  EXPECT_EQ(found.live[0].key, 10u);
  EXPECT_EQ(found.live[1].key, 15u);
  ASSERT_EQ(regrown.size(), 1u) << "the slots up to the last one written are backed again";
  EXPECT_EQ(regrown[0], std::make_pair(uint64_t{0}, 6 * slot));
  // The next fresh slot follows the last one written.
  auto g = (*h)->allocate();
  ASSERT_TRUE(g.is_ok());
  EXPECT_LT(g->offset, 6 * slot) << "freed slots below the last written come first";
}

xstore::XTreeOptions tree_opts(uint32_t leaves, uint64_t offset) {
  xstore::XTreeOptions o;
  o.area.region = 1;
  o.area.leaf_offset = offset;
  o.area.fanout = 16;
  o.area.value_bytes = 16;
  o.area.leaf_capacity = leaves;
  return o;
}

TEST(XTreeGrowth, LeavesAreBackedInExtentsAsSplitsNeedThem) {
  const auto o0 = tree_opts(20000, 4096);
  Mem m(4096 + o0.area.bytes());
  Backer b(m);
  auto o = o0;
  o.grow = [&b](uint64_t off, uint64_t n) { return b(off, n); };
  auto t = xstore::XTree::create(m.p, m.bytes, o);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ASSERT_EQ(b.extents.size(), 1u) << "leaf 0's extent at create";
  std::map<uint64_t, uint64_t> ref;
  uint8_t v[16];
  for (uint64_t i = 0; i < 30000; ++i) {
    const uint64_t k = (i * 2654435761u) % 1000003;  // scattered: half-full leaves
    std::memcpy(v, &k, 8);
    std::memcpy(v + 8, &i, 8);
    ASSERT_EQ((*t)->insert(k, v, /*upsert=*/true), xstore::XStatus::kOk) << i;
    ref[k] = i;
  }
  const uint64_t used = (*t)->stats().leaves_used * o.area.leaf_size();
  EXPECT_GE((*t)->backed_bytes(), used);
  EXPECT_LE((*t)->backed_bytes(), used * 9 / 8 + 2 * 65536 + o.area.leaf_size());
  EXPECT_TRUE(m.untouched_from(b.end())) << "no leaf past the backed extents was touched";
  for (const auto& [k, i] : ref) {
    ASSERT_EQ((*t)->get(k, v), xstore::XStatus::kOk) << k;
    uint64_t got;
    std::memcpy(&got, v + 8, 8);
    ASSERT_EQ(got, i) << k;
  }
}

TEST(XTreeGrowth, AFailedGrowIsOutOfLeavesWithItsReason) {
  const auto o0 = tree_opts(5000, 0);
  Mem m(o0.area.bytes());
  Backer b(m);
  auto o = o0;
  o.grow = [&b](uint64_t off, uint64_t n) { return b(off, n); };
  auto t = xstore::XTree::create(m.p, m.bytes, o);
  ASSERT_TRUE(t.is_ok());
  uint8_t v[16] = {};
  b.fail = true;
  xstore::XStatus s = xstore::XStatus::kOk;
  uint64_t k = 0;
  for (; k < 100000 && s == xstore::XStatus::kOk; ++k) s = (*t)->insert(k * 7919 % 99991, v);
  EXPECT_EQ(s, xstore::XStatus::kOutOfLeaves);
  EXPECT_NE((*t)->grow_error().find("test: no room"), std::string::npos) << (*t)->grow_error();
  b.fail = false;
  EXPECT_EQ((*t)->insert(k * 7919 % 99991, v), xstore::XStatus::kOk) << "it goes on";
}

TEST(HashGrowth, OverflowBucketsAreBackedAsChainsGrow) {
  hash::HashLayout l;
  l.buckets = 4;
  l.overflow = 4000;
  l.value_size = 40;
  l.bucket_offset = 0;
  Mem buckets(l.area_bytes());
  Mem records(2 << 20, 0);
  Backer b(buckets);
  HeapOptions ho;
  ho.name = "h/p0";
  ho.value_size = 40;
  ho.range_bytes = records.bytes;
  auto heap = RecordHeap::create(records.span(), ho);
  ASSERT_TRUE(heap.is_ok());
  auto t = hash::HashTable::create(buckets.span(), records.span(), l, **heap, {},
                                   [&b](uint64_t off, uint64_t n) { return b(off, n); });
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ASSERT_EQ(b.extents.size(), 1u);
  EXPECT_EQ(b.extents[0], std::make_pair(uint64_t{0}, uint64_t{4} * hash::kBucketBytes))
      << "the heads only";
  std::vector<uint8_t> val(40), out(40);
  for (uint64_t k = 0; k < 3000; ++k) {
    std::memcpy(val.data(), &k, 8);
    ASSERT_TRUE((*t)->insert(k, val).is_ok()) << k;
  }
  EXPECT_GT((*t)->stats().overflow_used, 400u);
  EXPECT_GE((*t)->backed_bytes(), (4 + uint64_t{(*t)->stats().overflow_used}) * hash::kBucketBytes);
  EXPECT_EQ((*t)->backed_bytes(), b.end());
  EXPECT_TRUE(buckets.untouched_from(b.end()));
  for (uint64_t k = 0; k < 3000; ++k) {
    ASSERT_TRUE((*t)->get(k, out).is_ok()) << k;
    uint64_t got;
    std::memcpy(&got, out.data(), 8);
    ASSERT_EQ(got, k);
  }
}

TEST(GrowAhead, RunsTasksInOrderAndDrainWaitsForThem) {
  GrowAhead ahead;
  std::vector<int> ran;  // written by the thread only; read after drain()
  for (int i = 0; i < 100; ++i) ahead.post([&ran, i] { ran.push_back(i); });
  ahead.drain();
  ASSERT_EQ(ran.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[i], i);
  EXPECT_EQ(ahead.done(), 100u);
  ahead.drain();  // nothing queued: returns at once
}

HeapOptions ahead_options(Mem& m, Backer& b, GrowAhead* ahead) {
  HeapOptions o = growing_options(m, b, "ahead/p0");
  o.ahead = ahead;
  return o;
}

// An inserter that never outruns the thread (drain() after each insert)
// backs only the first extent itself; every later one is backed ahead,
// before a slot in it is needed.
TEST(HeapGrowth, AGrowAheadBacksEveryExtentAfterTheFirstBeforeItIsNeeded) {
  Mem m(64 << 20);
  Backer b(m);
  GrowAhead ahead;
  auto h = RecordHeap::create(m.span(), ahead_options(m, b, &ahead));
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  const uint64_t slot = (*h)->slot_bytes();
  for (int i = 0; i < 50000; ++i) {
    auto g = (*h)->allocate();
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    ASSERT_LE(g->offset + slot, b.end()) << "slot " << i << " handed out before it was backed";
    ahead.drain();
    // Backed ahead: more than the slot just handed out.
    ASSERT_GT(b.end(), g->offset + slot) << "slot " << i;
  }
  const HeapStats st = (*h)->stats();
  EXPECT_EQ(st.grown_inline, 1u) << "only the first extent is backed by an inserter";
  EXPECT_GE(st.grown_ahead, 10u);
  EXPECT_EQ(st.grown_inline + st.grown_ahead, b.extents.size());
  // Ahead by at most an extent and a half: what is backed beyond the slots
  // used stays under 19 % of it (plus an extent's page rounding).
  EXPECT_LE(b.end() - 4096 - 50000 * slot, (b.end() - 4096) * 3 / 16 + 4096);
  EXPECT_TRUE(m.untouched_from(b.end()));
}

// Without a GrowAhead the inserter backs every extent itself.
TEST(HeapGrowth, WithoutAGrowAheadTheInserterBacksEveryExtent) {
  Mem m(16 << 20);
  Backer b(m);
  auto h = RecordHeap::create(m.span(), ahead_options(m, b, nullptr));
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE((*h)->allocate().is_ok());
  const HeapStats st = (*h)->stats();
  EXPECT_EQ(st.grown_ahead, 0u);
  EXPECT_EQ(st.grown_inline, b.extents.size());
  EXPECT_GE(st.grown_inline, 5u);
}

// Four inserters and the GrowAhead thread: every slot handed out once and
// backed, grow() never called by two threads at once, extents in order.
TEST(HeapGrowth, ConcurrentInsertersAndTheGrowAheadBackEachExtentOnceInOrder) {
  Mem m(64 << 20);
  Backer b(m);
  GrowAhead ahead;
  std::atomic<int> in_grow{0};
  std::atomic<bool> overlapped{false};
  std::atomic<uint64_t> backed_end{0};
  HeapOptions o = ahead_options(m, b, &ahead);
  o.grow = [&](uint64_t off, uint64_t n) {
    if (in_grow.fetch_add(1) != 0) overlapped = true;
    Status st = b(off, n);
    backed_end.store(off + n, std::memory_order_release);
    in_grow.fetch_sub(1);
    return st;
  };
  auto h = RecordHeap::create(m.span(), o);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  const uint64_t slot = (*h)->slot_bytes();
  constexpr int kThreads = 4, kEach = 25000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::atomic<int> unbacked{0}, failed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto g = (*h)->allocate();
        if (!g.is_ok()) {
          ++failed;
          continue;
        }
        if (g->offset + slot > backed_end.load(std::memory_order_acquire)) ++unbacked;
        got[t].push_back(g->offset);
      }
    });
  }
  for (std::thread& th : ts) th.join();
  ahead.drain();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(unbacked.load(), 0);
  EXPECT_FALSE(overlapped.load()) << "two threads ran grow() at once";
  std::vector<uint64_t> all;
  for (const auto& v : got) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a slot handed out twice";
  EXPECT_EQ(all.size(), size_t{kThreads} * kEach);
  const HeapStats st = (*h)->stats();
  // Which thread backs each extent is the scheduler's choice: on a loaded
  // host the inserters can outrun the GrowAhead thread every time (CI saw
  // grown_ahead == 0). That the thread backs extents ahead of use is
  // AGrowAheadBacksEveryExtentAfterTheFirstBeforeItIsNeeded's to show; here each one is backed
  // exactly once, by one of them.
  EXPECT_EQ(st.grown_inline + st.grown_ahead, b.extents.size());
}

}  // namespace
}  // namespace drtmx::store
