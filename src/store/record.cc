#include "store/record.h"

namespace drtmx::store {

namespace {
// One round of a 64x64->128 multiply-fold mixer: every input bit affects
// every output bit, and a change anywhere in the sealed bytes changes the
// seal except with negligible probability. Not cryptographic: it guards
// against torn copies, not against adversaries.
inline uint64_t mix(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a ^ 0xA0761D6478BD642Full) * (b ^ 0xE7037ED1A0B428DBull);
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
}  // namespace

uint64_t compute_seal(const RecordHeader& h, const void* value, size_t value_size) {
  uint64_t s = mix(h.version, h.key);
  s = mix(s, (uint64_t{h.incarnation} << 32) | h.flags);
  const auto* p = static_cast<const uint8_t*>(value);
  size_t i = 0;
  for (; i + 16 <= value_size; i += 16) {
    uint64_t a, b;
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 8);
    s = mix(s ^ a, b ^ (i + 1));
  }
  if (i < value_size) {
    uint64_t a = 0, b = 0;
    const size_t rest = value_size - i;
    std::memcpy(&a, p + i, rest < 8 ? rest : 8);
    if (rest > 8) std::memcpy(&b, p + i + 8, rest - 8);
    s = mix(s ^ a, b ^ (i + 1));
  }
  s = mix(s, value_size);
  // Never 0, so an all-zero slot can't verify as a record.
  return s == 0 ? 1 : s;
}

}  // namespace drtmx::store
