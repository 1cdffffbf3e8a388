// k3-doctor's word on a Vulkan device (doctor/gpu_advice.h): --gpu is
// recommended only for a fused device, not on the CPU's own cores, faster
// than the CPU's prefill, and then with the first-token forecast scaled by
// the rates; each refusal says why.
#include "doctor/gpu_advice.h"

#include <gtest/gtest.h>

namespace k3::doctor {
namespace {

GpuDeviceInfo device(const std::string& type, bool fused, double gflops) {
  GpuDeviceInfo d;
  d.name = "test device";
  d.type = type;
  d.fma_fused = fused;
  d.float64 = true;
  d.fp32_gflops = gflops;
  return d;
}

// CPU: 500 GFLOP/s; the forecast's parts: 100 s reading, 400 s computing.
constexpr double kCpu = 500e9, kRead = 100, kCompute = 400;

TEST(GpuAdvice, AFasterFusedGpuIsRecommendedWithItsForecast) {
  const GpuVerdict v = judge_gpu_device(device("discrete", true, 20000), kCpu, kRead, kCompute);
  EXPECT_TRUE(v.recommended);
  EXPECT_TRUE(v.why_not.empty());
  // 400 s x 500 / 20000 = 10 s of compute, the reading unchanged.
  EXPECT_DOUBLE_EQ(v.first_token_seconds, 110.0);
}

TEST(GpuAdvice, NoRecommendationSaysWhy) {
  const GpuVerdict emulated = judge_gpu_device(device("discrete", false, 20000), kCpu, kRead, kCompute);
  EXPECT_FALSE(emulated.recommended);
  EXPECT_NE(emulated.why_not.find("not fused"), std::string::npos) << emulated.why_not;
  EXPECT_EQ(emulated.first_token_seconds, 0.0);

  const GpuVerdict cpu = judge_gpu_device(device("cpu", true, 20000), kCpu, kRead, kCompute);
  EXPECT_FALSE(cpu.recommended);
  EXPECT_NE(cpu.why_not.find("own cores"), std::string::npos) << cpu.why_not;

  // Exactly the CPU's rate does not beat it; a little more does.
  const GpuVerdict equal = judge_gpu_device(device("integrated", true, 500), kCpu, kRead, kCompute);
  EXPECT_FALSE(equal.recommended);
  EXPECT_NE(equal.why_not.find("does not beat"), std::string::npos) << equal.why_not;
  EXPECT_TRUE(judge_gpu_device(device("integrated", true, 501), kCpu, kRead, kCompute).recommended);

  GpuDeviceInfo unusable = device("discrete", true, 20000);
  unusable.unusable_reason = "no compute queue";
  EXPECT_EQ(judge_gpu_device(unusable, kCpu, kRead, kCompute).why_not, "no compute queue");
}

TEST(GpuAdvice, TheFastestRecommendedDeviceIsNamed) {
  std::vector<GpuDeviceInfo> devices = {device("integrated", true, 2000), device("discrete", false, 90000),
                                        device("discrete", true, 30000), device("cpu", true, 50000)};
  std::vector<GpuVerdict> verdicts;
  for (const GpuDeviceInfo& d : devices) verdicts.push_back(judge_gpu_device(d, kCpu, kRead, kCompute));
  EXPECT_EQ(best_gpu_device(devices, verdicts), 2);
  devices.resize(2);
  verdicts.resize(2);
  EXPECT_EQ(best_gpu_device(devices, verdicts), 0);
  verdicts[0].recommended = false;
  EXPECT_EQ(best_gpu_device(devices, verdicts), -1);
}

}  // namespace
}  // namespace k3::doctor
