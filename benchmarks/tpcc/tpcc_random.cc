// TPC-C random generators (tpcc_random.h).
#include "tpcc/tpcc_random.h"

#include <cstring>

namespace drtmx::bench::tpcc {
namespace {

constexpr const char* kSyllables[10] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                        "ESE", "ANTI",  "CALLY", "ATION", "EING"};
constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

Rng::Rng(uint64_t seed) : s_(mix(seed) | 1) {}

uint64_t Rng::next() {
  s_ ^= s_ >> 12;
  s_ ^= s_ << 25;
  s_ ^= s_ >> 27;
  return s_ * 0x2545F4914F6CDD1Dull;
}

uint64_t Rng::uniform(uint64_t lo, uint64_t hi) {
  return lo + next() % (hi - lo + 1);
}

NURandC NURandC::for_load(uint64_t seed) {
  Rng r(seed ^ 0xC0C0C0C0ull);
  NURandC c;
  c.c_last = static_cast<uint32_t>(r.uniform(0, 255));
  c.c_id = static_cast<uint32_t>(r.uniform(0, 1023));
  c.ol_i_id = static_cast<uint32_t>(r.uniform(0, 8191));
  return c;
}

NURandC NURandC::for_run(const NURandC& load, uint64_t seed) {
  Rng r(seed ^ 0x5EED5EEDull);
  NURandC c;
  for (;;) {
    c.c_last = static_cast<uint32_t>(r.uniform(0, 255));
    const uint32_t delta = c.c_last > load.c_last ? c.c_last - load.c_last : load.c_last - c.c_last;
    if (delta >= 65 && delta <= 119 && delta != 96 && delta != 112) break;
  }
  c.c_id = static_cast<uint32_t>(r.uniform(0, 1023));
  c.ol_i_id = static_cast<uint32_t>(r.uniform(0, 8191));
  return c;
}

uint64_t nurand(Rng& r, uint32_t A, uint32_t C, uint64_t x, uint64_t y) {
  return (((r.uniform(0, A) | r.uniform(x, y)) + C) % (y - x + 1)) + x;
}

std::string last_name(uint32_t num) {
  return std::string(kSyllables[num / 100 % 10]) + kSyllables[num / 10 % 10] + kSyllables[num % 10];
}

uint32_t load_last_name_number(Rng& r, uint32_t c_id, uint32_t c_last_c) {
  if (c_id <= 1000) return c_id - 1;
  return static_cast<uint32_t>(nurand(r, 255, c_last_c, 0, 999));
}

void astring(Rng& r, char* dst, size_t size, size_t lo, size_t hi) {
  const size_t n = r.uniform(lo, hi);
  for (size_t i = 0; i < size; ++i) dst[i] = i < n ? kAlnum[r.uniform(0, 61)] : '\0';
}

void nstring(Rng& r, char* dst, size_t size, size_t lo, size_t hi) {
  const size_t n = r.uniform(lo, hi);
  for (size_t i = 0; i < size; ++i)
    dst[i] = i < n ? static_cast<char>('0' + r.uniform(0, 9)) : '\0';
}

void zip(Rng& r, char* dst9) {
  nstring(r, dst9, 4, 4, 4);
  std::memcpy(dst9 + 4, "11111", 5);
}

void data_string(Rng& r, char* dst, size_t size, size_t lo, size_t hi) {
  astring(r, dst, size, lo, hi);
  if (r.percent(10)) {
    const size_t n = text(dst, size).size();
    std::memcpy(dst + r.uniform(0, n - 8), "ORIGINAL", 8);
  }
}

void set_text(char* dst, size_t size, const std::string& s) {
  for (size_t i = 0; i < size; ++i) dst[i] = i < s.size() ? s[i] : '\0';
}

std::string text(const char* src, size_t size) {
  return std::string(src, strnlen(src, size));
}

}  // namespace drtmx::bench::tpcc
