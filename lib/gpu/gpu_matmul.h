// The matrix products of kernels/matmul.h on a Vulkan device, with the CPU
// kernels' bits: one invocation per output, its accumulators in the order of
// this machine's CPU target (kernel_target_lanes()), fma fused by the device
// or emulated with one rounding. Inputs are copied into host-visible
// buffers per call and the output copied back; weights whose bytes exceed
// the device's largest binding go in row slices, activations in token slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/matmul_backend.h"

namespace k3 {

class ComputePipeline;
class VulkanBuffer;
class VulkanDevice;

class GpuMatmul : public kernels::MatmulBackend {
 public:
  // lanes: the summation order to follow (the CPU target's float lanes:
  // 8 for AVX2, 16 for AVX-512, the targets whose kernels use FMA; others
  // are refused). fma_fused: the probe's answer for this device.
  // budget_bytes: the most device memory the buffers may hold (0: no cap).
  GpuMatmul(std::unique_ptr<VulkanDevice> device, size_t lanes, bool fma_fused, uint64_t budget_bytes = 0);
  ~GpuMatmul() override;

  bool bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) override;
  bool mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
             float* Y) override;
  // gpukda4: the KDA recurrence (gpu_kda.cpp, shaders/kda_recurrence.comp).
  bool kda_recurrence(float* S, const float* q, const float* k, const float* v, const float* g, const float* beta,
                      size_t heads, size_t dim, size_t n, float* o) override;

  std::string describe() const override;
  kernels::MatmulBackendCounters counters() const override;

  // Products run on the device and bytes copied to it, so far.
  uint64_t products() const { return products_; }
  uint64_t upload_bytes() const { return upload_bytes_; }
  uint64_t peak_bytes() const { return peak_bytes_; }
  bool fma_fused() const { return fma_fused_; }
  VulkanDevice& device() { return *device_; }

 private:
  // One product in row slices of at most `slice_rows` rows and token slices
  // that fit a binding; `upload_rows(r0, r1)` fills the weight buffers for
  // rows [r0, r1).
  template <class Upload>
  void run(ComputePipeline& pipeline, bool mx, size_t rows, size_t cols, size_t row_bytes, const float* X, size_t n,
           float* Y, Upload upload_rows);
  // Grows `buffer` to `bytes`, within the budget (Error(kResource) naming
  // kGpuMbSetting beyond it), and keeps the peak of all four.
  void grow(VulkanBuffer& buffer, size_t bytes);

  std::unique_ptr<VulkanDevice> device_;
  size_t lanes_;
  bool fma_fused_;
  std::unique_ptr<ComputePipeline> bf16_, mxfp4_;
  std::unique_ptr<VulkanBuffer> weights_, scales_, x_, y_;
  uint64_t products_ = 0, upload_bytes_ = 0, peak_bytes_ = 0, budget_bytes_ = 0;
  // Tests: at this product the device is reported lost (K3_GPU_FAIL_AFTER),
  // or out of memory (K3_GPU_OUT_OF_MEMORY_AFTER), as a driver would.
  uint64_t fail_after_ = UINT64_MAX, out_of_memory_after_ = UINT64_MAX;

  // gpukda4: the KDA recurrence's pipeline (made at its first call), the
  // state of the heads, its token inputs and outputs; recurrences run.
  std::unique_ptr<ComputePipeline> kda_;
  std::unique_ptr<VulkanBuffer> kda_state_, kda_in_, kda_out_;
  uint64_t kda_recurrences_ = 0;
};

}  // namespace k3
