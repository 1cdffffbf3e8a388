// MLA's attention on the device (GpuBackend::latent_attention,
// shaders/latent_attention.comp) against the CPU kernels model/mla.cpp runs
// per (row, head): absorb_key_projection, latent_attention,
// expand_value_projection. Bit for bit (memcmp), on Mesa's lavapipe with the
// validation layer on; lavapipe flushes subnormals, so this checks the
// emulated roundings. The kernels are plain loops with no SIMD lanes, so
// one order serves every CPU target.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "gpu/vulkan_context.h"
#include "kernels/attention_scores.h"
#include "kernels/bf16.h"
#include "lib/synth_models.h"

namespace k3 {
namespace {

using test::open_lavapipe_device;

struct Heads {
  size_t heads, nope, rope, vdim, kvl;
};

// A layer's attention input: kv_b, the rows' queries, each sequence's cache
// and where each row sits.
struct Case {
  Heads g;
  std::vector<uint16_t> kv_b;
  std::vector<float> q;
  std::vector<std::vector<float>> caches;
  std::vector<size_t> row_cache, row_pos;

  kernels::LatentAttentionCall call(std::vector<const float*>& ptrs, std::vector<size_t>& positions, float* out) const {
    ptrs.clear();
    positions.clear();
    for (const auto& c : caches) {
      ptrs.push_back(c.data());
      positions.push_back(c.size() / (g.kvl + g.rope));
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(g.nope + g.rope));
    return {
        row_pos.size(), g.heads,     g.nope,           g.rope,        g.vdim,           g.kvl,          scale, q.data(),
        kv_b.data(),    ptrs.data(), positions.data(), caches.size(), row_cache.data(), row_pos.data(), out};
  }
};

// What model/mla.cpp computes per (row, head) on the CPU.
std::vector<float> on_cpu(const kernels::LatentAttentionCall& a) {
  std::vector<float> out(a.rows * a.heads * a.vdim), q_lat(a.kvl), ctx(a.kvl);
  const size_t stride = a.kvl + a.rope, kvb_rows = a.nope + a.vdim;
  for (size_t t = 0; t < a.rows; ++t) {
    const size_t npos = a.row_pos[t] + 1;
    std::vector<float> scores(npos);
    for (size_t h = 0; h < a.heads; ++h) {
      const float* qn = a.q + (t * a.heads + h) * (a.nope + a.rope);
      const uint16_t* w_uk = a.kv_b + h * kvb_rows * a.kvl;
      kernels::absorb_key_projection(w_uk, qn, a.nope, a.kvl, q_lat.data());
      kernels::latent_attention(q_lat.data(), qn + a.nope, a.caches[a.row_cache[t]], npos, stride, a.kvl, a.rope,
                                a.scale, scores.data(), ctx.data());
      kernels::expand_value_projection(w_uk + a.nope * a.kvl, ctx.data(), a.vdim, a.kvl,
                                       out.data() + (t * a.heads + h) * a.vdim);
    }
  }
  return out;
}

// Values over a wide range of exponents (a few subnormal, some zeros of
// both signs), scaled by `magnitude`.
std::vector<float> values(std::mt19937& rng, size_t count, float magnitude) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 63), shift(-12, 2);
  std::vector<float> v(count);
  for (float& x : v) {
    const int k = kind(rng);
    x = k == 0 ? 0.0f : k == 1 ? -0.0f : k == 2 ? unit(rng) * 1e-39f : std::ldexp(unit(rng), shift(rng)) * magnitude;
  }
  return v;
}

// Rows of `sequences` sequences, each `cached` positions before the pass
// and `fresh` rows in it (the causal rows see their own and earlier ones).
Case make_case(const Heads& g, std::mt19937& rng, const std::vector<std::pair<size_t, size_t>>& sequences,
               float magnitude) {
  Case c{g, {}, {}, {}, {}, {}};
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  c.kv_b.resize(g.heads * (g.nope + g.vdim) * g.kvl);
  for (uint16_t& w : c.kv_b) w = kernels::f32_to_bf16(unit(rng) * 0.25f);
  for (size_t s = 0; s < sequences.size(); ++s) {
    const auto [cached, fresh] = sequences[s];
    c.caches.push_back(values(rng, (cached + fresh) * (g.kvl + g.rope), magnitude));
    for (size_t r = 0; r < fresh; ++r) {
      c.row_cache.push_back(s);
      c.row_pos.push_back(cached + r);
    }
  }
  c.q = values(rng, c.row_pos.size() * g.heads * (g.nope + g.rope), magnitude);
  return c;
}

// The device's outputs equal the CPU kernels' (or, with `differ`, do not);
// `generations` names the caches for the device to keep (none: nothing kept).
void expect_device_equals_cpu(GpuBackend& gpu, const Case& c, const std::string& what,
                              const std::vector<uint64_t>& generations = {}, bool differ_expected = false) {
  std::vector<const float*> ptrs;
  std::vector<size_t> positions;
  std::vector<float> got(c.row_pos.size() * c.g.heads * c.g.vdim, -1.0f);
  kernels::LatentAttentionCall call = c.call(ptrs, positions, got.data());
  if (!generations.empty()) call.cache_generations = generations.data();
  const std::vector<float> want = on_cpu(call);
  ASSERT_TRUE(gpu.latent_attention(call)) << what;
  if (differ_expected) {
    EXPECT_NE(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << what;
    return;
  }
  size_t differ = 0, first = want.size();
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << want.size() << " outputs differ, first at " << first
                        << " (" << (first < want.size() ? want[first] : 0) << " vs "
                        << (first < got.size() ? got[first] : 0) << ")";
}

TEST(GpuLatentAttention, EqualsTheCpuKernelsBitForBit) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  ASSERT_TRUE(VulkanInstance::validation_enabled());
  GpuBackend gpu(std::move(device), 16, false);
  std::mt19937 rng(39);
  // The tiny model's heads; odd widths (a head dim off the workgroup, kvl
  // past 64); two sequences in one call, one of them a pass's fresh rows
  // only; a context of several hundred positions.
  const Heads tiny{6, 16, 8, 16, 32}, odd{3, 5, 3, 7, 70};
  expect_device_equals_cpu(gpu, make_case(tiny, rng, {{300, 5}, {0, 4}}, 1.0f), "tiny heads, 2 sequences");
  expect_device_equals_cpu(gpu, make_case(odd, rng, {{37, 3}}, 1.0f), "odd widths");
  // Large magnitudes: scores far apart, so e^x meets gradual underflow and
  // zero; and some that overflow to inf (their rows go NaN, on both sides).
  expect_device_equals_cpu(gpu, make_case(tiny, rng, {{60, 2}}, 40.0f), "scores 1e3 apart");
  expect_device_equals_cpu(gpu, make_case(odd, rng, {{20, 2}}, 1e19f), "overflowing scores");
  // All zeros: every score 0, equal weights.
  Case zeros = make_case(tiny, rng, {{10, 2}}, 0.0f);
  expect_device_equals_cpu(gpu, zeros, "zeros");
  EXPECT_EQ(gpu.attention_calls(), 5u);
  EXPECT_EQ(gpu.counters().attention, 5u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Rows appended to a cache (a sequence's next chunk) under the same
// generation: only they are copied, and the results are the CPU's. A
// generation the device has not seen is copied whole; one it has, whose
// earlier rows changed without a new name, is not (the host's contract:
// model/sequence_state.h), which shows the copy is what the shader reads.
// Where the caches have a device-local twin, every row copied goes into it
// once (and the host-visible buffer holds only a call's new rows).
void expect_kept_caches_copy_only_the_rows_appended(GpuBackend& gpu) {
  const bool twin = gpu.counters().device_local_staging;
  ASSERT_TRUE(gpu.keep_latent_caches(2, 64));
  std::mt19937 rng(41);
  const Heads g{2, 8, 4, 8, 32};
  const size_t row_bytes = (g.kvl + g.rope) * sizeof(float);
  // Two sequences: 20 + 4 and 10 + 3 rows, then each 5 more.
  Case c = make_case(g, rng, {{20, 4}, {10, 3}}, 1.0f);
  expect_device_equals_cpu(gpu, c, "first pass", {101, 202});
  EXPECT_EQ(gpu.counters().latent_upload_bytes, (24 + 13) * row_bytes);
  EXPECT_EQ(gpu.counters().latent_kept_bytes, 0u);
  Case next = make_case(g, rng, {{24, 5}, {13, 5}}, 1.0f);
  for (size_t s = 0; s < 2; ++s)  // the same earlier rows, new ones after them
    std::copy(c.caches[s].begin(), c.caches[s].end(), next.caches[s].begin());
  expect_device_equals_cpu(gpu, next, "appended rows", {101, 202});
  EXPECT_EQ(gpu.counters().latent_upload_bytes, (24 + 13 + 10) * row_bytes);
  EXPECT_EQ(gpu.counters().latent_kept_bytes, (24 + 13) * row_bytes);
  EXPECT_EQ(gpu.counters().latent_twin_bytes, twin ? (24 + 13 + 10) * row_bytes : 0u);
  // An earlier row changed: under a new generation the device copies it all
  // and agrees; under the old one it keeps its stale copy.
  next.caches[0][3] += 1.0f;
  expect_device_equals_cpu(gpu, next, "stale rows kept under the old name", {101, 202}, true);
  expect_device_equals_cpu(gpu, next, "a new generation", {103, 202});
  EXPECT_EQ(gpu.counters().latent_upload_bytes, (24 + 13 + 10 + 29) * row_bytes);
  // A third sequence evicts the least recently used copy; all agree.
  Case third = make_case(g, rng, {{6, 2}}, 1.0f);
  expect_device_equals_cpu(gpu, third, "a third sequence", {304});
  expect_device_equals_cpu(gpu, next, "after an eviction", {103, 202});
  EXPECT_EQ(gpu.counters().latent_twin_bytes, twin ? gpu.counters().latent_upload_bytes : 0u);
  // Longer than the slots: declined (the CPU runs it).
  Case longer = make_case(g, rng, {{64, 1}}, 1.0f);
  std::vector<const float*> ptrs;
  std::vector<size_t> positions;
  std::vector<float> out(g.heads * g.vdim);
  kernels::LatentAttentionCall call = longer.call(ptrs, positions, out.data());
  const uint64_t generation = 405;
  call.cache_generations = &generation;
  EXPECT_FALSE(gpu.latent_attention(call));
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuLatentAttention, KeptCachesCopyOnlyTheRowsAppendedSince) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  GpuBackend gpu(std::move(device), 16, false);
  expect_kept_caches_copy_only_the_rows_appended(gpu);
}

// As on a discrete GPU without host-visible device-local memory (forced on
// lavapipe): the caches kept in a device-local twin, the shader reading it;
// and, not kept, a call's caches copied whole into it.
TEST(GpuLatentAttention, KeptCachesInADeviceLocalTwin) {
  setenv("K3_GPU_DEVICE_LOCAL_STAGING", "1", 1);
  auto device = open_lavapipe_device();
  unsetenv("K3_GPU_DEVICE_LOCAL_STAGING");
  ASSERT_TRUE(device);
  GpuBackend gpu(std::move(device), 16, false);
  ASSERT_TRUE(gpu.counters().device_local_staging);
  expect_kept_caches_copy_only_the_rows_appended(gpu);
  EXPECT_FALSE(gpu.keep_latent_caches(0, 0));
  std::mt19937 rng(43);
  const Heads odd{3, 5, 3, 7, 70};
  const uint64_t before = gpu.counters().latent_twin_bytes;
  expect_device_equals_cpu(gpu, make_case(odd, rng, {{37, 3}, {0, 2}}, 1.0f), "twin: two caches copied whole");
  EXPECT_EQ(gpu.counters().latent_twin_bytes - before, (40 + 2) * (odd.kvl + odd.rope) * sizeof(float));
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuLatentAttention, K3HeadsBitForBit) {
  const ModelConfig k3 = test::k3_synth_config("latent_attention_k3");
  const Heads g{static_cast<size_t>(k3.mla_num_heads), static_cast<size_t>(k3.qk_nope_head_dim),
                static_cast<size_t>(k3.qk_rope_head_dim), static_cast<size_t>(k3.v_head_dim),
                static_cast<size_t>(k3.kv_lora_rank)};
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  GpuBackend gpu(std::move(device), 16, false);
  std::mt19937 rng(7);
  // A row deep in a 256-position context (lavapipe emulates every rounding:
  // kept short).
  expect_device_equals_cpu(gpu, make_case(g, rng, {{255, 1}}, 1.0f), "K3's heads");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
