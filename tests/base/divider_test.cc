// Divider (base/divider.h): the quotient and the multiple test agree with
// the divide instruction for divisors and numerators across the range —
// small, powers of two and their neighbours, record-slot and area sizes,
// and numerators near 2^64 where the multiply-back could overflow.
#include "base/divider.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace drtmx {
namespace {

std::vector<uint64_t> divisors() {
  std::vector<uint64_t> d = {1, 2, 3, 5, 7, 64, 128, 192, 320, 704, 1000, 4096, 65535, 65536};
  for (int s = 2; s < 64; s += 7) {
    d.push_back((uint64_t{1} << s) - 1);
    d.push_back(uint64_t{1} << s);
    d.push_back((uint64_t{1} << s) + 1);
  }
  d.push_back(UINT64_MAX);
  d.push_back(UINT64_MAX - 1);
  d.push_back(uint64_t{0x123456789});
  return d;
}

TEST(Divider, AgreesWithDivisionEverywhere) {
  std::mt19937_64 rng(7);
  for (const uint64_t d : divisors()) {
    SCOPED_TRACE(d);
    const Divider div(d);
    std::vector<uint64_t> xs = {0, 1, d - 1, d, d + 1, UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - d};
    for (uint64_t k : {uint64_t{2}, uint64_t{3}, uint64_t{1000}, UINT64_MAX / d}) {
      xs.push_back(d * k);
      xs.push_back(d * k - 1);
      xs.push_back(d * k + 1);
    }
    // The last block below 2^64, where a quotient one too many times d
    // would wrap.
    for (uint64_t r = 0; r < 64 && r <= UINT64_MAX / d * d; ++r) {
      xs.push_back(UINT64_MAX - r);
      xs.push_back(UINT64_MAX / d * d + r % d);
    }
    for (int i = 0; i < 2000; ++i) {
      xs.push_back(rng());
      xs.push_back(rng() >> (rng() % 64));
      xs.push_back(d * (rng() >> (rng() % 63 + 1)));  // multiples (mod 2^64)
    }
    for (const uint64_t x : xs) {
      ASSERT_EQ(div.quotient(x), x / d) << "x = " << x;
      uint64_t q = 0;
      ASSERT_EQ(div.exact(x, &q), x % d == 0) << "x = " << x;
      ASSERT_EQ(q, x / d) << "x = " << x;
    }
  }
}

TEST(Divider, ZeroDividesAsOne) {
  const Divider div(0);
  EXPECT_EQ(div.divisor(), 1u);
  EXPECT_EQ(div.quotient(12345), 12345u);
}

}  // namespace
}  // namespace drtmx
