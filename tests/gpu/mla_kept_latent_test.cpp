// MLA's latent caches kept on the device between passes (model/mla.cpp
// through GpuBackend, gpu_attention.cpp): a sequence's rows appended pass
// after pass, then cut (mla_truncate: rejected drafts, a stopped pass put
// back) and grown again with other rows, and a copy of a cache grown apart
// from its original: each pass's output equals the CPU's bit for bit
// (memcmp), on Mesa's lavapipe with the validation layer on. Without the
// new generation that mla_truncate and a copy give, the device would attend
// over its stale copy of the cut rows. And the generation rules themselves
// (model/sequence_state.h).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "gpu/vulkan_context.h"
#include "kernels/compute_backend.h"
#include "kernels/matmul.h"
#include "model/mla.h"
#include "model/random_weights.h"

namespace k3 {
namespace {

struct Layer : test::RandomMlaLayer {
  static constexpr int hidden = 32, heads = 2, nope = 8, rope = 4, vd = 8, ql = 16, kvl = 32;
  Layer() : RandomMlaLayer({hidden, heads, nope, rope, vd, ql, kvl}, true, 5) {}
};

std::vector<float> rows(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n * Layer::hidden);
  for (float& v : x) v = d(rng);
  return x;
}

// One pass of `x` over `cache`, on the device when `gpu` is given.
std::vector<float> pass(const Layer& l, MlaCache& cache, const std::vector<float>& x, GpuBackend* gpu) {
  const size_t n = x.size() / Layer::hidden;
  std::vector<float> out(n * Layer::hidden);
  kernels::ScopedComputeBackend device(gpu);
  mla_forward(l.c, l.w, cache, x.data(), n, out.data(), nullptr);
  return out;
}

void expect_same(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << what;
}

TEST(MlaKeptLatent, CutAndCopiedCachesEqualTheCpuPassAfterPass) {
  const Layer l;
  auto device = test::open_lavapipe_device();
  ASSERT_TRUE(device);
  GpuBackend gpu(std::move(device), kernels::kernel_target_lanes(), false);
  ASSERT_TRUE(gpu.keep_latent_caches(2, 64));
  std::mt19937 rng(11);
  MlaCache cpu, dev;
  // Appended pass after pass: later passes copy only their own rows.
  for (size_t n : {12, 6}) {
    const std::vector<float> x = rows(rng, n);
    expect_same(pass(l, cpu, x, nullptr), pass(l, dev, x, &gpu), "appended " + std::to_string(n));
  }
  const size_t row_bytes = (Layer::kvl + Layer::rope) * sizeof(float);
  EXPECT_EQ(gpu.counters().latent_upload_bytes, 18 * row_bytes);
  EXPECT_EQ(gpu.counters().latent_kept_bytes, 12 * row_bytes);
  EXPECT_EQ(gpu.counters().attention, 2u);
  // Cut to 5 rows, then grown past the device's 18 with other rows.
  mla_truncate(l.c, cpu, 5);
  mla_truncate(l.c, dev, 5);
  const std::vector<float> x = rows(rng, 16);
  expect_same(pass(l, cpu, x, nullptr), pass(l, dev, x, &gpu), "cut to 5, then 16 other rows");
  // A copy grown apart from its original (a conversation restored from a
  // kept state while the original went on): both agree with the CPU.
  // The original grows past the copy, so a copy sharing its name would
  // leave the copy's rows on the device among the original's.
  MlaCache cpu_copy = cpu, dev_copy = dev;
  const std::vector<float> y = rows(rng, 3), z = rows(rng, 14);
  expect_same(pass(l, cpu_copy, y, nullptr), pass(l, dev_copy, y, &gpu), "the copy, grown");
  expect_same(pass(l, cpu, z, nullptr), pass(l, dev, z, &gpu), "the original, grown further");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(MlaKeptLatent, AGenerationNamesRowsOnlyWhileTheyAreAppendedTo) {
  const Layer l;
  MlaCache a;
  const uint64_t first = a.generation;
  EXPECT_NE(MlaCache().generation, first);  // every new cache its own
  a.latent.resize(10 * (Layer::kvl + Layer::rope));
  EXPECT_EQ(a.generation, first);  // appending keeps it
  mla_truncate(l.c, a, 10);
  EXPECT_EQ(a.generation, first);  // nothing cut
  mla_truncate(l.c, a, 4);
  const uint64_t cut = a.generation;
  EXPECT_NE(cut, first);
  MlaCache copy = a;
  EXPECT_NE(copy.generation, cut);
  MlaCache assigned;
  assigned = a;
  EXPECT_NE(assigned.generation, cut);
  EXPECT_NE(assigned.generation, copy.generation);
  MlaCache moved = std::move(a);
  EXPECT_EQ(moved.generation, cut);  // the same rows, moved
  EXPECT_NE(a.generation, cut);      // the moved-from one is another cache
  EXPECT_TRUE(a.latent.empty());
  LayerState layer;
  layer.mla = std::move(moved);
  EXPECT_EQ(layer.mla.generation, cut);
  EXPECT_NE(moved.generation, cut);
}

}  // namespace
}  // namespace k3
