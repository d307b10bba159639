#include "store/record.h"

#include "base/hash.h"

namespace drtmx::store {

uint64_t compute_seal(const RecordHeader& h, const void* value, size_t value_size) {
  uint64_t s = hash_mix(h.version, h.key);
  s = hash_mix(s, (uint64_t{h.incarnation} << 32) | h.flags);
  s = hash_mix(s, h.wts);
  return hash_bytes(s, value, value_size);
}

}  // namespace drtmx::store
