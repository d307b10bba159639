// Where a hash table partition lives: what the owner formats and what every
// client needs to READ it. Plain data; the owner hands it to clients (today
// by configuration; the catalog will carry it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/hash/bucket.h"
#include "store/record.h"

namespace drtmx::store::hash {

struct HashLayout {
  r2::RegionId bucket_region = 0;
  uint64_t bucket_offset = 0;      // 64-byte aligned start of the bucket area
  uint32_t buckets = 0;            // head buckets (> 0)
  uint32_t overflow = 0;           // overflow buckets after the heads
  r2::RegionId record_region = 0;  // where record slots (record.h) live
  uint32_t value_size = 0;         // fixed value bytes of every record
  // Bucket slots name records relative to this offset of the record region
  // (the partition's area start), so a ref's 32 bits of offset / 64 reach
  // 256 GiB past it wherever the area sits in its region.
  uint64_t record_base = 0;

  size_t area_bytes() const { return (size_t{buckets} + overflow) * kBucketBytes; }
  size_t slot_bytes() const { return record_slot_size(value_size); }
  uint64_t bucket_addr(uint32_t index) const { return bucket_offset + index * kBucketBytes; }
  // A bucket slot's ref for the record at region offset `offset` (at or
  // above record_base, below record_base + kMaxRecordOffset), and back.
  uint64_t ref_of(uint64_t offset, uint32_t incarnation) const {
    return make_ref(offset - record_base, incarnation);
  }
  uint64_t offset_of(uint64_t ref) const { return record_base + ref_offset(ref); }

  // Geometry for `capacity` keys: heads for a load of at most 75 % of the
  // head slots, plus overflow buckets for a quarter of the heads (at least 1).
  // Tables that grow (store/tables/plan.h) get more overflow room: it is
  // address space, backed as chains need it.
  static HashLayout for_capacity(uint64_t capacity, uint32_t value_size) {
    HashLayout l;
    const uint64_t per_bucket = kSlotsPerBucket * 3 / 4;  // 4 of 6
    uint64_t heads = (capacity + per_bucket - 1) / per_bucket;
    l.buckets = static_cast<uint32_t>(heads == 0 ? 1 : heads);
    l.overflow = l.buckets / 4 + 1;
    l.value_size = value_size;
    return l;
  }

  // Largest value size a table accepts (a record must fit one READ).
  static constexpr uint32_t kMaxValueSize = 64 * 1024;

  Status validate() const {
    if (buckets == 0) return invalid_argument("hash layout: buckets must be > 0");
    if (bucket_offset % 64 != 0) {
      return invalid_argument("hash layout: bucket_offset " + std::to_string(bucket_offset) +
                              " is not 64-byte aligned");
    }
    if (value_size == 0 || value_size > kMaxValueSize) {
      return invalid_argument("hash layout: value_size " + std::to_string(value_size) +
                              " must be in [1, " + std::to_string(kMaxValueSize) + "]");
    }
    if (uint64_t{buckets} + overflow >= (uint64_t{1} << 32) - 1) {
      return invalid_argument("hash layout: too many buckets (heads + overflow >= 2^32)");
    }
    return Status::ok();
  }
};

}  // namespace drtmx::store::hash
