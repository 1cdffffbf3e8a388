// Scalar references for the SIMD matrix products: the plainest loops, one
// sequential FP32 sum per output, so tests can check the fast paths.
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "kernels/mxfp4.h"

namespace k3::kernels {

void matmul_bf16_scalar(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) {
  for (size_t r = 0; r < rows; ++r) {
    const uint16_t* w = W + r * cols;
    for (size_t t = 0; t < n; ++t) {
      const float* x = X + t * cols;
      float acc = 0.0f;
      for (size_t c = 0; c < cols; ++c) acc += bf16_to_f32(w[c]) * x[c];
      Y[t * rows + r] = acc;
    }
  }
}

void matmul_mxfp4_scalar(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X,
                         size_t n, float* Y) {
  const size_t groups = cols / kMxfp4Group;
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* p = packed + r * (cols / 2);
    const uint8_t* s = scales + r * groups;
    for (size_t t = 0; t < n; ++t) {
      const float* x = X + t * cols;
      float acc = 0.0f;
      for (size_t c = 0; c < cols; c += 2) {
        const float scale = mxfp4_scale_value(s[c / kMxfp4Group]);
        const uint8_t b = p[c / 2];
        acc += kMxfp4CodeValues[b & 15] * scale * x[c];
        acc += kMxfp4CodeValues[b >> 4] * scale * x[c + 1];
      }
      Y[t * rows + r] = acc;
    }
  }
}

}  // namespace k3::kernels
