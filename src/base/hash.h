// Fast 64-bit hashing for integrity checks (seals of records, log entries,
// index nodes): detects torn or partial copies, not adversaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace drtmx {

// A 64x64->128 multiply-fold: every input bit affects every output bit.
inline uint64_t hash_mix(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a ^ 0xA0761D6478BD642Full) * (b ^ 0xE7037ED1A0B428DBull);
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// Hash of `n` bytes at `p`, continuing from `seed`. Never returns 0, so an
// all-zero image never carries a valid hash of itself.
inline uint64_t hash_bytes(uint64_t seed, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t s = seed;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t x, y;
    std::memcpy(&x, b + i, 8);
    std::memcpy(&y, b + i + 8, 8);
    s = hash_mix(s ^ x, y ^ (i + 1));
  }
  if (i < n) {
    uint64_t x = 0, y = 0;
    const size_t rest = n - i;
    std::memcpy(&x, b + i, rest < 8 ? rest : 8);
    if (rest > 8) std::memcpy(&y, b + i + 8, rest - 8);
    s = hash_mix(s ^ x, y ^ (i + 1));
  }
  s = hash_mix(s, n);
  return s == 0 ? 1 : s;
}

}  // namespace drtmx
