// LatencyHistogram: log-linear buckets over nanoseconds (16 sub-buckets per
// power of two: <= 6.25% relative error), fixed size, no allocation when
// recording. One per thread; merge() to combine. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace drtmx {

class LatencyHistogram {
 public:
  static constexpr int kSub = 16;
  static constexpr int kBuckets = 64 * kSub;

  void record(uint64_t ns) {
    ++counts_[bucket(ns)];
    ++total_;
    if (ns > max_) max_ = ns;
  }
  void merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    if (o.max_ > max_) max_ = o.max_;
  }
  void clear() { *this = LatencyHistogram(); }
  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }
  // The value below which a fraction q (0..1) of the samples lie (the upper
  // edge of the bucket holding that rank); 0 when empty.
  uint64_t quantile(double q) const;

  // Compact text form "i:count,i:count,..." of the non-empty buckets, for
  // sending results between processes.
  std::string encode() const;
  // False on malformed text (the histogram is then left cleared).
  bool decode(const std::string& s);

  static int bucket(uint64_t ns) {
    if (ns < kSub) return static_cast<int>(ns);
    const int msb = 63 - __builtin_clzll(ns);  // >= 4
    const int shift = msb - 4;
    return (shift + 1) * kSub + static_cast<int>((ns >> shift) & (kSub - 1));
  }
  static uint64_t bucket_upper(int b) {
    if (b < kSub) return static_cast<uint64_t>(b);
    const int shift = b / kSub - 1;
    const uint64_t sub = static_cast<uint64_t>(b % kSub) + kSub;
    return ((sub + 1) << shift) - 1;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

}  // namespace drtmx
