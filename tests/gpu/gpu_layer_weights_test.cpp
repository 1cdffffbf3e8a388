// A layer's weights kept on the device across a chunk's sub-batches
// (ComputeBackend::begin_layer_weights, lib/gpu/gpu_layer_weights.cpp), on
// Mesa's lavapipe with the validation layer on: products on kept weights
// equal the CPU kernels bit for bit (BF16 and MXFP4 at K3's widths from
// k3_reference_config, a matrix kept in several row slices), each matrix is uploaded once per span, a budget
// keeps whole matrices in use order and uploads the rest per call, and a
// new span never reuses what an earlier one kept, even at the same pointer.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "gpu/vulkan_context.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::open_lavapipe_device;
using test::random_bytes;

// Stages of 4 KiB: a matrix goes, and is kept, in row slices of at most
// that (one row where a row is larger), as one beyond a binding would be.
constexpr size_t kStageBytes = 4096;

size_t slices(size_t rows, size_t row_bytes) {
  const size_t slice_rows = std::max<size_t>(1, kStageBytes / row_bytes);
  return (rows + slice_rows - 1) / slice_rows;
}

std::unique_ptr<GpuBackend> sliced_backend() {
  setenv("K3_GPU_STAGE_BYTES", "4096", 1);
  auto gpu = std::make_unique<GpuBackend>(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  unsetenv("K3_GPU_STAGE_BYTES");
  return gpu;
}

struct Bf16Product {
  std::vector<uint16_t> w;
  size_t rows, cols;
};

Bf16Product random_bf16(std::mt19937& rng, size_t rows, size_t cols) {
  Bf16Product p{std::vector<uint16_t>(rows * cols), rows, cols};
  const std::vector<float> f = floats_over_exponents(rng, rows * cols, -8, 8);
  for (size_t i = 0; i < f.size(); ++i) p.w[i] = kernels::f32_to_bf16(f[i]);
  return p;
}

// The device's product (which must take it) against the CPU kernel's.
void expect_bf16(GpuBackend& gpu, const uint16_t* w, size_t rows, size_t cols, const std::vector<float>& x, size_t n,
                 const std::string& what) {
  std::vector<float> want(n * rows), got(n * rows);
  kernels::matmul_bf16(w, rows, cols, x.data(), n, want.data(), nullptr);
  ASSERT_TRUE(gpu.bf16(w, rows, cols, x.data(), n, got.data())) << what;
  expect_same_bits(want, got, what);
}

TEST(GpuLayerWeights, KeptBf16SlicesEqualTheCpuAndUploadOnce) {
  std::mt19937 rng(61);
  auto gpu = sliced_backend();
  // K3's hidden width (a trunk product's input): 67 slices of one row.
  const Bf16Product a = random_bf16(rng, 67, static_cast<size_t>(k3_reference_config().hidden_size));
  const uint64_t bytes = a.w.size() * 2;
  gpu->begin_layer_weights();
  for (size_t n : {3u, 5u, 1u})  // three sub-batches of the layer
    expect_bf16(*gpu, a.w.data(), a.rows, a.cols, floats_over_exponents(rng, n * a.cols, -20, 20), n, "bf16 kept");
  const kernels::ComputeBackendCounters c = gpu->counters();
  EXPECT_EQ(c.weight_upload_bytes, bytes) << "uploaded once";
  EXPECT_EQ(c.weight_kept_bytes, bytes);
  EXPECT_EQ(c.weight_reused_bytes, 2 * bytes) << "the later sub-batches found it kept";
  EXPECT_EQ(c.dispatches, 3 * slices(a.rows, 2 * a.cols));
  // Closed: no product keeps or finds anything.
  gpu->end_layer_weights();
  expect_bf16(*gpu, a.w.data(), a.rows, a.cols, floats_over_exponents(rng, 2 * a.cols, -20, 20), 2, "bf16 closed");
  EXPECT_EQ(gpu->counters().weight_upload_bytes, 2 * bytes);
  EXPECT_EQ(gpu->counters().weight_kept_bytes, bytes);
  EXPECT_EQ(gpu->counters().weight_reused_bytes, 2 * bytes);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Where the device stages into device-local memory (forced on lavapipe), a
// kept slice's fill is that copy, and the later sub-batches copy nothing.
TEST(GpuLayerWeights, KeptSlicesStagedIntoDeviceLocalMemory) {
  std::mt19937 rng(65);
  setenv("K3_GPU_DEVICE_LOCAL_STAGING", "1", 1);
  auto gpu = sliced_backend();
  unsetenv("K3_GPU_DEVICE_LOCAL_STAGING");
  const Bf16Product a = random_bf16(rng, 9, 1024);  // 5 slices of 2 rows
  gpu->begin_layer_weights();
  for (size_t n : {2u, 3u})
    expect_bf16(*gpu, a.w.data(), a.rows, a.cols, floats_over_exponents(rng, n * a.cols, -20, 20), n, "local kept");
  EXPECT_TRUE(gpu->counters().device_local_staging);
  EXPECT_EQ(gpu->counters().device_local_copies, slices(a.rows, 2 * a.cols)) << "each slice copied once";
  EXPECT_EQ(gpu->counters().dispatches, 2 * slices(a.rows, 2 * a.cols));
  EXPECT_EQ(gpu->counters().weight_reused_bytes, a.w.size() * 2);
  gpu->end_layer_weights();
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuLayerWeights, KeptMxfp4EqualsTheCpuAndUploadsOnce) {
  std::mt19937 rng(62);
  auto gpu = sliced_backend();
  // K3's routed experts' input width (the latent): 2 rows a slice.
  const size_t rows = 40, cols = static_cast<size_t>(k3_reference_config().routed_expert_hidden_size);
  const std::vector<uint8_t> packed = random_bytes(rng, rows * cols / 2, 0, 255);
  const std::vector<uint8_t> scales = random_bytes(rng, rows * cols / 32, 110, 135);
  gpu->begin_layer_weights();
  for (size_t n : {4u, 2u}) {
    const std::vector<float> x = floats_over_exponents(rng, n * cols, -20, 20);
    std::vector<float> want(n * rows), got(n * rows);
    kernels::matmul_mxfp4(packed.data(), scales.data(), rows, cols, x.data(), n, want.data(), nullptr);
    ASSERT_TRUE(gpu->mxfp4(packed.data(), scales.data(), rows, cols, x.data(), n, got.data()));
    expect_same_bits(want, got, "mxfp4 kept");
  }
  const uint64_t bytes = packed.size() + scales.size();
  EXPECT_EQ(gpu->counters().weight_upload_bytes, bytes);
  EXPECT_EQ(gpu->counters().weight_kept_bytes, bytes);
  EXPECT_EQ(gpu->counters().weight_reused_bytes, bytes);
  gpu->end_layer_weights();
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuLayerWeights, ANewLayerNeverReusesTheSamePointer) {
  std::mt19937 rng(63);
  auto gpu = sliced_backend();
  Bf16Product a = random_bf16(rng, 33, 256);
  gpu->begin_layer_weights();
  expect_bf16(*gpu, a.w.data(), a.rows, a.cols, floats_over_exponents(rng, 3 * a.cols, -20, 20), 3, "layer 0");
  // The next layer's weights in the same buffer (a streamed trunk's reuse).
  const uint16_t* at = a.w.data();
  const std::vector<uint16_t> next = random_bf16(rng, a.rows, a.cols).w;
  std::copy(next.begin(), next.end(), a.w.begin());
  ASSERT_EQ(a.w.data(), at);
  gpu->begin_layer_weights();
  expect_bf16(*gpu, a.w.data(), a.rows, a.cols, floats_over_exponents(rng, 3 * a.cols, -20, 20), 3, "layer 1");
  EXPECT_EQ(gpu->counters().weight_kept_bytes, 2 * a.w.size() * 2);
  EXPECT_EQ(gpu->counters().weight_reused_bytes, 0u);
  // Within a layer, the same pointer read as another shape is another
  // matrix: 8 x 256, then 8 x 128 (one slice of 8 rows each).
  gpu->begin_layer_weights();
  expect_bf16(*gpu, a.w.data(), 8, 256, floats_over_exponents(rng, 2 * 256, -20, 20), 2, "8 x 256");
  expect_bf16(*gpu, a.w.data(), 8, 128, floats_over_exponents(rng, 2 * 128, -20, 20), 2, "the same bytes, 8 x 128");
  EXPECT_EQ(gpu->counters().weight_reused_bytes, 0u);
  gpu->end_layer_weights();
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuLayerWeights, ABudgetKeepsWholeMatricesInUseOrder) {
  std::mt19937 rng(64);
  auto gpu = sliced_backend();
  const Bf16Product a = random_bf16(rng, 20, 512), b = random_bf16(rng, 20, 512);
  // a's slices (10 of 2 rows, each with the word past it): b's do not fit too.
  const uint64_t a_buffers = 10 * (2 * 512 * 2 + 4);
  gpu->limit_layer_weights(a_buffers + a_buffers / 2);
  gpu->begin_layer_weights();
  for (int sub = 0; sub < 2; ++sub) {
    expect_bf16(*gpu, a.w.data(), a.rows, a.cols, floats_over_exponents(rng, 2 * a.cols, -20, 20), 2, "a kept");
    expect_bf16(*gpu, b.w.data(), b.rows, b.cols, floats_over_exponents(rng, 2 * b.cols, -20, 20), 2, "b per call");
  }
  const uint64_t bytes = a.w.size() * 2;
  EXPECT_EQ(gpu->counters().weight_kept_bytes, bytes) << "a only";
  EXPECT_EQ(gpu->counters().weight_reused_bytes, bytes);
  EXPECT_EQ(gpu->counters().weight_upload_bytes, 3 * bytes) << "a once, b twice";
  gpu->end_layer_weights();
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
