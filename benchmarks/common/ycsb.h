// YCSB workloads A-F (Cooper et al., SoCC'10) as operation streams for the
// store benchmarks: which operation comes next and on which key.
//
// Keys are 64-bit integers: the loaded keys are record numbers 0..N-1
// mapped through a fixed bijective scramble (so neighbouring numbers are not
// neighbouring keys and ordered tables see a realistic spread); inserts take
// fresh record numbers from N on, striped per generator so concurrent
// generators never insert the same key.
//
// Distributions: uniform; zipfian with constant theta (scrambled: the rank
// goes through a hash so the hot items are spread over the key space, as
// YCSB's ScrambledZipfian); latest (zipfian over recency: the newest
// inserted record numbers are the hottest, for workload D).
//
// A generator is used by one thread (it owns its random state).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace drtmx::bench {

enum class YcsbOp : uint8_t { kRead, kUpdate, kInsert, kScan, kReadModifyWrite };
enum class KeyDist : uint8_t { kUniform, kZipfian, kLatest };

struct YcsbMix {
  double read = 0, update = 0, insert = 0, scan = 0, rmw = 0;
  KeyDist dist = KeyDist::kUniform;  // the workload's default
};

// The standard mixes; `workload` is one of a..f (case-insensitive).
Result<YcsbMix> ycsb_mix(const std::string& workload);

// Zipfian ranks in [0, n) with P(rank i) ~ 1 / (i+1)^theta, drawn in O(1)
// (Gray et al.'s method). n may grow (for "latest"); zeta is extended
// incrementally.
class Zipfian {
 public:
  Zipfian(uint64_t n, double theta);
  uint64_t next(double u);  // u uniform in [0, 1)
  void grow(uint64_t n);
  uint64_t n() const { return n_; }

 private:
  void recompute();
  uint64_t n_;
  double theta_, zeta_n_, zeta2_, alpha_, eta_;
};

// A bijective 64-bit scramble (record number -> key).
uint64_t ycsb_key(uint64_t record_number);

class YcsbGenerator {
 public:
  // `loaded` keys exist at start; generator `index` of `count` gets the
  // insert record numbers loaded + index, loaded + index + count, ...
  YcsbGenerator(const YcsbMix& mix, KeyDist dist, double theta, uint64_t loaded, uint32_t index,
                uint32_t count, uint64_t seed);

  struct Op {
    YcsbOp op;
    uint64_t key;
    uint32_t scan_length;  // kScan: uniform in [1, max_scan]
  };
  Op next();
  uint32_t max_scan = 100;

  uint64_t random() { return xorshift(); }

 private:
  uint64_t xorshift();
  double uniform01() { return static_cast<double>(xorshift() >> 11) * 0x1.0p-53; }
  uint64_t pick_existing();

  YcsbMix mix_;
  KeyDist dist_;
  uint64_t loaded_;
  uint64_t next_insert_;  // next record number this generator inserts
  uint32_t stride_;
  uint64_t inserted_ = 0;  // by this generator
  Zipfian zipf_;
  uint64_t state_;
};

}  // namespace drtmx::bench
