// DrTM-KV buckets: the part of a hash table partition that clients read with
// one-sided READs. Shared contract of the owner (hash_table.h) and the client
// (hash_client.h). thesis-spec §5.2 ([IMPL drtmh] cluster chaining).
//
// A partition's bucket area is one contiguous range of a registered region:
//   [bucket_offset, bucket_offset + (buckets + overflow) * kBucketBytes)
// Buckets [0, buckets) are the heads a key hashes to (bucket_index()); buckets
// [buckets, buckets + overflow) are the overflow area, same format, linked
// from a full bucket by `next`.
//
// Layout of one bucket (128 B, 64 B aligned; 8-byte words):
//   +0    latch    8 B   owner-side chain latch (head buckets only; 0 = free,
//                        1 = held). NOT covered by the seal; clients ignore it.
//   +8    seal     8 B   hash of bytes [16, 120) (bucket_seal()).
//   +16   next     4 B   overflow index + 1 of the next bucket; 0 = end.
//   +20   stamp    4 B   bumped by every rewrite (makes images distinct).
//   +24   slots    6 x {key 8 B, ref 8 B}
//   +120  pad      8 B
// ref = incarnation << 32 | (record_offset / 64 + 1); ref 0 = empty slot. So
// record offsets are 64-byte aligned and below 256 GiB (checked at create).
//
// Torn reads: a bucket is rewritten in place by the owner (under the chain
// latch). A READ that overlaps a rewrite mixes two images and breaks the seal
// (up to a 2^-64 chance), whatever order the bytes were copied in; a copy
// whose seal verifies is one rewrite's complete image. All buckets are
// formatted (sealed) at create, so an unformatted bucket is a seal failure.
//
// Chains are never shortened: an overflow bucket, once linked, stays linked
// (emptied slots are reused by later inserts into the same chain). A reader
// that follows `next` from an old head image therefore always reaches a
// bucket of the same chain. Keys never move between slots: a key is inserted
// into one slot and leaves it only by delete. Hence if a key was present
// during a whole chain scan, it sat in one slot all along and the READ of
// that slot's bucket saw it: a scan that does not find a key proves the key
// was absent at some instant between the scan's first and last READ.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/hash.h"

namespace drtmx::store::hash {

constexpr uint32_t kSlotsPerBucket = 6;
constexpr size_t kBucketBytes = 128;

struct BucketSlot {
  uint64_t key;
  uint64_t ref;  // 0 = empty
};

struct alignas(64) Bucket {
  uint64_t latch;
  uint64_t seal;
  uint32_t next;
  uint32_t stamp;
  BucketSlot slots[kSlotsPerBucket];
  uint64_t pad;
};
static_assert(sizeof(Bucket) == kBucketBytes);
static_assert(offsetof(Bucket, seal) == 8 && offsetof(Bucket, next) == 16);
static_assert(offsetof(Bucket, slots) == 24 && offsetof(Bucket, pad) == 120);

constexpr size_t kBucketWords = kBucketBytes / 8;
constexpr size_t kSealedBegin = 16;  // bytes [kSealedBegin, kSealedEnd) are sealed
constexpr size_t kSealedEnd = 120;

inline uint64_t bucket_seal(const Bucket& b) {
  return hash_bytes(0x6b75636b65744448ull, reinterpret_cast<const uint8_t*>(&b) + kSealedBegin,
                    kSealedEnd - kSealedBegin);
}
inline bool bucket_verifies(const Bucket& b) {
  return bucket_seal(b) == b.seal;
}

// ref encoding (see above).
constexpr uint64_t make_ref(uint64_t record_offset, uint32_t incarnation) {
  return (uint64_t{incarnation} << 32) | ((record_offset >> 6) + 1);
}
constexpr uint64_t ref_offset(uint64_t ref) {
  return ((ref & 0xFFFFFFFFull) - 1) << 6;
}
constexpr uint32_t ref_incarnation(uint64_t ref) {
  return static_cast<uint32_t>(ref >> 32);
}
constexpr uint64_t kMaxRecordOffset = (uint64_t{0xFFFFFFFE}) << 6;

// The head bucket of `key` in a table of `buckets` heads (buckets > 0).
inline uint32_t bucket_index(uint64_t key, uint32_t buckets) {
  return static_cast<uint32_t>(hash_mix(key, 0x243F6A8885A308D3ull) % buckets);
}

}  // namespace drtmx::store::hash
