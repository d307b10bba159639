#include "store/xstore/client/model.h"

namespace drtmx::store::xstore {

void LinearFitter::add(uint64_t key, double y) {
  const double x = static_cast<double>(key);
  ++n_;
  const double dx = x - mx_;
  mx_ += dx / static_cast<double>(n_);
  my_ += (y - my_) / static_cast<double>(n_);
  // Co-moments with the updated means (Welford): exact in real arithmetic.
  sxx_ += dx * (x - mx_);
  sxy_ += dx * (y - my_);
}

LinearModel LinearFitter::fit() const {
  LinearModel m;
  m.x0_ = mx_;
  m.y0_ = my_;
  if (n_ >= 2 && sxx_ > 0) {
    const double s = sxy_ / sxx_;
    m.slope_ = s > 0 ? s : 0;  // monotone by construction
  }
  return m;
}

}  // namespace drtmx::store::xstore
