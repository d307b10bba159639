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

inline uint64_t load_word64(const uint8_t* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

// Hash of `n` bytes at `p`, continuing from `seed`. Never returns 0, so an
// all-zero image never carries a valid hash of itself. Every 16-byte block
// enters one multiply together with its offset, so moving bytes changes the
// hash too. From 64 bytes on, four independent lanes take a block each per
// 64-byte stride and are folded at the end: one chain of dependent
// multiplies made a 300-byte record's seal latency-bound (~20 multiplies
// back to back); four chains run side by side.
inline uint64_t hash_bytes(uint64_t seed, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t s = seed;
  size_t i = 0;
  if (n >= 64) {
    uint64_t l0 = s;
    uint64_t l1 = s ^ 0x9E3779B97F4A7C15ull;
    uint64_t l2 = s ^ 0xC2B2AE3D27D4EB4Full;
    uint64_t l3 = s ^ 0x165667B19E3779F9ull;
    for (; i + 64 <= n; i += 64) {
      l0 = hash_mix(l0 ^ load_word64(b + i), load_word64(b + i + 8) ^ (i + 1));
      l1 = hash_mix(l1 ^ load_word64(b + i + 16), load_word64(b + i + 24) ^ (i + 17));
      l2 = hash_mix(l2 ^ load_word64(b + i + 32), load_word64(b + i + 40) ^ (i + 33));
      l3 = hash_mix(l3 ^ load_word64(b + i + 48), load_word64(b + i + 56) ^ (i + 49));
    }
    s = hash_mix(hash_mix(l0, l1), hash_mix(l2, l3) ^ i);
  }
  for (; i + 16 <= n; i += 16)
    s = hash_mix(s ^ load_word64(b + i), load_word64(b + i + 8) ^ (i + 1));
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
