// RecordHeap: capacity and exhaustion, slot placement, incarnations on
// reuse (read from the slot header, +1, never 0), LIFO reuse, bad releases
// ignored and counted, create() errors, and owner threads allocating and
// releasing concurrently while writing their slots like tenants.
#include "store/heap.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/record.h"

namespace drtmx::store {
namespace {

// Aligned memory standing in for a registered region.
struct Mem {
  explicit Mem(size_t n, uint8_t fill = 0)
      : bytes(n), p(static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) & ~size_t{4095}))) {
    std::memset(p, fill, n);
  }
  ~Mem() { std::free(p); }
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
  std::span<uint8_t> span() { return {p, bytes}; }
  size_t bytes;
  uint8_t* p;
};

HeapOptions opts(std::string name, uint32_t value_size, uint64_t range_offset,
                 uint64_t range_bytes) {
  HeapOptions o;
  o.name = std::move(name);
  o.value_size = value_size;
  o.range_offset = range_offset;
  o.range_bytes = range_bytes;
  return o;
}

std::unique_ptr<RecordHeap> make_heap(Mem& m, const HeapOptions& o) {
  auto r = RecordHeap::create(m.span(), o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return nullptr;
  return std::move(r).value();
}

// What a tenant does: writes the header (and here a value pattern).
void write_tenant(Mem& m, uint64_t offset, uint32_t incarnation, uint64_t key) {
  RecordHeader h{};
  h.version = 1;
  h.key = key;
  h.incarnation = incarnation;
  h.flags = kLive;
  std::memcpy(m.p + offset, &h, sizeof h);
}

void write_incarnation(Mem& m, uint64_t offset, uint32_t incarnation) {
  std::memcpy(m.p + offset + offsetof(RecordHeader, incarnation), &incarnation, sizeof incarnation);
}

uint32_t read_incarnation(const Mem& m, uint64_t offset) {
  uint32_t v;
  std::memcpy(&v, m.p + offset + offsetof(RecordHeader, incarnation), sizeof v);
  return v;
}

TEST(RecordHeap, IncarnationFieldIsAtByte32) {
  // The layout store/record.h documents (remote readers compute offsets
  // from it; a durable pool's format version pins it).
  EXPECT_EQ(offsetof(RecordHeader, incarnation), 32u);
}

TEST(RecordHeap, BytesForIsSlotsTimesSlotSize) {
  EXPECT_EQ(record_slot_size(100), 192u);
  EXPECT_EQ(RecordHeap::bytes_for(10, 100), 1920u);
  EXPECT_EQ(RecordHeap::bytes_for(0, 100), 0u);
  EXPECT_EQ(RecordHeap::bytes_for(3, 8), 3u * 64u);
  EXPECT_EQ(RecordHeap::bytes_for(7, 9), 7u * 128u);

  // A heap given exactly bytes_for(n, v) holds n slots.
  Mem m(RecordHeap::bytes_for(37, 300));
  auto heap = make_heap(m, opts("t/p0", 300, 0, RecordHeap::bytes_for(37, 300)));
  ASSERT_NE(heap, nullptr);
  EXPECT_EQ(heap->slot_bytes(), record_slot_size(300));
  EXPECT_EQ(heap->stats().capacity, 37u);
}

TEST(RecordHeap, CapacityIsFloorAndExhaustionNamesHeap) {
  const uint64_t slot = record_slot_size(100);  // 192
  const uint64_t range = slot * 10 + slot - 1;  // 10 slots and a partial one
  Mem m(range);
  auto heap = make_heap(m, opts("customer/p3", 100, 0, range));
  ASSERT_NE(heap, nullptr);
  EXPECT_EQ(heap->slot_bytes(), slot);
  HeapStats s = heap->stats();
  EXPECT_EQ(s.capacity, 10u);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.never_used, 10u);
  EXPECT_EQ(s.reused, 0u);

  for (int i = 0; i < 10; ++i) {
    auto g = heap->allocate();
    ASSERT_TRUE(g.is_ok()) << "slot " << i << ": " << g.status().to_string();
  }
  auto full = heap->allocate();
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.status().code(), Code::kResourceExhausted);
  const std::string& msg = full.status().message();
  EXPECT_NE(msg.find("customer/p3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("10 slots"), std::string::npos) << msg;
  EXPECT_NE(msg.find("192"), std::string::npos) << msg;

  // Still exhausted on retry; stats unchanged by failures.
  EXPECT_EQ(heap->allocate().status().code(), Code::kResourceExhausted);
  s = heap->stats();
  EXPECT_EQ(s.in_use, 10u);
  EXPECT_EQ(s.never_used, 0u);
  EXPECT_EQ(s.reused, 0u);
}

TEST(RecordHeap, OffsetsAlignedInsideRangeDistinctAndFreshIncarnationOne) {
  const uint32_t value_size = 77;
  const uint64_t slot = record_slot_size(value_size);
  const uint64_t range_offset = 4096 + 640;
  const uint64_t range_bytes = slot * 50 + 13;
  // Memory before and after the range that the heap must never hand out.
  Mem m(range_offset + range_bytes + 4096);
  auto heap = make_heap(m, opts("orders/p1", value_size, range_offset, range_bytes));
  ASSERT_NE(heap, nullptr);
  ASSERT_EQ(heap->stats().capacity, 50u);

  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 50; ++i) {
    auto g = heap->allocate();
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    const uint64_t off = g->offset;
    EXPECT_EQ(off % 64, 0u) << off;
    EXPECT_GE(off, range_offset);
    EXPECT_LE(off + slot, range_offset + range_bytes) << off;
    EXPECT_EQ((off - range_offset) % slot, 0u) << off;
    EXPECT_EQ(off, range_offset + i * slot) << "fresh slots are bumped in order";
    EXPECT_EQ(g->incarnation, 1u);
    EXPECT_TRUE(seen.insert(off).second) << "offset " << off << " handed out twice";
  }
  EXPECT_EQ(seen.size(), 50u);
}

TEST(RecordHeap, FreshSlotGetsOneWhateverTheMemoryHolds) {
  const uint64_t slot = record_slot_size(40);
  Mem m(slot * 4, 0xAB);  // garbage, including a non-zero "incarnation"
  auto heap = make_heap(m, opts("garbage", 40, 0, slot * 4));
  ASSERT_NE(heap, nullptr);
  for (int i = 0; i < 4; ++i) {
    auto g = heap->allocate();
    ASSERT_TRUE(g.is_ok());
    EXPECT_EQ(g->incarnation, 1u);
  }
}

TEST(RecordHeap, HeapNeverWritesSlotMemory) {
  const uint64_t slot = record_slot_size(8);
  const size_t n = slot * 8;
  Mem m(n, 0x5C);
  std::vector<uint8_t> before(m.p, m.p + n);
  auto heap = make_heap(m, opts("ro", 8, 0, n));
  ASSERT_NE(heap, nullptr);
  std::vector<uint64_t> held;
  for (int i = 0; i < 8; ++i) held.push_back(heap->allocate()->offset);
  for (uint64_t off : held) heap->release(off);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(heap->allocate().is_ok());
  heap->release(3);  // bad
  EXPECT_EQ(std::memcmp(before.data(), m.p, n), 0);
}

TEST(RecordHeap, ReuseGetsHeaderIncarnationPlusOne) {
  const uint64_t slot = record_slot_size(32);
  Mem m(slot * 4);
  auto heap = make_heap(m, opts("stock/p0", 32, 0, slot * 4));
  ASSERT_NE(heap, nullptr);

  auto a = heap->allocate();
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->incarnation, 1u);
  write_tenant(m, a->offset, a->incarnation, 42);

  // The tenant's header says 7 (e.g. the slot lived through earlier heaps).
  write_incarnation(m, a->offset, 7);
  heap->release(a->offset);
  auto b = heap->allocate();
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->offset, a->offset);
  EXPECT_EQ(b->incarnation, 8u);
  EXPECT_EQ(heap->stats().reused, 1u);

  // Wrap-around skips 0.
  write_incarnation(m, b->offset, 0xFFFFFFFFu);
  heap->release(b->offset);
  auto c = heap->allocate();
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->offset, a->offset);
  EXPECT_EQ(c->incarnation, 1u);
  EXPECT_NE(c->incarnation, 0u);

  // 0xFFFFFFFE -> 0xFFFFFFFF (no skip needed there).
  write_incarnation(m, c->offset, 0xFFFFFFFEu);
  heap->release(c->offset);
  auto d = heap->allocate();
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->incarnation, 0xFFFFFFFFu);

  // A header of 0 (never written by a tenant) -> 1.
  write_incarnation(m, d->offset, 0);
  heap->release(d->offset);
  auto e = heap->allocate();
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->incarnation, 1u);
  EXPECT_EQ(heap->stats().reused, 4u);
  EXPECT_EQ(heap->stats().in_use, 1u);
  EXPECT_EQ(heap->stats().never_used, 3u);
}

TEST(RecordHeap, TenantsWritingTheirGrantSeeIncarnationsCount) {
  const uint64_t slot = record_slot_size(16);
  Mem m(slot);
  auto heap = make_heap(m, opts("one", 16, 0, slot));
  ASSERT_NE(heap, nullptr);
  uint32_t last = 0;
  for (uint32_t i = 1; i <= 1000; ++i) {
    auto g = heap->allocate();
    ASSERT_TRUE(g.is_ok()) << i;
    EXPECT_EQ(g->offset, 0u);
    EXPECT_EQ(g->incarnation, i);
    EXPECT_NE(g->incarnation, last) << "a reused slot must change incarnation";
    last = g->incarnation;
    write_tenant(m, g->offset, g->incarnation, i);
    EXPECT_EQ(read_incarnation(m, g->offset), i);
    heap->release(g->offset);
  }
  EXPECT_EQ(heap->stats().reused, 999u);
  EXPECT_EQ(heap->stats().in_use, 0u);
}

TEST(RecordHeap, FreeListIsLifo) {
  const uint64_t slot = record_slot_size(24);
  Mem m(slot * 8);
  auto heap = make_heap(m, opts("lifo", 24, 0, slot * 8));
  ASSERT_NE(heap, nullptr);
  uint64_t a = heap->allocate()->offset;
  uint64_t b = heap->allocate()->offset;
  uint64_t c = heap->allocate()->offset;
  heap->release(a);
  heap->release(c);
  heap->release(b);
  EXPECT_EQ(heap->allocate()->offset, b);
  EXPECT_EQ(heap->allocate()->offset, c);
  EXPECT_EQ(heap->allocate()->offset, a);
  // Free list empty: the bump pointer continues after c.
  EXPECT_EQ(heap->allocate()->offset, 3 * slot);
  HeapStats s = heap->stats();
  EXPECT_EQ(s.reused, 3u);
  EXPECT_EQ(s.in_use, 4u);
  EXPECT_EQ(s.never_used, 4u);
}

TEST(RecordHeap, BadReleasesIgnoredAndCounted) {
  const uint64_t slot = record_slot_size(24);  // 64
  const uint64_t range_offset = 1024;
  const uint64_t cap = 6;
  Mem m(range_offset + slot * cap + 512);
  auto heap = make_heap(m, opts("bad/p9", 24, range_offset, slot * cap));
  ASSERT_NE(heap, nullptr);

  uint64_t a = heap->allocate()->offset;
  uint64_t b = heap->allocate()->offset;
  heap->release(a);
  EXPECT_EQ(heap->bad_releases(), 0u);

  heap->release(a);  // double release
  EXPECT_EQ(heap->bad_releases(), 1u);
  heap->release(b + 8);  // not on a slot boundary
  heap->release(b + 1);
  EXPECT_EQ(heap->bad_releases(), 3u);
  heap->release(0);                          // before the range
  heap->release(range_offset - slot);        // before the range, 64-aligned
  heap->release(range_offset + slot * cap);  // one past the end
  heap->release(UINT64_MAX);
  heap->release(UINT64_MAX - 63);
  EXPECT_EQ(heap->bad_releases(), 8u);
  heap->release(range_offset + slot * 4);  // inside, never handed out
  EXPECT_EQ(heap->bad_releases(), 9u);

  HeapStats s = heap->stats();
  EXPECT_EQ(s.in_use, 1u);  // only b
  EXPECT_EQ(s.never_used, cap - 2);

  // The free list holds a once: the whole heap is handed out exactly once.
  std::set<uint64_t> seen{b};
  for (uint64_t i = 0; i < cap - 1; ++i) {
    auto g = heap->allocate();
    ASSERT_TRUE(g.is_ok()) << i << ": " << g.status().to_string();
    EXPECT_TRUE(seen.insert(g->offset).second) << "offset " << g->offset << " handed out twice";
  }
  EXPECT_EQ(seen.size(), cap);
  EXPECT_EQ(heap->allocate().status().code(), Code::kResourceExhausted);
  s = heap->stats();
  EXPECT_EQ(s.in_use, cap);
  EXPECT_EQ(s.reused, 1u);
  EXPECT_EQ(heap->bad_releases(), 9u);

  // Releasing after the bad ones still works normally.
  heap->release(b);
  EXPECT_EQ(heap->allocate()->offset, b);
  EXPECT_EQ(heap->bad_releases(), 9u);
}

void expect_invalid(std::span<uint8_t> region, const HeapOptions& o, const char* field) {
  auto r = RecordHeap::create(region, o);
  ASSERT_FALSE(r.is_ok()) << "expected an error mentioning " << field;
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().to_string();
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find(o.name), std::string::npos) << msg;
  EXPECT_NE(msg.find(field), std::string::npos) << msg;
}

TEST(RecordHeap, CreateRejectsBadOptions) {
  Mem m(8192);
  const uint64_t slot = record_slot_size(100);
  // Range outside the region.
  expect_invalid(m.span(), opts("h/outside", 100, 4096, 8192), "range");
  expect_invalid(m.span(), opts("h/past", 100, 8192 + 64, 64 * 4), "range");
  expect_invalid(m.span(), opts("h/end", 100, 0, 8193), "range");
  expect_invalid(m.span(), opts("h/wrap", 100, 64, UINT64_MAX - 32), "range");
  expect_invalid(m.span(), opts("h/wrap2", 100, UINT64_MAX & ~uint64_t{63}, 1024), "range");
  // Misaligned offset.
  expect_invalid(m.span(), opts("h/misaligned", 100, 32, 2048), "range_offset");
  expect_invalid(m.span(), opts("h/misaligned1", 100, 1, 2048), "range_offset");
  // value_size 0.
  expect_invalid(m.span(), opts("h/zero", 0, 0, 2048), "value_size");
  // Range too small for a single slot.
  expect_invalid(m.span(), opts("h/small", 100, 0, slot - 1), "range_bytes");
  expect_invalid(m.span(), opts("h/empty", 100, 0, 0), "range_bytes");
  // An empty region holds nothing.
  expect_invalid(std::span<uint8_t>(), opts("h/noregion", 100, 0, slot), "range");

  // Boundary cases that are fine: the range ends exactly at the region's end;
  // exactly one slot.
  auto ok = RecordHeap::create(m.span(), opts("h/ok", 100, 8192 - slot, slot));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)->stats().capacity, 1u);
  EXPECT_EQ((*ok)->options().name, "h/ok");
  EXPECT_EQ((*ok)->allocate()->offset, 8192 - slot);
}

// Owner threads allocate and release at random. Each writes its tag into
// the header and every value byte of the slots it holds and checks, on
// every release and at the end, that nobody else wrote them; each checks a
// grant's incarnation against the header its previous tenant left.
TEST(RecordHeap, ConcurrentAllocateReleaseKeepsSlotsExclusive) {
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 50'000;  // 200 000 in all
  constexpr uint32_t kValue = 24;
  constexpr uint64_t kCap = 96;  // small: threads contend and hit exhaustion
  const uint64_t slot = record_slot_size(kValue);
  const uint64_t range_offset = 640;
  Mem m(range_offset + slot * kCap + 64);
  auto heap = make_heap(m, opts("concurrent/p0", kValue, range_offset, slot * kCap));
  ASSERT_NE(heap, nullptr);

  struct Held {
    uint64_t offset;
    uint32_t incarnation;
  };
  struct ThreadResult {
    std::vector<Held> held;
    uint64_t allocs = 0, releases = 0, exhausted = 0, failures = 0;
    std::string first_failure;
  };
  std::vector<ThreadResult> results(kThreads);

  auto check = [&](ThreadResult& r, const Held& h, uint8_t tag) {
    RecordHeader hdr;
    std::memcpy(&hdr, m.p + h.offset, sizeof hdr);
    bool ok = hdr.key == tag && hdr.incarnation == h.incarnation && hdr.flags == kLive;
    for (uint32_t i = 0; ok && i < kValue; ++i) ok = m.p[h.offset + sizeof hdr + i] == tag;
    if (!ok) {
      if (r.failures++ == 0) {
        r.first_failure = "slot " + std::to_string(h.offset) + " of thread " + std::to_string(tag) +
                          " overwritten (key " + std::to_string(hdr.key) + ", incarnation " +
                          std::to_string(hdr.incarnation) + ")";
      }
    }
  };

  auto worker = [&](int t) {
    ThreadResult& r = results[t];
    const auto tag = static_cast<uint8_t>(t + 1);
    std::mt19937_64 rng(0x5eed0000u + static_cast<uint64_t>(t));
    for (int op = 0; op < kOpsPerThread; ++op) {
      const bool do_alloc = r.held.empty() || (rng() % 100) < 52;
      if (do_alloc) {
        auto g = heap->allocate();
        if (!g.is_ok()) {
          if (g.status().code() != Code::kResourceExhausted && r.failures++ == 0) {
            r.first_failure = "allocate: " + g.status().to_string();
          }
          ++r.exhausted;
          continue;
        }
        ++r.allocs;
        // The previous tenant's header is intact until we write ours.
        uint32_t prev = read_incarnation(m, g->offset);
        uint32_t expect = prev + 1 == 0 ? 1 : prev + 1;
        if ((g->incarnation != expect || g->incarnation == 0 || g->offset % 64 != 0 ||
             g->offset < range_offset || g->offset + slot > range_offset + slot * kCap) &&
            r.failures++ == 0) {
          r.first_failure = "bad grant offset " + std::to_string(g->offset) + " incarnation " +
                            std::to_string(g->incarnation) + " after " + std::to_string(prev);
        }
        write_tenant(m, g->offset, g->incarnation, tag);
        std::memset(m.p + g->offset + sizeof(RecordHeader), tag, kValue);
        r.held.push_back({g->offset, g->incarnation});
      } else {
        const size_t i = rng() % r.held.size();
        Held h = r.held[i];
        r.held[i] = r.held.back();
        r.held.pop_back();
        check(r, h, tag);
        // Like a delete: flags kDeleted, then release.
        uint32_t deleted = kDeleted;
        std::memcpy(m.p + h.offset + offsetof(RecordHeader, flags), &deleted, sizeof deleted);
        heap->release(h.offset);
        ++r.releases;
      }
    }
    for (const Held& h : r.held) check(r, h, tag);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();

  uint64_t held = 0, allocs = 0, releases = 0, exhausted = 0;
  std::set<uint64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    const ThreadResult& r = results[t];
    EXPECT_EQ(r.failures, 0u) << "thread " << t << ": " << r.first_failure;
    held += r.held.size();
    allocs += r.allocs;
    releases += r.releases;
    exhausted += r.exhausted;
    for (const Held& h : r.held) {
      EXPECT_TRUE(all.insert(h.offset).second) << "slot " << h.offset << " held twice";
    }
  }
  EXPECT_EQ(allocs + releases + exhausted, uint64_t{kThreads} * kOpsPerThread);
  EXPECT_GT(exhausted, 0u) << "the test should reach exhaustion";
  EXPECT_GT(releases, 0u);

  HeapStats s = heap->stats();
  EXPECT_EQ(s.capacity, kCap);
  EXPECT_EQ(s.in_use, held);
  EXPECT_EQ(s.in_use, allocs - releases);
  EXPECT_EQ(s.reused, allocs - (kCap - s.never_used));
  EXPECT_EQ(heap->bad_releases(), 0u);

  // Everything released: the heap is whole again and hands out each slot once.
  for (const ThreadResult& r : results) {
    for (const Held& h : r.held) heap->release(h.offset);
  }
  EXPECT_EQ(heap->stats().in_use, 0u);
  std::set<uint64_t> again;
  for (uint64_t i = 0; i < kCap; ++i) {
    auto g = heap->allocate();
    ASSERT_TRUE(g.is_ok()) << i << ": " << g.status().to_string();
    EXPECT_TRUE(again.insert(g->offset).second);
  }
  EXPECT_EQ(heap->allocate().status().code(), Code::kResourceExhausted);
  EXPECT_EQ(heap->bad_releases(), 0u);
}

// A restart: the slots of a durable copy decide what the heap holds.
TEST(RecordHeapRecover, KeepsSealedCommittedRecordsOncePerKeyAndFreesTheRest) {
  constexpr uint32_t kValue = 8;
  const uint64_t slot = record_slot_size(kValue);
  Mem m(64 * slot);
  auto write = [&](uint64_t i, uint64_t key, uint64_t version, uint32_t flags, uint64_t lock,
                   bool torn, uint64_t wts = 0) {
    uint8_t* rec = m.p + i * slot;
    RecordHeader h{};
    h.lock = lock;
    h.version = version;
    h.key = key;
    h.incarnation = 7;
    h.flags = flags;
    h.wts = wts;
    std::memcpy(rec, &h, sizeof h);
    std::memcpy(rec + kValueOffset, &key, 8);
    seal(rec, kValue);
    if (torn) rec[kValueOffset] ^= 1;
  };
  write(0, 1, 3, kLive, 0, false);       // superseded by slot 4
  write(1, 2, 0, kLive, 99, false);      // a reservation never committed
  write(2, 3, 2, kLive, 0, true);        // torn
  write(3, 4, 5, kDeleted, 0, false);    // deleted
  write(4, 1, 4, kLive, 0, false, 900);  // key 1's newest
  write(5, 6, 1, kLive, 1234, false);    // committed, locked when the crash came
  HeapRecovery found;
  auto heap = RecordHeap::recover(m.span(), opts("t/p0", kValue, 0, 64 * slot), &found);
  ASSERT_TRUE(heap.is_ok()) << heap.status().to_string();
  ASSERT_EQ(found.live.size(), 2u);
  std::set<std::pair<uint64_t, uint64_t>> live;
  for (const LiveSlot& l : found.live) live.insert({l.key, l.offset});
  EXPECT_EQ(live, (std::set<std::pair<uint64_t, uint64_t>>{{1, 4 * slot}, {6, 5 * slot}}));
  EXPECT_EQ(found.max_version, 5u);
  EXPECT_EQ(found.max_wts, 900u);
  EXPECT_EQ(found.torn, 1u);
  EXPECT_EQ(found.uncommitted, 1u);
  EXPECT_EQ(found.deleted, 1u);
  EXPECT_EQ(found.duplicates, 1u);
  RecordHeader h6;
  std::memcpy(&h6, m.p + 5 * slot, sizeof h6);
  EXPECT_EQ(h6.lock, 0u) << "a kept record stays locked";
  const HeapStats st = (*heap)->stats();
  EXPECT_EQ(st.in_use, 2u);
  EXPECT_EQ(st.never_used, 64u - 6);
  // The freed slots come back first (lowest first), incarnation bumped.
  std::set<uint64_t> reused;
  for (int i = 0; i < 4; ++i) {
    auto g = (*heap)->allocate();
    ASSERT_TRUE(g.is_ok());
    reused.insert(g->offset / slot);
    if (g->offset / slot != 2) {
      EXPECT_EQ(g->incarnation, 8u);  // (slot 2's header is torn)
    }
  }
  EXPECT_EQ(reused, (std::set<uint64_t>{0, 1, 2, 3}));
  auto fresh = (*heap)->allocate();
  ASSERT_TRUE(fresh.is_ok());
  EXPECT_EQ(fresh->offset, 6 * slot);
}

}  // namespace
}  // namespace drtmx::store
