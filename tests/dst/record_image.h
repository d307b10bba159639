// Test helper of the dst suites: a sealed, live record slot image.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "dst/timestamp.h"
#include "store/record.h"

namespace drtmx::dst::testing {

// Key `key`, `version`, commit timestamp `wts`, incarnation 1, a value of
// `value_size` bytes all `fill`.
inline std::vector<uint8_t> record_image(uint32_t value_size, uint64_t key, uint64_t version,
                                         Timestamp wts, uint8_t fill) {
  std::vector<uint8_t> r(store::record_slot_size(value_size), 0);
  store::RecordHeader h{};
  h.version = version;
  h.key = key;
  h.incarnation = 1;
  h.flags = store::kLive;
  h.wts = wts;
  std::memcpy(r.data(), &h, sizeof h);
  std::memset(r.data() + store::kValueOffset, fill, value_size);
  store::seal(r.data(), value_size);
  return r;
}

}  // namespace drtmx::dst::testing
