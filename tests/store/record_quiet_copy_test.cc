// Quiet copies (store/record_io.h) under fire: writer threads keep changing
// records by the writer protocols of store/record.h — a locked rewrite
// (CAS the lock word, store the body with version + 1 and a fresh seal,
// unlock), and a re-tenant of a slot without the lock, as an insert into a
// free slot does (a new incarnation, header stored before the value) —
// while reader threads copy the slots with copy_quiet(). A copy it calls
// quiet is trusted without the seal, so every quiet copy is checked here
// the expensive way: its seal must verify, and its value, derived from
// (key, incarnation, version) with a checksum of its own, must match. A
// reader expects the identity a lookup would have found (the incarnation
// last published); a quiet copy of another one is "moved", as in the
// engine's readers.
//
// The harness can fail: run with a reader that calls every plain copy
// quiet (no checks), it must find torn copies — the writers really race
// the readers — and the quiet reader must find none while refusing some
// copies (it saw writers at work).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <thread>
#include <vector>

#include "store/record.h"
#include "store/record_io.h"
#include "store/word_copy.h"

namespace drtmx::store {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kValueSize = 240, kValueWords = kValueSize / 8;
constexpr size_t kSlot = record_slot_size(kValueSize);
constexpr size_t kSlots = 4;  // few slots: readers and writers meet often
static_assert(kValueSize % 8 == 0);

uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 31)) * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 29)) * 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}

uint64_t key_of(size_t slot) {
  return 0x7100 + slot;
}

// The value of (key, incarnation, version): word 0 a checksum of the rest.
void fill_value(uint8_t* value, uint64_t key, uint32_t incarnation, uint64_t version) {
  uint64_t w[kValueWords];
  uint64_t sum = mix(key ^ (uint64_t{incarnation} << 40) ^ version);
  for (size_t i = 1; i < kValueWords; ++i) {
    w[i] = mix(sum + i);
    sum = mix(sum ^ w[i]);
  }
  w[0] = sum;
  std::memcpy(value, w, kValueSize);
}

bool value_matches(const uint8_t* value, uint64_t key, uint32_t incarnation, uint64_t version) {
  uint8_t want[kValueSize];
  fill_value(want, key, incarnation, version);
  return std::memcmp(want, value, kValueSize) == 0;
}

struct Area {
  alignas(64) uint8_t bytes[kSlots * kSlot] = {};
  uint8_t* slot(size_t i) { return bytes + i * kSlot; }
};

// Stores the body of (key, incarnation, version): ascending (header first,
// as store_words does) or, `backwards`, value first and header last — as a
// fabric WRITE may land its words under the writer's lock (a memcpy's
// order is its own).
void write_image(uint8_t* rec, uint64_t key, uint32_t incarnation, uint64_t version,
                 bool backwards = false) {
  RecordImage img(kSlot);
  RecordHeader* h = img.header();
  h->version = version;
  h->key = key;
  h->incarnation = incarnation;
  h->flags = kLive;
  h->wts = version;
  fill_value(img.value(), key, incarnation, version);
  seal(img.data(), kValueSize);
  if (!backwards) {
    img.store_body(rec);
    return;
  }
  const auto* w = static_cast<const uint64_t*>(img.data());
  auto* d = reinterpret_cast<uint64_t*>(rec);
  for (size_t i = kSlot / 8; i-- > kBodyOffset / 8;) {
    std::atomic_ref<uint64_t>(d[i]).store(w[i], std::memory_order_release);
  }
}

// Slots 0 and 1 take locked rewrites (version + 1 under the lock word,
// every other one stored backwards);
// slots 2 and 3 are re-tenanted without the lock, by one writer each time
// (as the heap grants a free slot to one inserter): a new incarnation is
// stored, then published (release), as an index publishes an insert.
constexpr size_t kLockedSlots = 2;

struct Published {
  std::atomic<uint32_t> incarnation[kSlots];
};

void locked_writer(Area* a, int id, const std::atomic<bool>* stop, std::atomic<uint64_t>* changes) {
  const uint64_t lock_word = 0x100 + static_cast<uint64_t>(id);
  for (uint64_t n = 0; !stop->load(std::memory_order_relaxed); ++n) {
    uint8_t* rec = a->slot((n + static_cast<uint64_t>(id)) % kLockedSlots);
    auto lock = lock_of(rec);
    uint64_t free_word = 0;
    if (!lock.compare_exchange_strong(free_word, lock_word, std::memory_order_seq_cst)) continue;
    RecordHeader h{};
    load_words(&h, rec, sizeof h);
    write_image(rec, h.key, h.incarnation, h.version + 1, /*backwards=*/n % 2 == 1);
    lock.store(0, std::memory_order_release);
    changes->fetch_add(1, std::memory_order_relaxed);
  }
}

void retenant_writer(Area* a, Published* pub, const std::atomic<bool>* stop,
                     std::atomic<uint64_t>* changes) {
  for (uint64_t n = 0; !stop->load(std::memory_order_relaxed); ++n) {
    const size_t s = kLockedSlots + n % (kSlots - kLockedSlots);
    const uint32_t next = pub->incarnation[s].load(std::memory_order_relaxed) + 1;
    write_image(a->slot(s), key_of(s), next, 1);
    pub->incarnation[s].store(next, std::memory_order_release);
    changes->fetch_add(1, std::memory_order_relaxed);
  }
}

struct ReadCounts {
  uint64_t trusted = 0;  // copies the reader accepted without the seal
  uint64_t refused = 0;  // copies it refused (a writer was at work)
  uint64_t moved = 0;    // quiet, but another incarnation than looked up
  uint64_t torn = 0;     // accepted copies that are not one writer's image
};

// Parts of the value the partial readers copy (get_fields' field words):
// the first word (in the header's cache line), a few in the middle, and
// the last.
constexpr SlotPart kParts[] = {slot_part(0, 8, kSlot), slot_part(80, 24, kSlot),
                               slot_part(kValueSize - 8, 8, kSlot)};

// Whether the part of `copy` holds the words of the version its header
// names.
bool part_matches(const uint8_t* copy, SlotPart part, uint64_t key) {
  RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  uint8_t want[kSlot];
  fill_value(want + kValueOffset, key, h.incarnation, h.version);
  return std::memcmp(want + part.from, copy + part.from, part.to - part.from) == 0;
}

// `trust_all`: the broken reader that calls every plain copy quiet.
// `parts`: copy only the header and one of kParts (in turn) of each slot.
ReadCounts run(bool trust_all, std::chrono::milliseconds budget, uint64_t max_reads,
               bool parts = false) {
  Area a;
  Published pub;
  for (size_t s = 0; s < kSlots; ++s) {
    write_image(a.slot(s), key_of(s), 1, 1);
    pub.incarnation[s].store(1);
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> changes{0};
  std::vector<std::thread> writers;
  writers.emplace_back(locked_writer, &a, 0, &stop, &changes);
  writers.emplace_back(retenant_writer, &a, &pub, &stop, &changes);
  ReadCounts c;
  const auto end = Clock::now() + budget;
  alignas(64) uint8_t copy[kSlot];
  for (uint64_t i = 0; i < max_reads && (i % 1024 != 0 || Clock::now() < end); ++i) {
    const size_t s = i % kSlots;
    // The identity a lookup found (the index's publication).
    const uint32_t inc = pub.incarnation[s].load(std::memory_order_acquire);
    const SlotPart part = parts ? kParts[(i / kSlots) % std::size(kParts)] : SlotPart{};
    bool trusted;
    if (trust_all && parts) {
      load_words(copy, a.slot(s), kValueOffset);
      load_words(copy + part.from, a.slot(s) + part.from, part.to - part.from);
      trusted = true;
    } else if (trust_all) {
      load_words(copy, a.slot(s), kSlot);
      trusted = true;
    } else {
      trusted = copy_quiet(copy, a.slot(s), kSlot, part);
    }
    if (!trusted) {
      ++c.refused;
      continue;
    }
    if (verify_quiet(copy, key_of(s), inc) != RecordCheck::kOk) {
      ++c.moved;  // re-tenanted since the lookup: looked up again
      continue;
    }
    ++c.trusted;
    if (parts) {
      if (!part_matches(copy, part, key_of(s))) ++c.torn;
      continue;
    }
    RecordHeader h;
    std::memcpy(&h, copy, sizeof h);
    const bool whole =
        verify(copy, kValueSize) == RecordCheck::kOk &&
        value_matches(copy + sizeof(RecordHeader), key_of(s), h.incarnation, h.version);
    if (!whole) ++c.torn;
  }
  stop.store(true);
  for (auto& t : writers) t.join();
  EXPECT_GT(changes.load(), 1000u) << "the writers barely ran";
  return c;
}

TEST(RecordQuietCopy, AQuietCopyIsAlwaysOneWritersWholeImage) {
  const ReadCounts c = run(false, std::chrono::milliseconds(4000), 20'000'000);
  EXPECT_EQ(c.torn, 0u) << c.torn << " copies called quiet were torn (of " << c.trusted << ")";
  EXPECT_GT(c.trusted, 10'000u);
  EXPECT_GT(c.refused, 0u) << "no copy met a writer: the test did not race";
}

TEST(RecordQuietCopy, TheHarnessCatchesCopiesTrustedWithoutTheCheck) {
  // Copies trusted with no check at all must be found torn: the writers
  // race the reader, and the checks above would see a torn quiet copy.
  const ReadCounts c = run(true, std::chrono::milliseconds(4000), 20'000'000);
  EXPECT_GT(c.torn, 0u) << "no torn copy in " << c.trusted << " unchecked copies";
}

// get_fields' copies: the header and a few words. A quiet one holds the
// words of the version its header names.
TEST(RecordQuietCopy, AQuietPartIsTheHeadersVersionsPart) {
  const ReadCounts c = run(false, std::chrono::milliseconds(3000), 20'000'000, true);
  EXPECT_EQ(c.torn, 0u) << c.torn << " parts called quiet were torn (of " << c.trusted << ")";
  EXPECT_GT(c.trusted, 10'000u);
  EXPECT_GT(c.refused, 0u) << "no copy met a writer: the test did not race";
}

TEST(RecordQuietCopy, TheHarnessCatchesPartsTrustedWithoutTheCheck) {
  const ReadCounts c = run(true, std::chrono::milliseconds(3000), 20'000'000, true);
  EXPECT_GT(c.torn, 0u) << "no torn part in " << c.trusted << " unchecked copies";
}

TEST(RecordQuietCopy, SlotPartsCoverTheFieldsWords) {
  // A 2-byte field at value offset 6 (TPC-C's S_QUANTITY): the value's
  // first word, which shares the header's cache line.
  EXPECT_EQ(slot_part(6, 2, 384).from, kValueOffset);
  EXPECT_EQ(slot_part(6, 2, 384).to, kValueOffset + 8);
  // Across a word boundary: both words.
  EXPECT_EQ(slot_part(6, 4, 384).to, kValueOffset + 16);
  // Never past the slot.
  EXPECT_EQ(slot_part(300, 28, 384).to, 384u);
  EXPECT_FALSE(slot_part(0, 1, 64).whole());
}

TEST(RecordQuietCopy, ALockedRecordIsNeverQuiet) {
  Area a;
  write_image(a.slot(0), key_of(0), 1, 5);
  alignas(64) uint8_t copy[kSlot];
  ASSERT_TRUE(copy_quiet(copy, a.slot(0), kSlot));
  EXPECT_EQ(verify_quiet(copy, key_of(0), 1), RecordCheck::kOk);
  EXPECT_EQ(verify_quiet(copy, key_of(0), 2), RecordCheck::kWrongIncarnation);
  EXPECT_EQ(verify_quiet(copy, key_of(1), 1), RecordCheck::kWrongKey);
  lock_of(a.slot(0)).store(0x77);
  EXPECT_FALSE(copy_quiet(copy, a.slot(0), kSlot));
  // The copy is made all the same (the caller verifies its seal).
  EXPECT_EQ(verify(copy, kValueSize, key_of(0), 1), RecordCheck::kOk);
}

TEST(RecordQuietCopy, EmptyAndDeletedSlotsAnswerAsVerifyDoes) {
  Area a;
  alignas(64) uint8_t copy[kSlot];
  ASSERT_TRUE(copy_quiet(copy, a.slot(1), kSlot));
  EXPECT_EQ(verify_quiet(copy, key_of(1), 1), RecordCheck::kEmpty);
  EXPECT_EQ(verify(copy, kValueSize, key_of(1), 1), RecordCheck::kEmpty);
  RecordImage img(kSlot);
  img.header()->version = 3;
  img.header()->key = key_of(1);
  img.header()->incarnation = 4;
  img.header()->flags = kDeleted;
  seal(img.data(), kValueSize);
  img.store_body(a.slot(1));
  ASSERT_TRUE(copy_quiet(copy, a.slot(1), kSlot));
  EXPECT_EQ(verify_quiet(copy, key_of(1), 4), RecordCheck::kDeleted);
  EXPECT_EQ(verify(copy, kValueSize, key_of(1), 4), RecordCheck::kDeleted);
}

}  // namespace
}  // namespace drtmx::store
