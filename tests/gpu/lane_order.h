// The matrix products' reference for the device tests: Y = W x written out
// in the order of a CPU target with `lanes` float lanes (kernels/matmul.cpp).
// Column c of a row goes into accumulator c % lanes through `step(w, x,
// acc)` (a fused fma, as the CPU kernels do, or a multiply then an add, as a
// device without a fused fma does); an MXFP4 group's 32 columns come in the
// CPU's order (its evens, then its odds); the lanes are added in halves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/mxfp4.h"

namespace k3::test {

inline float lane_sum(std::vector<float> acc) {
  for (size_t h = acc.size() / 2; h >= 1; h /= 2)
    for (size_t i = 0; i < h; ++i) acc[i] = acc[i] + acc[i + h];
  return acc[0];
}

// Column p of a 32-column MXFP4 group g in the CPU's order.
inline size_t mx_column(size_t g, size_t p) { return g * 32 + (p < 16 ? 2 * p : 2 * (p - 16) + 1); }

template <class Step>
std::vector<float> bf16_lane_order(const std::vector<uint16_t>& w, size_t rows, size_t cols,
                                   const std::vector<float>& x, size_t n, size_t lanes, Step step) {
  std::vector<float> y(n * rows);
  for (size_t t = 0; t < n; ++t)
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> acc(lanes, 0.0f);
      for (size_t c = 0; c < cols; ++c)
        acc[c % lanes] = step(kernels::bf16_to_f32(w[r * cols + c]), x[t * cols + c], acc[c % lanes]);
      y[t * rows + r] = lane_sum(acc);
    }
  return y;
}

template <class Step>
std::vector<float> mxfp4_lane_order(const std::vector<uint8_t>& packed, const std::vector<uint8_t>& scales, size_t rows,
                                    size_t cols, const std::vector<float>& x, size_t n, size_t lanes, Step step) {
  std::vector<float> y(n * rows);
  for (size_t t = 0; t < n; ++t)
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> acc(lanes, 0.0f);
      for (size_t g = 0; g < cols / 32; ++g) {
        const float scale = kernels::mxfp4_scale_value(scales[r * (cols / 32) + g]);
        for (size_t p = 0; p < 32; ++p) {
          const uint8_t b = packed[r * (cols / 2) + g * 16 + (p & 15)];
          const float wv = kernels::kMxfp4CodeValues[p < 16 ? b & 15 : b >> 4] * scale;
          acc[p % lanes] = step(wv, x[t * cols + mx_column(g, p)], acc[p % lanes]);
        }
      }
      y[t * rows + r] = lane_sum(acc);
    }
  return y;
}

}  // namespace k3::test
