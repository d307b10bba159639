// xorshift64 (shifts 13, 7, 17): the cheap draws of the benchmarks' op
// loops and workload generators, and the random choice of a peer node made
// with them. Fast, not of statistical quality; a state must not be 0.
#pragma once

#include <cstdint>

namespace drtmx::bench {

// Advances the state `s` and returns its new value.
inline uint64_t xorshift64(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// A node other than `self` among nodes 0 .. nodes-1, drawn uniformly with
// `rng`; `self` when it is the only node (then `rng` is left as it is).
inline uint16_t random_peer(uint64_t& rng, uint16_t self, uint16_t nodes) {
  if (nodes <= 1) return self;
  auto peer = static_cast<uint16_t>(xorshift64(rng) % (nodes - 1));
  if (peer >= self) ++peer;
  return peer;
}

}  // namespace drtmx::bench
