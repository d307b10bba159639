#include "store/xstore/leaf.h"

#include "store/record.h"

namespace drtmx::store::xstore {

uint64_t keys_seal(uint64_t meta, const uint64_t* keys, uint32_t fanout) {
  RecordHeader h{};
  h.version = meta;
  h.key = fanout;
  return compute_seal(h, keys, size_t{fanout} * 8);
}

uint64_t value_seal(uint64_t key, const void* value, size_t value_bytes) {
  RecordHeader h{};
  h.key = key;
  h.flags = 0x5EA1;
  return compute_seal(h, value, value_bytes);
}

}  // namespace drtmx::store::xstore
