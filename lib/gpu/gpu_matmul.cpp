#include "gpu/gpu_matmul.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/setting_spelling.h"
#include "gpu/compute_pipeline.h"
#include "gpu/gpu.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// The shaders' push constants (matmul_bf16.comp, matmul_mxfp4.comp).
struct Shape {
  uint32_t rows, cols, n, lanes, out_rows, row_base;
};
constexpr uint32_t kGroupRows = 64;  // local_size_x

uint32_t u32(size_t v, const char* what) {
  if (v > UINT32_MAX) throw Error(ExitCode::kResource, std::string("gpu: ") + what + " is too large for the device");
  return static_cast<uint32_t>(v);
}

}  // namespace

GpuMatmul::GpuMatmul(std::unique_ptr<VulkanDevice> device, size_t lanes, bool fma_fused, uint64_t budget_bytes)
    : device_(std::move(device)), lanes_(lanes), fma_fused_(fma_fused), budget_bytes_(budget_bytes) {
  if (lanes_ != 8 && lanes_ != 16)
    throw Error(ExitCode::kResource, "this CPU's matrix products (" + std::to_string(lanes_) +
                                         "-lane vectors, no FMA) have no device shader yet; the device follows the "
                                         "AVX2 and AVX-512 kernels");
  if (!fma_fused_ && !device_->has_float64())
    throw Error(ExitCode::kResource, device_->name() +
                                         "): its fma() is not fused and it lacks shaderFloat64/shaderInt64 to "
                                         "emulate one, so its products cannot equal the CPU's");
  if (const char* fail = std::getenv("K3_GPU_FAIL_AFTER")) fail_after_ = std::strtoull(fail, nullptr, 10);
  if (const char* oom = std::getenv("K3_GPU_OUT_OF_MEMORY_AFTER"))
    out_of_memory_after_ = std::strtoull(oom, nullptr, 10);
  const uint32_t native = fma_fused_ ? 1 : 0;
  bf16_ = std::make_unique<ComputePipeline>(*device_, "matmul_bf16", 3, sizeof(Shape), native);
  mxfp4_ = std::make_unique<ComputePipeline>(*device_, "matmul_mxfp4", 4, sizeof(Shape), native);
  weights_ = std::make_unique<VulkanBuffer>(*device_);
  scales_ = std::make_unique<VulkanBuffer>(*device_);
  x_ = std::make_unique<VulkanBuffer>(*device_);
  y_ = std::make_unique<VulkanBuffer>(*device_);
  kda_state_ = std::make_unique<VulkanBuffer>(*device_);
  kda_in_ = std::make_unique<VulkanBuffer>(*device_);
  kda_out_ = std::make_unique<VulkanBuffer>(*device_);
}

GpuMatmul::~GpuMatmul() = default;

void GpuMatmul::grow(VulkanBuffer& buffer, size_t bytes) {
  bytes = std::max<size_t>(bytes, 16);  // VulkanBuffer::reserve's smallest
  if (bytes <= buffer.size()) return;
  uint64_t held = 0;
  for (const auto* b :
       {weights_.get(), scales_.get(), x_.get(), y_.get(), kda_state_.get(), kda_in_.get(), kda_out_.get()})
    held += b->size();
  const uint64_t after = held - buffer.size() + bytes;
  if (budget_bytes_ > 0 && after > budget_bytes_)
    throw Error(ExitCode::kResource, "gpu " + std::to_string(device_->index()) + ": a matrix product needs " +
                                         std::to_string(after) + " bytes of device memory, more than " +
                                         spelled(kGpuMbSetting) + " allows (" + std::to_string(budget_bytes_) +
                                         " bytes)");
  buffer.reserve(bytes);
  peak_bytes_ = std::max(peak_bytes_, after);
}

template <class Upload>
void GpuMatmul::run(ComputePipeline& pipeline, bool mx, size_t rows, size_t cols, size_t row_bytes, const float* X,
                    size_t n, float* Y, Upload upload_rows) {
  // Room for the word the shaders may read past a slice's last byte.
  const size_t limit = device_->max_binding_bytes() - 16;
  const size_t slice_rows = std::min(rows, std::max<size_t>(1, limit / std::max<size_t>(1, row_bytes)));
  const size_t token_bytes = std::max(cols, slice_rows) * sizeof(float);
  const size_t slice_tokens = std::min(n, std::max<size_t>(1, limit / token_bytes));
  if (row_bytes > limit || token_bytes > limit)
    throw Error(ExitCode::kResource, "gpu: a matrix row of " + std::to_string(cols) +
                                         " columns does not fit the device's largest buffer binding");
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running a matrix product (K3_GPU_FAIL_AFTER)");
  if (products_ >= out_of_memory_after_)
    vk_check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating a product's buffers (K3_GPU_OUT_OF_MEMORY_AFTER)");
  for (size_t r0 = 0; r0 < rows; r0 += slice_rows) {
    const size_t r1 = std::min(rows, r0 + slice_rows);
    upload_rows(r0, r1);
    for (size_t t0 = 0; t0 < n; t0 += slice_tokens) {
      const size_t tn = std::min(slice_tokens, n - t0);
      grow(*x_, tn * cols * sizeof(float));
      std::memcpy(x_->data(), X + t0 * cols, tn * cols * sizeof(float));
      upload_bytes_ += tn * cols * sizeof(float);
      grow(*y_, tn * (r1 - r0) * sizeof(float));
      const Shape shape{u32(r1 - r0, "a row slice"),   u32(cols, "cols"),           u32(tn, "a token slice"),
                        static_cast<uint32_t>(lanes_), u32(r1 - r0, "a row slice"), 0};
      std::vector<const VulkanBuffer*> buffers = {weights_.get()};
      if (mx) buffers.push_back(scales_.get());
      buffers.push_back(x_.get());
      buffers.push_back(y_.get());
      pipeline.run(buffers, &shape, u32((r1 - r0 + kGroupRows - 1) / kGroupRows, "rows"), u32(tn, "tokens"));
      const float* out = static_cast<const float*>(y_->data());
      for (size_t t = 0; t < tn; ++t) std::memcpy(Y + (t0 + t) * rows + r0, out + t * (r1 - r0), (r1 - r0) * 4);
    }
  }
  ++products_;
}

bool GpuMatmul::bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) {
  if (rows == 0 || n == 0 || cols == 0) return false;
  run(*bf16_, false, rows, cols, cols * sizeof(uint16_t), X, n, Y, [&](size_t r0, size_t r1) {
    const size_t bytes = (r1 - r0) * cols * sizeof(uint16_t);
    grow(*weights_, bytes + 4);  // the shader reads whole words
    std::memcpy(weights_->data(), W + r0 * cols, bytes);
    upload_bytes_ += bytes;
  });
  return true;
}

bool GpuMatmul::mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                      float* Y) {
  if (rows == 0 || n == 0 || cols == 0 || cols % 32 != 0) return false;
  run(*mxfp4_, true, rows, cols, cols / 2, X, n, Y, [&](size_t r0, size_t r1) {
    const size_t bytes = (r1 - r0) * (cols / 2), scale_bytes = (r1 - r0) * (cols / 32);
    grow(*weights_, bytes + 4);
    grow(*scales_, scale_bytes + 4);
    std::memcpy(weights_->data(), packed + r0 * (cols / 2), bytes);
    std::memcpy(scales_->data(), scales + r0 * (cols / 32), scale_bytes);
    upload_bytes_ += bytes + scale_bytes;
  });
  return true;
}

kernels::MatmulBackendCounters GpuMatmul::counters() const {
  return {products_, upload_bytes_, peak_bytes_, kda_recurrences_};
}

std::string GpuMatmul::describe() const {
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.1f", static_cast<double>(upload_bytes_) / 1e6);
  return "gpu " + std::to_string(device_->index()) + " (" + device_->name() + "): " + std::to_string(products_) +
         " matrix products, " + std::to_string(kda_recurrences_) + " KDA recurrences, " + mb + " MB uploaded, fma " +
         (fma_fused_ ? "fused" : "emulated") + ", " + std::to_string(lanes_) + "-lane order";
}

}  // namespace k3
