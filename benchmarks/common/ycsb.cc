#include "ycsb.h"

#include <cctype>
#include <cmath>
#include <mutex>

#include "xorshift.h"

namespace drtmx::bench {

Result<YcsbMix> ycsb_mix(const std::string& w) {
  const char c =
      w.size() == 1 ? static_cast<char>(std::tolower(static_cast<unsigned char>(w[0]))) : 0;
  YcsbMix m;
  switch (c) {
    case 'a':
      m.read = 0.5;
      m.update = 0.5;
      m.dist = KeyDist::kZipfian;
      return m;
    case 'b':
      m.read = 0.95;
      m.update = 0.05;
      m.dist = KeyDist::kZipfian;
      return m;
    case 'c':
      m.read = 1.0;
      m.dist = KeyDist::kZipfian;
      return m;
    case 'd':
      m.read = 0.95;
      m.insert = 0.05;
      m.dist = KeyDist::kLatest;
      return m;
    case 'e':
      m.scan = 0.95;
      m.insert = 0.05;
      m.dist = KeyDist::kZipfian;
      return m;
    case 'f':
      m.read = 0.5;
      m.rmw = 0.5;
      m.dist = KeyDist::kZipfian;
      return m;
    default:
      return invalid_argument("--workload=" + w + ": expected one of a, b, c, d, e, f");
  }
}

namespace {
double zeta(uint64_t from, uint64_t to, double theta, double start) {
  double z = start;
  for (uint64_t i = from; i < to; ++i) z += 1.0 / std::pow(static_cast<double>(i + 1), theta);
  return z;
}
}  // namespace

namespace {
// zeta(0, n, theta) of the last distinct (n, theta) asked for: every
// generator of a run has the same ones, and the sum costs n pow() calls.
double zeta_memo(uint64_t n, double theta) {
  static std::mutex mu;
  static uint64_t memo_n = 0;
  static double memo_theta = -1, memo_z = 0;
  std::lock_guard<std::mutex> g(mu);
  if (n != memo_n || theta != memo_theta) {
    memo_z = zeta(0, n, theta, 0);
    memo_n = n;
    memo_theta = theta;
  }
  return memo_z;
}
}  // namespace

Zipfian::Zipfian(uint64_t n, double theta) : n_(n < 1 ? 1 : n), theta_(theta) {
  zeta2_ = zeta(0, 2, theta_, 0);
  zeta_n_ = zeta_memo(n_, theta_);
  recompute();
}

void Zipfian::recompute() {
  alpha_ = 1.0 / (1.0 - theta_);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) / (1.0 - zeta2_ / zeta_n_);
}

void Zipfian::grow(uint64_t n) {
  if (n <= n_) return;
  zeta_n_ = zeta(n_, n, theta_, zeta_n_);
  n_ = n;
  recompute();
}

uint64_t Zipfian::next(double u) {
  const double uz = u * zeta_n_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + std::pow(0.5, theta_)) return n_ > 1 ? 1 : 0;
  const auto r =
      static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return r < n_ ? r : n_ - 1;
}

uint64_t ycsb_key(uint64_t x) {
  // splitmix64's finalizer: a bijection on 64-bit integers.
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

YcsbGenerator::YcsbGenerator(const YcsbMix& mix, KeyDist dist, double theta, uint64_t loaded,
                             uint32_t index, uint32_t count, uint64_t seed)
    : mix_(mix),
      dist_(dist),
      loaded_(loaded < 1 ? 1 : loaded),
      next_insert_(loaded + index),
      stride_(count < 1 ? 1 : count),
      zipf_(loaded < 1 ? 1 : loaded, theta),
      state_(seed * 0x9E3779B97F4A7C15ull + index + 1) {
  if (state_ == 0) state_ = 1;
}

uint64_t YcsbGenerator::xorshift() {
  return xorshift64(state_);
}

uint64_t YcsbGenerator::pick_existing() {
  // Record numbers known to exist: the loaded ones and this generator's own
  // inserts (others' inserts may not have happened yet).
  switch (dist_) {
    case KeyDist::kUniform:
      return xorshift() % loaded_;
    case KeyDist::kZipfian: {
      const uint64_t rank = zipf_.next(uniform01());
      return ycsb_key(rank) % loaded_;  // scrambled: hot ranks spread out
    }
    case KeyDist::kLatest: {
      // Rank 0 = the newest record number this generator knows exists.
      const uint64_t newest = inserted_ > 0 ? next_insert_ - stride_ : loaded_ - 1;
      const uint64_t known = loaded_ + inserted_;
      zipf_.grow(known);
      const uint64_t rank = zipf_.next(uniform01());
      if (rank < inserted_) return newest - rank * stride_;
      const uint64_t back = rank - inserted_;
      return back < loaded_ ? loaded_ - 1 - back : 0;
    }
  }
  return 0;
}

YcsbGenerator::Op YcsbGenerator::next() {
  const double u = uniform01();
  Op op{YcsbOp::kRead, 0, 0};
  double acc = mix_.read;
  if (u < acc) {
    op.op = YcsbOp::kRead;
  } else if (u < (acc += mix_.update)) {
    op.op = YcsbOp::kUpdate;
  } else if (u < (acc += mix_.insert)) {
    op.op = YcsbOp::kInsert;
    op.key = ycsb_key(next_insert_);
    next_insert_ += stride_;
    ++inserted_;
    return op;
  } else if (u < (acc += mix_.scan)) {
    op.op = YcsbOp::kScan;
    op.scan_length = 1 + static_cast<uint32_t>(xorshift() % (max_scan < 1 ? 1 : max_scan));
  } else {
    op.op = YcsbOp::kReadModifyWrite;
  }
  op.key = ycsb_key(pick_existing());
  return op;
}

}  // namespace drtmx::bench
