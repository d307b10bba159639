// Models of the XStore learned cache (thesis-spec §4.4, §4.10): linear
// regression fitted in closed form, a top model that maps a key to one of M
// sub-models, and sub-models that map a key to a position with error bounds.
//
// Monotonicity (what negative answers and scan start points rest on, §4.6):
// every model here is non-decreasing in the key, by construction:
//   * x = double(key) is non-decreasing in the key (integer-to-double
//     rounding is monotone), and so is x - x_mean;
//   * the slope is clamped to >= 0 at fit time (a negative least-squares
//     slope — possible only on degenerate data — becomes 0), and IEEE
//     multiplication by a non-negative constant and addition of a constant
//     are monotone under round-to-nearest;
//   * TopModel::pick clamps to [0, M) and truncates, both monotone.
// So k1 <= k2 implies predict(k1) <= predict(k2) exactly as computed, not
// only in real arithmetic; the error bounds are computed with the same
// predict() so they hold for the computed values.
//
// Thread safety: models are plain values; const members may be called from
// any thread, fitting builds a new value.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace drtmx::store::xstore {

// y = slope * (double(key) - x0) + y0. Centered at the training mean so
// that 64-bit keys (up to 1.8e19) keep their precision in the product.
class LinearModel {
 public:
  double predict(uint64_t key) const { return slope_ * (static_cast<double>(key) - x0_) + y0_; }
  double slope() const { return slope_; }
  double x0() const { return x0_; }
  double y0() const { return y0_; }
  // A model from its three parameters, exactly as another node computed
  // them (models shipped by the owner, XCache::install_models). The slope
  // must be >= 0 (checked by the caller) to keep the model monotone.
  static LinearModel from_parts(double slope, double x0, double y0) {
    LinearModel m;
    m.slope_ = slope;
    m.x0_ = x0;
    m.y0_ = y0;
    return m;
  }

 private:
  friend class LinearFitter;
  double slope_ = 0;
  double x0_ = 0;
  double y0_ = 0;
};

// Ordinary least squares over (key, y) points, accumulated one point at a
// time (Welford-style running means and co-moments in double precision, so
// no point buffer and no cancellation from raw sums of squares).
class LinearFitter {
 public:
  void add(uint64_t key, double y);
  uint64_t points() const { return n_; }
  // The fitted model; slope clamped to >= 0 (monotone, see above). With no
  // point the model is y = 0; with one distinct x it is y = mean(y).
  LinearModel fit() const;

 private:
  uint64_t n_ = 0;
  double mx_ = 0, my_ = 0;    // running means
  double sxx_ = 0, sxy_ = 0;  // running co-moments
};

// Top model: key -> sub-model index in [0, m). Trained on the CDF
// (key, rank * m / keys), so each sub-model receives about keys/m keys.
//
// Two kinds: the thesis' LR (default), or a monotone piecewise-linear CDF
// ("spline") through knots at evenly spaced ranks, for keys an LR cannot
// spread (clusters orders of magnitude apart, composite keys; the thesis
// uses NN/MLR top models there, §4.10). The spline is monotone because the
// knots' keys ascend and their y values do not descend, and interpolation
// y0 + (y1 - y0) * (double(k - k0) / double(k1 - k0)) is built from
// monotone steps with non-negative factors.
struct TopModel {
  LinearModel lr;
  std::vector<std::pair<uint64_t, double>> knots;  // spline when non-empty
  uint32_t m = 1;

  uint32_t pick(uint64_t key) const {
    const double p = knots.empty() ? lr.predict(key) : spline(key);
    if (!(p > 0)) return 0;  // also NaN
    if (p >= static_cast<double>(m)) return m - 1;
    return static_cast<uint32_t>(p);
  }

 private:
  double spline(uint64_t key) const {
    if (key <= knots.front().first) return knots.front().second;
    if (key >= knots.back().first) return knots.back().second;
    const auto it = std::upper_bound(knots.begin(), knots.end(), key,
                                     [](uint64_t k, const auto& kn) { return k < kn.first; });
    const auto& [k1, y1] = *it;
    const auto& [k0, y0] = *(it - 1);
    return y0 + (y1 - y0) * (static_cast<double>(key - k0) / static_cast<double>(k1 - k0));
  }
};

// Sub-model: key -> position in the sub-model's own position space
// [0, leaves * fanout), where logical leaf n owns [n * fanout, (n+1) *
// fanout). For every training point the true position lies in
// [predict - min_err, predict + max_err].
struct SubModel {
  LinearModel lr;
  // Rounded up to float when trained (bounds may only grow).
  float min_err = 0;  // largest over-prediction  (predict - pos), >= 0
  float max_err = 0;  // largest under-prediction (pos - predict), >= 0
  // Smallest and largest training key: outside [key_min, key_max] the
  // position is not predicted but clamped (see xcache.h).
  uint64_t key_min = 0;
  uint64_t key_max = 0;
};

}  // namespace drtmx::store::xstore
