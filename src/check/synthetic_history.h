// Synthetic list-append histories that are serializable (and strictly so)
// by construction, for check-bench and the checker's randomized tests:
// processes invoke transactions concurrently, each takes effect atomically
// at its completion, so every read sees exactly the appends completed
// before it. Like Elle's generator, a key retires after a number of appends
// and a fresh key takes its place, so lists stay short.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "base/status.h"

namespace drtmx::check {

struct SyntheticOptions {
  uint64_t txns = 1'000'000;
  uint32_t processes = 16;
  uint32_t active_keys = 128;     // keys in use at a time
  uint32_t hot_keys = 8;          // of them, the hot ones
  double hot_fraction = 0.5;      // share of micro-ops on the hot keys
  uint32_t max_ops = 4;           // micro-ops per transaction: 1..max_ops
  double append_fraction = 0.5;   // share of micro-ops that append
  uint32_t appends_per_key = 32;  // appends after which a key retires
  double fail_fraction = 0.02;    // transactions that abort
  double info_fraction = 0.01;    // transactions whose outcome is unknown
  uint64_t seed = 1;
};

// Writes the history as JSON Lines to `out`.
Status write_synthetic_history(const SyntheticOptions& opt, std::FILE* out);
// The same as a string (small histories).
std::string synthetic_history_text(const SyntheticOptions& opt);

}  // namespace drtmx::check
