#include "draft/yarn_rope.h"

#include <algorithm>
#include <cmath>

namespace k3 {

namespace {

constexpr double kPi = 3.14159265358979323846;

double yarn_mscale(double factor, double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; }

// The pair index whose wavelength makes `rotations` turns over the original
// context length.
double correction_dim(double rotations, int dim, double base, double original) {
  return dim * std::log(original / (rotations * 2 * kPi)) / (2 * std::log(base));
}

}  // namespace

YarnRope::YarnRope(const DSparkConfig& c) {
  const int dim = c.qk_rope_head_dim, half = dim / 2;
  const double base = c.rope_theta, factor = c.rope_factor;
  const double original = static_cast<double>(c.rope_original_max_positions);
  double low = std::floor(correction_dim(c.beta_fast, dim, base, original));
  double high = std::ceil(correction_dim(c.beta_slow, dim, base, original));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // a ramp of width zero would divide by zero
  inv_freq_.resize(half);
  for (int i = 0; i < half; ++i) {
    const double extrapolated = 1.0 / std::pow(base, 2.0 * i / dim);
    const double interpolated = extrapolated / factor;
    // 1 below `low` (keep the trained frequency), 0 above `high` (interpolate).
    const double keep = 1.0 - std::clamp((i - low) / (high - low), 0.0, 1.0);
    inv_freq_[i] = interpolated * (1.0 - keep) + extrapolated * keep;
  }
  magnitude_ = yarn_mscale(factor, c.mscale) / yarn_mscale(factor, c.mscale_all_dim);
  double scale = 1.0 / std::sqrt(static_cast<double>(c.qk_head_dim()));
  if (c.mscale_all_dim != 0) {
    const double m = yarn_mscale(factor, c.mscale_all_dim);
    scale *= m * m;
  }
  softmax_scale_ = static_cast<float>(scale);
}

void YarnRope::rotate(float* x, int64_t pos) const {
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    // The angle in fp32 as the reference computes position * inv_freq.
    const float angle = static_cast<float>(pos) * static_cast<float>(inv_freq_[i]);
    const float cs = static_cast<float>(std::cos(angle) * magnitude_);
    const float sn = static_cast<float>(std::sin(angle) * magnitude_);
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cs - b * sn;
    x[2 * i + 1] = a * sn + b * cs;
  }
}

}  // namespace k3
