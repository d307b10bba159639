// Division by a divisor fixed at run time (a slot or area size), without a
// divide instruction on the hot path: record addresses are turned into slot
// indexes several times per transaction, and a 64-bit `div` costs tens of
// cycles where a multiply costs three.
//
// Contract: for every 64-bit x, quotient(x) == x / d and, when x is a
// multiple of d, exact(x, &q) is true with q == x / d (false otherwise).
//
// How: m = ceil(2^64 / d) (UINT64_MAX / d + 1). q' = (x * m) >> 64 is
// floor(x / d) or one more: m exceeds 2^64 / d by e < 1, so x * m / 2^64 =
// x / d + x * e / 2^64 with the second term below 1. One multiply-back
// takes away the possible extra one. d == 1 (m would wrap to 0) is
// handled apart.
#pragma once

#include <cstdint>

namespace drtmx {

class Divider {
 public:
  Divider() = default;
  // `d` > 0 (a Divider of 0 divides as by 1: callers validate sizes).
  explicit Divider(uint64_t d) : d_(d == 0 ? 1 : d), m_(d_ == 1 ? 0 : UINT64_MAX / d_ + 1) {}
  uint64_t divisor() const { return d_; }
  uint64_t quotient(uint64_t x) const {
    if (m_ == 0) return x;
    uint64_t q = static_cast<uint64_t>((static_cast<__uint128_t>(x) * m_) >> 64);
    // q * d exceeds x only when q is one too many. (q + 1) * d cannot wrap
    // in 64 bits (in the last block below 2^64, x mod d < 2^64 mod d, so q'
    // is exact there); the 128-bit product only makes that plain.
    if (static_cast<__uint128_t>(q) * d_ > x) --q;
    return q;
  }
  // Whether x is a multiple of d; *q = x / d either way.
  bool exact(uint64_t x, uint64_t* q) const {
    *q = quotient(x);
    return *q * d_ == x;
  }

 private:
  uint64_t d_ = 1;
  uint64_t m_ = 0;
};

}  // namespace drtmx
