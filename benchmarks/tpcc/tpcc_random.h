// TPC-C random generators (clause 2.1.6 and 4.3.2): uniform draws, NURand
// with its run-time constants C, customer last names from the syllable
// table, a-strings / n-strings, zip codes, and the "ORIGINAL" data
// strings. Deterministic for a given seed (the loader derives one per
// (seed, warehouse, table) so every copy of a partition loads the same).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace drtmx::bench::tpcc {

// xorshift64* — small, fast, good enough for workload draws. One per owner
// (a loader, a client): not thread-safe.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  // Uniform in [lo, hi] (inclusive).
  uint64_t uniform(uint64_t lo, uint64_t hi);
  // Percent draws: true with probability pct / 100.
  bool percent(uint32_t pct) { return uniform(1, 100) <= pct; }

 private:
  uint64_t s_;
};

// The constants C of NURand(A, x, y) for A = 255 (C_LAST), 1023 (C_ID) and
// 8191 (OL_I_ID). The run's C_LAST differs from the load's by a delta in
// [65, 119] other than 96 and 112 (clause 2.1.6.1).
struct NURandC {
  uint32_t c_last = 0;
  uint32_t c_id = 0;
  uint32_t ol_i_id = 0;
  static NURandC for_load(uint64_t seed);
  static NURandC for_run(const NURandC& load, uint64_t seed);
};

// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
uint64_t nurand(Rng& r, uint32_t A, uint32_t C, uint64_t x, uint64_t y);

// The last name of syllables num / 100, num / 10 % 10, num % 10
// (num in 0..999), e.g. 371 -> "PRICALLYOUGHT" (clause 4.3.2.3).
std::string last_name(uint32_t num);
// The last-name number of a customer at load: c_id - 1 for the first 1000
// customers of a district, NURand(255, 0, 999) for the others.
uint32_t load_last_name_number(Rng& r, uint32_t c_id, uint32_t c_last_c);

// Fills dst[0..len) with a random a-string (letters and digits) or
// n-string (digits) of length in [lo, hi] and NUL-pads the rest of `size`.
void astring(Rng& r, char* dst, size_t size, size_t lo, size_t hi);
void nstring(Rng& r, char* dst, size_t size, size_t lo, size_t hi);
// A zip code: 4 random digits then "11111" (clause 4.3.2.7).
void zip(Rng& r, char* dst9);
// An a-string of length [lo, hi]; in 10% of them "ORIGINAL" replaces eight
// characters at a random position (I_DATA, S_DATA; clause 4.3.3.1).
void data_string(Rng& r, char* dst, size_t size, size_t lo, size_t hi);
// Copies s into a char[size] column, NUL padded (truncated when longer).
void set_text(char* dst, size_t size, const std::string& s);
// The text of a char[size] column (up to the first NUL).
std::string text(const char* src, size_t size);

}  // namespace drtmx::bench::tpcc
