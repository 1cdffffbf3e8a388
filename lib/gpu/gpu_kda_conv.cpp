// GpuBackend's KDA short conv (shaders/kda_conv.comp): the taps go where a
// product's weights go (the first staging slot's buffer, idle between
// products), the window rows [carry, raw] and the outputs in the KDA
// recurrence's input and output buffers. A conv of n >= (K-1)/3 rows needs
// no more of those than the recurrence of the same rows (4 H*D + H floats a
// row), so the device plan's bound for the KDA buffers holds. Token slices
// that fit a binding go from the last down, as the CPU kernel's rows do:
// a slice reads raw rows below it that a later slice would overwrite.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.h"
#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// kda_conv.comp's push constants.
struct ConvShape {
  uint32_t channels, taps, n;
};
constexpr uint32_t kGroupChannels = 64;  // local_size_x
constexpr size_t kMaxGroups = 65535;     // Vulkan's least maxComputeWorkGroupCount

}  // namespace

bool GpuBackend::short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K) {
  // The shader's exact steps need float64 and int64.
  if (n == 0 || channels == 0 || K == 0 || channels > UINT32_MAX || K > UINT32_MAX || !device_->has_float64())
    return false;
  const size_t H = K - 1, row_bytes = channels * sizeof(float), limit = device_->max_binding_bytes();
  if (channels * K * sizeof(float) > limit || (H + 1) * row_bytes > limit) return false;
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running a KDA short conv (K3_GPU_FAIL_AFTER)");
  if (!kda_conv_) kda_conv_ = std::make_unique<ComputePipeline>(*device_, "kda_conv", 3, sizeof(ConvShape), 0);
  // The taps as FP32 bits (a BF16 value is the high half of its FP32 bits).
  grow(*stages_[0].weights, channels * K * sizeof(float));
  uint32_t* taps = static_cast<uint32_t*>(stages_[0].weights->data());
  for (size_t i = 0; i < channels * K; ++i) taps[i] = static_cast<uint32_t>(w[i]) << 16;
  upload_bytes_ += channels * K * sizeof(float);
  // The window's row s: the carry's rows, then raw's; the new carry is
  // rows n .. n+K-2, kept before the outputs overwrite them.
  auto window_row = [&](size_t s) { return s < H ? carry + s * channels : raw + (s - H) * channels; };
  std::vector<float> next(H * channels);
  for (size_t r = 0; r < H; ++r) std::memcpy(next.data() + r * channels, window_row(n + r), row_bytes);
  const size_t slice = std::min({n, limit / row_bytes - H, kMaxGroups});
  for (size_t t1 = n; t1 > 0;) {
    const size_t tn = std::min(slice, t1), t0 = t1 - tn;
    grow(*kda_in_, (tn + H) * row_bytes);
    grow(*kda_out_, tn * row_bytes);
    float* in = static_cast<float*>(kda_in_->data());
    for (size_t s = 0; s < tn + H; ++s) std::memcpy(in + s * channels, window_row(t0 + s), row_bytes);
    upload_bytes_ += (tn + H) * row_bytes;
    const ConvShape shape{static_cast<uint32_t>(channels), static_cast<uint32_t>(K), static_cast<uint32_t>(tn)};
    kda_conv_->run({kda_in_.get(), stages_[0].weights.get(), kda_out_.get()}, &shape,
                   static_cast<uint32_t>((channels + kGroupChannels - 1) / kGroupChannels), static_cast<uint32_t>(tn));
    std::memcpy(raw + t0 * channels, kda_out_->data(), tn * row_bytes);
    t1 = t0;
  }
  std::copy(next.begin(), next.end(), carry);
  ++kda_convs_;
  return true;
}

}  // namespace k3
