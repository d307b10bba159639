// The record seal: any mix of two writes' bytes is detected, whatever the
// copy order; identity checks tell stale addresses apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "store/record.h"

namespace drtmx::store {
namespace {

std::vector<uint8_t> make(uint64_t version, uint64_t key, size_t vs, uint8_t fill) {
  std::vector<uint8_t> slot(record_slot_size(vs), 0);
  auto* h = reinterpret_cast<RecordHeader*>(slot.data());
  h->version = version;
  h->key = key;
  h->incarnation = 3;
  h->flags = kLive;
  std::memset(slot.data() + sizeof(RecordHeader), fill, vs);
  seal(slot.data(), vs);
  return slot;
}

TEST(RecordSeal, MixesOfTwoImagesAreTorn) {
  std::mt19937_64 rng(1);
  for (size_t vs : {1u, 8u, 13u, 64u, 100u, 700u}) {
    auto a = make(2, 42, vs, 0x11);
    auto b = make(4, 42, vs, 0x22);
    EXPECT_EQ(verify(a.data(), vs), RecordCheck::kOk);
    EXPECT_EQ(verify(b.data(), vs, 42, 3), RecordCheck::kOk);
    const size_t n = sizeof(RecordHeader) + vs;
    int torn = 0, trials = 0;
    for (int t = 0; t < 2000; ++t) {
      // Any byte-wise mix (random chunks from either image), not all-a/all-b.
      std::vector<uint8_t> c(a);
      bool from_b = false, any_a = false, any_b = false;
      for (size_t i = 8; i < n; ++i) {  // the lock word is not sealed
        if (rng() % 7 == 0) from_b = !from_b;
        c[i] = from_b ? b[i] : a[i];
        if (a[i] != b[i]) (from_b ? any_b : any_a) = true;
      }
      if (!(any_a && any_b)) continue;
      ++trials;
      torn += verify(c.data(), vs) == RecordCheck::kTorn;
    }
    EXPECT_GT(trials, 100);
    EXPECT_EQ(torn, trials) << "value size " << vs;
  }
}

// Around the sizes where hash_bytes changes shape (one chain below 64
// bytes, four lanes per 64-byte stride, then a 16-byte and a partial tail):
// every single-bit flip and every swap of two distinct 16-byte blocks of the
// value breaks the seal.
TEST(RecordSeal, BitFlipsAndBlockSwapsAreTornAtEverySize) {
  std::mt19937_64 rng(7);
  for (size_t vs : {15u, 16u, 17u, 63u, 64u, 65u, 80u, 127u, 128u, 129u, 200u, 306u}) {
    std::vector<uint8_t> a = make(5, 9, vs, 0);
    for (size_t i = 0; i < vs; ++i) a[sizeof(RecordHeader) + i] = static_cast<uint8_t>(rng());
    seal(a.data(), vs);
    ASSERT_EQ(verify(a.data(), vs), RecordCheck::kOk) << vs;
    for (size_t byte = 8; byte < sizeof(RecordHeader) + vs; ++byte) {
      const size_t seal_at = offsetof(RecordHeader, seal);
      if (byte >= seal_at && byte < seal_at + 8) continue;      // the seal itself
      if (byte >= kTsOffset && byte < kTsOffset + 8) continue;  // ts: not sealed
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<uint8_t> c(a);
        c[byte] ^= static_cast<uint8_t>(1u << bit);
        ASSERT_EQ(verify(c.data(), vs), RecordCheck::kTorn) << vs << " byte " << byte;
      }
    }
    uint8_t* v = a.data() + sizeof(RecordHeader);
    for (size_t x = 0; x + 16 <= vs; x += 16) {
      for (size_t y = x + 16; y + 16 <= vs; y += 16) {
        if (std::memcmp(v + x, v + y, 16) == 0) continue;
        std::vector<uint8_t> c(a);
        uint8_t* w = c.data() + sizeof(RecordHeader);
        std::swap_ranges(w + x, w + x + 16, w + y);
        ASSERT_EQ(verify(c.data(), vs), RecordCheck::kTorn) << vs << " blocks " << x << "," << y;
      }
    }
  }
}

TEST(RecordSeal, IdentityAndStates) {
  auto a = make(2, 42, 16, 1);
  EXPECT_EQ(verify(a.data(), 16, 43, 3), RecordCheck::kWrongKey);
  EXPECT_EQ(verify(a.data(), 16, 42, 4), RecordCheck::kWrongIncarnation);
  reinterpret_cast<RecordHeader*>(a.data())->lock = lock_word(1, 2, 3);
  EXPECT_EQ(verify(a.data(), 16, 42, 3), RecordCheck::kOk);  // lock is not sealed
  reinterpret_cast<RecordHeader*>(a.data())->flags = kDeleted;
  EXPECT_EQ(verify(a.data(), 16), RecordCheck::kTorn);  // changed without resealing
  seal(a.data(), 16);
  EXPECT_EQ(verify(a.data(), 16, 42, 3), RecordCheck::kDeleted);
  std::vector<uint8_t> zero(record_slot_size(16), 0);
  EXPECT_EQ(verify(zero.data(), 16), RecordCheck::kEmpty);
  EXPECT_EQ(record_slot_size(8), 64u);
  EXPECT_EQ(record_slot_size(9), 128u);
  // The commit timestamp is sealed; the tuple timestamp is not.
  auto w = make(2, 42, 16, 1);
  reinterpret_cast<RecordHeader*>(w.data())->ts = 77;
  EXPECT_EQ(verify(w.data(), 16, 42, 3), RecordCheck::kOk);
  reinterpret_cast<RecordHeader*>(w.data())->wts = 5;
  EXPECT_EQ(verify(w.data(), 16), RecordCheck::kTorn);
  EXPECT_NE(lock_word(0, 0, 0), 0u);
}

}  // namespace
}  // namespace drtmx::store
