// rms_norm (kernels/rms_norm.h): a row against its formula in double, and the
// rows split over threads equal to the inline call byte for byte.
#include "kernels/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/thread_pool.h"

namespace k3::kernels {
namespace {

std::vector<float> rows_of(size_t n, size_t dim) {
  std::vector<float> x(n * dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(int(i * 7919 % 201) - 100) * 0.013f;
  return x;
}

TEST(RmsNorm, RowMatchesFormula) {
  const size_t dim = 5;
  const std::vector<float> x = rows_of(2, dim), w = {1.0f, 0.5f, 2.0f, -1.0f, 0.25f};
  const float eps = 1e-5f;
  std::vector<float> out(x.size());
  rms_norm(x.data(), 2, dim, w.data(), eps, out.data());
  for (size_t t = 0; t < 2; ++t) {
    double ss = 0;
    for (size_t c = 0; c < dim; ++c) ss += double(x[t * dim + c]) * x[t * dim + c];
    const double r = 1.0 / std::sqrt(ss / dim + eps);
    for (size_t c = 0; c < dim; ++c) EXPECT_NEAR(out[t * dim + c], x[t * dim + c] * r * w[c], 1e-6) << t << " " << c;
  }
}

// Several chunks of uneven size (the grain is ~64k floats of rows), in place
// and out of place.
TEST(RmsNorm, ThreadsSplitRowsByteForByte) {
  const size_t n = 301, dim = 1536;
  const std::vector<float> x = rows_of(n, dim);
  std::vector<float> w(dim);
  for (size_t c = 0; c < dim; ++c) w[c] = 0.5f + static_cast<float>(c % 9) * 0.1f;
  std::vector<float> want(x.size());
  rms_norm(x.data(), n, dim, w.data(), 1e-5f, want.data());
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got(x.size(), -1.0f), in_place = x;
    rms_norm(x.data(), n, dim, w.data(), 1e-5f, got.data(), &pool);
    rms_norm(in_place.data(), n, dim, w.data(), 1e-5f, in_place.data(), &pool);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << threads;
    EXPECT_EQ(std::memcmp(in_place.data(), want.data(), want.size() * sizeof(float)), 0) << threads;
  }
}

}  // namespace
}  // namespace k3::kernels
