// XStore leaf nodes: the only part of the owner's B+tree that clients read
// with one-sided READs. Shared contract of the owner (XTree) and the client
// (learned cache). Thesis §3.4.1; docs/architecture.md (the store).
//
// Leaves live in a registered region as an array of fixed-size slots; a
// leaf's physical number (ALN) is its slot index:
//   address = leaf_area_offset + ALN * leaf_bytes(fanout, value_bytes).
//
// Layout of one leaf (fanout N, value_bytes V):
//   +0        meta   8 B   incarnation:24 | count:8 | next:32  (see below)
//   +8        seal   8 B   hash of meta and the N key words (keys_seal())
//   +16       keys   N x 8 B, unsorted; slots [0, count) are in use
//   +16+8N    values N x value_slot_bytes(V), value i belongs to key i:
//             each value slot = { key 8 B | seal 8 B | V bytes, padded to 8 }
//             where the slot seal = hash(key, value bytes) (value_seal()).
//
// meta: incarnation (24 bits) bumps when the leaf is split or reused, so a
//       client holding a stale translation-table entry notices; count is the
//       number of keys; next is the ALN of the right sibling + 1 (0 = none).
//
// Torn reads: a client READs [meta .. keys end] (one READ of 16 + 8N bytes)
// and checks keys_seal(); then READs one value slot and checks its seal and
// its key. Both seals break on any mix of two writes (see store/record.h).
// The owner rewrites the seal after every change of meta or keys (append,
// delete, split), and a value slot's seal with every value write.
//
// Values are either inline (V bytes) or, for secondary indexes, an 8-byte
// record address (node, region, offset packed by the table layer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace drtmx::store::xstore {

constexpr uint32_t kMaxFanout = 255;  // count is 8 bits

struct LeafMeta {
  uint32_t incarnation;  // 24 bits used
  uint32_t count;        // <= fanout
  uint32_t next;         // ALN + 1 of the right sibling, 0 = none
};

inline uint64_t pack_meta(const LeafMeta& m) {
  return (uint64_t{m.incarnation & 0xFFFFFF} << 40) | (uint64_t{m.count & 0xFF} << 32) | m.next;
}
inline LeafMeta unpack_meta(uint64_t w) {
  return {static_cast<uint32_t>(w >> 40) & 0xFFFFFF, static_cast<uint32_t>(w >> 32) & 0xFF,
          static_cast<uint32_t>(w)};
}

constexpr size_t value_slot_bytes(size_t value_bytes) {
  return 16 + ((value_bytes + 7) & ~size_t{7});
}
constexpr size_t leaf_keys_bytes(uint32_t fanout) {
  return 16 + 8 * size_t{fanout};
}
constexpr size_t leaf_bytes(uint32_t fanout, size_t value_bytes) {
  return (leaf_keys_bytes(fanout) + fanout * value_slot_bytes(value_bytes) + 63) & ~size_t{63};
}
constexpr size_t value_slot_offset(uint32_t fanout, size_t value_bytes, uint32_t i) {
  return leaf_keys_bytes(fanout) + i * value_slot_bytes(value_bytes);
}
// Bytes of a leaf without its tail padding: meta, seal, keys, value slots.
constexpr size_t leaf_used_bytes(uint32_t fanout, size_t value_bytes) {
  return value_slot_offset(fanout, value_bytes, fanout);
}

// Seal over meta and the fanout key words of a leaf image.
uint64_t keys_seal(uint64_t meta, const uint64_t* keys, uint32_t fanout);
// Seal over a value slot's key and value bytes.
uint64_t value_seal(uint64_t key, const void* value, size_t value_bytes);

}  // namespace drtmx::store::xstore
