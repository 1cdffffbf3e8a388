// kernels::attn_res_mix on the device (shaders/attn_res_mix.comp) against
// the CPU kernel, bit for bit, on lavapipe with the validation layer on:
// K3's hidden size with the most values a mix gets there (every block state
// a pass closes and the partial sum, from k3_reference_config, the config
// k3-synth --preset k3 writes), small and odd widths, and edge rows (zero
// values, subnormals, values whose mean of squares overflows, inf, key
// weights so large that the softmax underflows to one-hot or its scores
// overflow to inf - inf). The kernel is scalar code compiled without
// contraction, the same order on every CPU target, so there is no lane count
// to vary.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "io/spill_file.h"
#include "kernels/attn_res.h"
#include "kernels/compute_backend.h"
#include "kernels/matmul.h"
#include "model/forward_scratch.h"
#include "model/k3_geometry.h"
#include "model/prefill_chunk.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::open_lavapipe_device;
using test::shared_gpu;

// The BF16 bits of each float (its top half).
std::vector<uint16_t> bf16_of(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &v[i], 4);
    out[i] = static_cast<uint16_t>(b >> 16);
  }
  return out;
}

// One mix's inputs: `blocks` block states and p, each [n, hidden].
struct Mix {
  size_t n, hidden;
  std::vector<std::vector<float>> blocks;
  std::vector<float> p, norm;
  std::vector<uint16_t> proj;
  std::vector<const float*> block_ptrs() const {
    std::vector<const float*> b;
    for (const auto& s : blocks) b.push_back(s.data());
    return b;
  }
};

Mix random_mix(std::mt19937& rng, size_t n, size_t hidden, size_t blocks, int lo, int hi) {
  Mix m{n, hidden, {}, floats_over_exponents(rng, n * hidden, lo, hi), floats_over_exponents(rng, hidden, -1, 1), {}};
  for (size_t j = 0; j < blocks; ++j) m.blocks.push_back(floats_over_exponents(rng, n * hidden, lo, hi));
  // Key weights of about 1/sqrt(hidden): scores of a few units, a softmax
  // that weighs several values.
  m.proj = bf16_of(floats_over_exponents(rng, hidden, -2 - static_cast<int>(std::log2(hidden)) / 2, 0));
  return m;
}

std::vector<float> on_cpu(const Mix& m, float eps) {
  std::vector<float> out(m.n * m.hidden);
  kernels::attn_res_mix(m.block_ptrs(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), eps, out.data());
  return out;
}

std::vector<float> on_gpu(GpuBackend& gpu, const Mix& m, float eps) {
  std::vector<float> out(m.n * m.hidden, -1.0f);
  const std::vector<const float*> b = m.block_ptrs();
  EXPECT_TRUE(
      gpu.attn_res_mix(b.data(), b.size(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), eps, out.data()));
  return out;
}

TEST(AttnResMix, EqualsTheCpuKernelAtK3ShapeBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  GpuBackend& gpu = shared_gpu();
  const uint64_t calls = gpu.counters().attn_res_mixes;
  std::mt19937 rng(39);
  // The most block states a K3 mix gets (the head's, and the last layers').
  const size_t blocks = residual_block_count(k3), hidden = static_cast<size_t>(k3.hidden_size);
  ASSERT_GT(blocks, 4u);
  const Mix m = random_mix(rng, 3, hidden, blocks, -8, 8);
  const auto want = on_cpu(m, k3.rms_norm_eps);
  expect_same_bits(want, on_gpu(gpu, m, k3.rms_norm_eps), "K3: hidden " + std::to_string(hidden));
  // The mix is not one-hot: the output is no single value row.
  EXPECT_NE(std::memcmp(want.data(), m.p.data(), hidden * 4), 0);
  EXPECT_EQ(gpu.counters().attn_res_mixes - calls, 1u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(AttnResMix, EqualsTheCpuKernelOnRandomShapes) {
  GpuBackend& gpu = shared_gpu();
  std::mt19937 rng(7);
  struct Case {
    size_t n, hidden, blocks;
  };
  // The tiny model's width, odd widths (a BF16 pair half used), no block
  // state (p alone), rows beyond one workgroup's invocations.
  for (const Case& c : {Case{70, 64, 4}, Case{5, 37, 2}, Case{3, 1, 3}, Case{4, 12, 0}, Case{2, 129, 9}}) {
    const std::string what =
        "n " + std::to_string(c.n) + " hidden " + std::to_string(c.hidden) + " blocks " + std::to_string(c.blocks);
    const Mix m = random_mix(rng, c.n, c.hidden, c.blocks, -20, 20);
    expect_same_bits(on_cpu(m, 1e-5f), on_gpu(gpu, m, 1e-5f), what);
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Edge rows, one per row of a 3-value mix (two block states and p):
//  0  p all zeros (its scale 1/sqrt(eps), its score 0), signed zeros
//  1  every value subnormal (squares far below FP32's least normal)
//  2  one value with 3e38 (its mean of squares overflows: scaled by 0)
//  3  one value with -inf (inf * 0: the CPU's default NaN, NaN throughout)
//  4  random values
// with the random key weights, then with key weights ~2^40 (scores ~2^40
// apart: the softmax underflows to one-hot) and +-3e38 (scores overflow to
// +-inf, inf - inf is NaN).
TEST(AttnResMix, EdgeRowsEqualTheCpuKernel) {
  GpuBackend& gpu = shared_gpu();
  const size_t hidden = 33, n = 5;
  std::mt19937 rng(5);
  Mix m = random_mix(rng, n, hidden, 2, -3, 3);
  for (size_t c = 0; c < hidden; ++c) {
    m.p[0 * hidden + c] = c % 2 ? 0.0f : -0.0f;
    for (auto* v : {&m.blocks[0], &m.blocks[1], &m.p}) (*v)[1 * hidden + c] = std::ldexp(static_cast<float>(c), -149);
  }
  m.blocks[1][2 * hidden + 5] = 3e38f;
  m.blocks[0][3 * hidden + 9] = -std::numeric_limits<float>::infinity();
  for (float eps : {1e-5f, std::ldexp(1.0f, -140)}) {
    SCOPED_TRACE("eps " + std::to_string(eps));
    const auto want = on_cpu(m, eps);
    expect_same_bits(want, on_gpu(gpu, m, eps), "edge rows");
    EXPECT_TRUE(std::isnan(want[3 * hidden])) << "the row with inf is NaN";
  }
  {
    Mix big = m;
    for (float& w : big.norm) w = std::ldexp(w, 40);
    const auto want = on_cpu(big, 1e-5f);
    expect_same_bits(want, on_gpu(gpu, big, 1e-5f), "key weights 2^40");
    bool one_hot = false;  // row 4 is one of its values' rows exactly
    for (const auto* v : {&big.blocks[0], &big.blocks[1], &big.p})
      if (std::memcmp(want.data() + 4 * hidden, v->data() + 4 * hidden, hidden * 4) == 0) one_hot = true;
    EXPECT_TRUE(one_hot) << "a softmax of scores 2^40 apart takes one value";
  }
  {
    Mix huge = m;
    for (size_t c = 0; c < hidden; ++c) {
      huge.norm[c] = c % 3 ? 3e38f : -3e38f;
      huge.proj[c] = 0x3f80;  // 1.0
    }
    const auto want = on_cpu(huge, 1e-5f);
    expect_same_bits(want, on_gpu(gpu, huge, 1e-5f), "key weights 3e38");
    EXPECT_TRUE(std::isnan(want[4 * hidden])) << "scores of +-inf: inf - inf";
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Through the seam: attn_res_mix_on_backend runs on the installed backend
// (its count rises) with the CPU's bits, and on the CPU without one; the
// device memory it holds is the formula's (gpu_attn_res_words).
TEST(AttnResMix, RunsThroughTheSeamWithinTheFormula) {
  GpuBackend gpu(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  ASSERT_EQ(gpu.peak_bytes(), 0u);
  std::mt19937 rng(11);
  const Mix m = random_mix(rng, 9, 48, 3, -4, 4);
  std::vector<float> out(m.n * m.hidden);
  {
    kernels::ScopedComputeBackend on(&gpu);
    kernels::attn_res_mix_on_backend(m.block_ptrs(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), 1e-5f,
                                     out.data());
  }
  EXPECT_EQ(gpu.counters().attn_res_mixes, 1u);
  expect_same_bits(on_cpu(m, 1e-5f), out, "through the seam");
  // The two activation buffers, all the device holds.
  const GpuAttnResWords words = gpu_attn_res_words(4, 48, 9);
  EXPECT_EQ(words.in, 48 + 24 + 4 * 9 * 48u);
  EXPECT_EQ(words.out, 9 * 48 + 9 * 4u);
  EXPECT_EQ(gpu.peak_bytes(), 4 * (words.in + words.out));
  std::vector<float> cpu(m.n * m.hidden);
  kernels::attn_res_mix_on_backend(m.block_ptrs(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), 1e-5f,
                                   cpu.data());
  EXPECT_EQ(gpu.counters().attn_res_mixes, 1u) << "no backend installed: the CPU ran it";
  expect_same_bits(out, cpu, "the CPU without a backend");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The plan's part for the mixes: only what their buffers need beyond the
// products' activations, each buffer grown to the larger need.
TEST(AttnResMix, PlanCountsWhatTheMixesAddToTheProducts) {
  GpuProductBound products;
  products.weight_bytes = 1 << 20;
  products.cols = 100;
  products.rows = 1000;
  // Values of 64 x 5 = 320 floats a row against the products' 100 in: the
  // inputs grow by the difference; the outputs (64 + 5) fit the products' 1000.
  const GpuAttnResWords w = gpu_attn_res_words(5, 64, 30);
  EXPECT_EQ(gpu_attn_res_device_bytes(products, 30, 5, 64, 30), w.in * 4 - 30 * 100 * 4);
  // Mixes of fewer rows than the products: nothing beyond them.
  EXPECT_EQ(gpu_attn_res_device_bytes(products, 300, 5, 64, 30), 0u);
  // Without products, all of both buffers.
  EXPECT_EQ(gpu_attn_res_device_bytes(GpuProductBound{}, 30, 5, 64, 30), 4 * (w.in + w.out));
  EXPECT_EQ(gpu_attn_res_device_bytes(products, 30, 5, 64, 0), 0u);
}

// The plan's part for the chunk's kept block states: blocks x rows x
// hidden floats in one buffer (the smallest a buffer is: 16 bytes).
TEST(AttnResMix, PlanCountsTheKeptBlockStates) {
  const ModelConfig k3 = k3_reference_config();
  const uint64_t blocks = residual_block_count(k3), hidden = static_cast<uint64_t>(k3.hidden_size);
  EXPECT_EQ(gpu_chunk_block_device_bytes(blocks, hidden, 8192), blocks * 8192 * hidden * 4);
  EXPECT_EQ(gpu_chunk_block_device_bytes(4, 64, 300), 307200u);
  EXPECT_EQ(gpu_chunk_block_device_bytes(1, 1, 1), 16u);
  EXPECT_EQ(gpu_chunk_block_device_bytes(0, 64, 300), 0u);
  EXPECT_EQ(gpu_chunk_block_device_bytes(4, 64, 0), 0u);
  // With a device-local twin: the twin, and the host's buffer of one block.
  EXPECT_EQ(gpu_chunk_block_device_bytes(blocks, hidden, 8192, true), (blocks + 1) * 8192 * hidden * 4);
  EXPECT_EQ(gpu_chunk_block_device_bytes(4, 64, 300, true), 384000u);
  EXPECT_EQ(gpu_chunk_block_device_bytes(1, 1, 1, true), 32u);
  EXPECT_EQ(gpu_chunk_block_device_bytes(0, 64, 300, true), 0u);
}

// The chunk's block states kept on the device (gpu_chunk_blocks.cpp): a
// chunk of m.n rows whose blocks are m.blocks, each copied once; the mixes
// of rows [r0, r0 + rows) over the first `count` blocks read the first
// `kept` there and the rest (and p) from the host.
size_t keep_blocks(GpuBackend& gpu, const Mix& m) {
  const size_t can = gpu.begin_chunk_blocks(m.n, m.hidden, m.blocks.size());
  size_t kept = 0;
  while (kept < m.blocks.size() && gpu.keep_chunk_block(kept, m.blocks[kept].data())) ++kept;
  EXPECT_EQ(kept, std::min(can, m.blocks.size()));
  return kept;
}

std::vector<float> cpu_rows(const Mix& m, size_t r0, size_t rows, size_t count, float eps) {
  std::vector<const float*> b;
  for (size_t j = 0; j < count; ++j) b.push_back(m.blocks[j].data() + r0 * m.hidden);
  std::vector<float> out(rows * m.hidden);
  kernels::attn_res_mix(b, m.p.data() + r0 * m.hidden, rows, m.hidden, m.proj.data(), m.norm.data(), eps, out.data());
  return out;
}

// false where the device declines; out is then as it was (-1s).
bool kept_rows(GpuBackend& gpu, const Mix& m, size_t kept, size_t r0, size_t rows, size_t count, float eps,
               std::vector<float>& out) {
  std::vector<const float*> b;
  for (size_t j = 0; j < count; ++j) b.push_back(j < kept ? nullptr : m.blocks[j].data() + r0 * m.hidden);
  out.assign(rows * m.hidden, -1.0f);
  return gpu.attn_res_mix_kept(kept, b.data(), count, r0, m.p.data() + r0 * m.hidden, rows, m.hidden, m.proj.data(),
                               m.norm.data(), eps, out.data());
}

// K3's hidden size with its block count: each block copied once, the mixes
// of row ranges past the chunk's first row, over all the blocks or fewer,
// and with only some kept, equal the CPU kernel; a mix copies only p (and
// the blocks not kept) besides the key weights.
TEST(AttnResMix, KeptBlocksEqualTheCpuKernelAtK3Shape) {
  const ModelConfig k3 = k3_reference_config();
  GpuBackend& gpu = shared_gpu();
  gpu.limit_chunk_blocks(UINT64_MAX);
  std::mt19937 rng(61);
  const size_t blocks = residual_block_count(k3), hidden = static_cast<size_t>(k3.hidden_size), rows = 4;
  const Mix m = random_mix(rng, rows, hidden, blocks, -8, 8);
  const kernels::ComputeBackendCounters before = gpu.counters();
  ASSERT_EQ(keep_blocks(gpu, m), blocks);
  const kernels::ComputeBackendCounters kept = gpu.counters();
  EXPECT_EQ(kept.block_upload_bytes - before.block_upload_bytes, blocks * rows * hidden * 4);
  EXPECT_EQ(kept.upload_bytes - before.upload_bytes, blocks * rows * hidden * 4);
  struct Range {
    size_t kept, r0, rows, count;
  };
  uint64_t kept_bytes = 0;
  for (const Range& r : {Range{blocks, 1, 2, blocks}, Range{3, 3, 1, 3}, Range{2, 2, 2, blocks}}) {
    const std::string what = "kept " + std::to_string(r.kept) + " rows " + std::to_string(r.r0) + " + " +
                             std::to_string(r.rows) + " of " + std::to_string(r.count) + " blocks";
    const uint64_t uploaded = gpu.counters().upload_bytes;
    std::vector<float> out;
    ASSERT_TRUE(kept_rows(gpu, m, r.kept, r.r0, r.rows, r.count, k3.rms_norm_eps, out)) << what;
    expect_same_bits(cpu_rows(m, r.r0, r.rows, r.count, k3.rms_norm_eps), out, what);
    // The key weights, then p and the blocks not kept.
    EXPECT_EQ(gpu.counters().upload_bytes - uploaded,
              4 * (hidden + (hidden + 1) / 2 + (r.count - r.kept + 1) * r.rows * hidden))
        << what;
    kept_bytes += r.kept * r.rows * hidden * 4;
  }
  EXPECT_EQ(gpu.counters().block_kept_bytes - kept.block_kept_bytes, kept_bytes);
  EXPECT_EQ(gpu.counters().block_upload_bytes, kept.block_upload_bytes) << "the mixes copied no block again";
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(AttnResMix, KeptBlocksEqualTheCpuKernelOnRandomShapes) {
  GpuBackend& gpu = shared_gpu();
  gpu.limit_chunk_blocks(UINT64_MAX);
  std::mt19937 rng(17);
  struct Case {
    size_t n, hidden, blocks;
  };
  // The tiny model's width, odd widths (a BF16 pair half used), one float.
  for (const Case& c : {Case{70, 64, 4}, Case{5, 37, 2}, Case{3, 1, 3}, Case{6, 129, 9}}) {
    const Mix m = random_mix(rng, c.n, c.hidden, c.blocks, -20, 20);
    ASSERT_EQ(keep_blocks(gpu, m), c.blocks);
    const size_t r0 = c.n / 3;
    for (size_t kept : {c.blocks, c.blocks / 2 + 1}) {
      const std::string what = "n " + std::to_string(c.n) + " hidden " + std::to_string(c.hidden) + " kept " +
                               std::to_string(kept) + " of " + std::to_string(c.blocks);
      std::vector<float> out;
      ASSERT_TRUE(kept_rows(gpu, m, kept, r0, c.n - r0, c.blocks, 1e-5f, out)) << what;
      expect_same_bits(cpu_rows(m, r0, c.n - r0, c.blocks, 1e-5f), out, what);
    }
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Where the blocks do not fit (the plan's share, limit_chunk_blocks), the
// device keeps the first ones that do, or none, and declines a mix of more
// than it keeps (the caller copies them: the same bits); a new chunk
// forgets the last one's blocks, even of the same shape.
TEST(AttnResMix, KeptBlocksFallBackAndANewChunkForgetsTheLast) {
  GpuBackend& gpu = shared_gpu();
  std::mt19937 rng(23);
  const size_t n = 6, hidden = 37, blocks = 4, block_bytes = n * hidden * 4;
  const Mix a = random_mix(rng, n, hidden, blocks, -6, 6), b = random_mix(rng, n, hidden, blocks, -6, 6);
  std::vector<float> out;
  gpu.limit_chunk_blocks(2 * block_bytes + block_bytes / 2);
  ASSERT_EQ(keep_blocks(gpu, a), 2u) << "two blocks fit the share";
  EXPECT_FALSE(gpu.keep_chunk_block(2, a.blocks[2].data()));
  EXPECT_FALSE(kept_rows(gpu, a, 3, 0, n, blocks, 1e-5f, out)) << "a block the device does not keep";
  EXPECT_EQ(out, std::vector<float>(n * hidden, -1.0f)) << "nothing written where declined";
  ASSERT_TRUE(kept_rows(gpu, a, 2, 1, n - 1, blocks, 1e-5f, out));
  expect_same_bits(cpu_rows(a, 1, n - 1, blocks, 1e-5f), out, "two of four blocks kept");
  gpu.limit_chunk_blocks(0);
  EXPECT_EQ(keep_blocks(gpu, a), 0u) << "no share: none kept";
  EXPECT_FALSE(kept_rows(gpu, a, 1, 0, n, blocks, 1e-5f, out));
  // A new chunk of the same shape: a's blocks are not read for b's.
  gpu.limit_chunk_blocks(UINT64_MAX);
  ASSERT_EQ(keep_blocks(gpu, a), blocks);
  ASSERT_TRUE(kept_rows(gpu, a, blocks, 0, n, blocks, 1e-5f, out));
  EXPECT_EQ(gpu.begin_chunk_blocks(n, hidden, blocks), blocks);
  EXPECT_FALSE(kept_rows(gpu, b, 1, 0, n, blocks, 1e-5f, out)) << "b's blocks are not there yet";
  EXPECT_FALSE(gpu.keep_chunk_block(1, b.blocks[1].data())) << "blocks are kept in order";
  for (size_t j = 0; j < blocks; ++j) ASSERT_TRUE(gpu.keep_chunk_block(j, b.blocks[j].data()));
  ASSERT_TRUE(kept_rows(gpu, b, blocks, 2, 3, blocks, 1e-5f, out));
  expect_same_bits(cpu_rows(b, 2, 3, blocks, 1e-5f), out, "the second chunk's blocks");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Through model/prefill_chunk.h's ChunkBlocks with the device installed, in
// memory and spilled: the blocks are copied as they open, the mixes read
// them on the device (a spilled chunk's file is not read back for them),
// the same bits as the CPU's mix; with no share the mixes copy them.
TEST(AttnResMix, ChunkBlocksMixOnTheDeviceFromTheKeptBlocks) {
  GpuBackend& gpu = shared_gpu();
  ModelConfig c = k3_reference_config();
  c.hidden_size = 37;
  c.num_hidden_layers = 9;
  c.attn_res_block_size = 2;  // 5 block states
  const size_t n = 20, hidden = 37, piece = 8, count = 3;
  std::mt19937 rng(29);
  const Mix m = random_mix(rng, n, hidden, count, -6, 6);
  const std::vector<float> want = cpu_rows(m, 8, piece, count, 1e-5f);
  for (const bool spilled : {false, true}) {
    for (const uint64_t share : {UINT64_MAX, uint64_t{0}}) {
      const std::string what = std::string(spilled ? "spilled" : "in memory") + (share ? ", kept" : ", not kept");
      gpu.limit_chunk_blocks(share);
      SpillFile spill(::testing::TempDir());
      ChunkBlocks blocks;
      const kernels::ComputeBackendCounters before = gpu.counters();
      {
        kernels::ScopedComputeBackend on(&gpu);
        blocks.begin(c, n, piece, spilled ? &spill : nullptr);
        for (size_t j = 0; j < count; ++j) blocks.open(m.blocks[j].data());
        std::vector<float> out(piece * hidden, -1.0f);
        blocks.mix(8, piece, count, m.p.data() + 8 * hidden, m.proj.data(), m.norm.data(), 1e-5f, out.data(), nullptr);
        expect_same_bits(want, out, what);
      }
      EXPECT_EQ(blocks.kept_on_device(), share ? count : 0u) << what;
      EXPECT_EQ(gpu.counters().block_upload_bytes - before.block_upload_bytes, share ? count * n * hidden * 4 : 0u)
          << what;
      EXPECT_EQ(gpu.counters().attn_res_mixes - before.attn_res_mixes, 1u) << what << ": on the device either way";
      if (spilled) {
        EXPECT_EQ(spill.bytes_read(), share ? 0u : count * piece * hidden * 4) << what;
      }
    }
  }
  gpu.limit_chunk_blocks(UINT64_MAX);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Where the device stages into device-local memory (a discrete GPU without
// host-visible device-local memory; forced on lavapipe), the kept blocks
// live in a device-local twin: each copied into it once, when it opens,
// through a host-visible buffer of one block, and the mixes read the twin.
// K3's hidden size with its block count, the tiny model's width and an odd
// one, row ranges past the first row, all blocks kept or one; a share that
// holds the host's block and two in the twin keeps two.
TEST(AttnResMix, KeptBlocksInADeviceLocalTwinEqualTheCpuKernel) {
  setenv("K3_GPU_DEVICE_LOCAL_STAGING", "1", 1);
  GpuBackend gpu(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  unsetenv("K3_GPU_DEVICE_LOCAL_STAGING");
  ASSERT_TRUE(gpu.counters().device_local_staging);
  const ModelConfig k3 = k3_reference_config();
  std::mt19937 rng(67);
  struct Case {
    size_t n, hidden, blocks;
  };
  uint64_t twin = 0;
  for (const Case& c :
       {Case{3, static_cast<size_t>(k3.hidden_size), residual_block_count(k3)}, Case{70, 64, 4}, Case{5, 37, 3}}) {
    const Mix m = random_mix(rng, c.n, c.hidden, c.blocks, -8, 8);
    ASSERT_EQ(keep_blocks(gpu, m), c.blocks);
    twin += c.blocks * c.n * c.hidden * 4;
    EXPECT_EQ(gpu.counters().block_twin_bytes, twin) << "each block copied into the twin once";
    const size_t r0 = c.n / 3;
    for (size_t kept : {c.blocks, size_t{1}}) {
      const std::string what = "twin: n " + std::to_string(c.n) + " hidden " + std::to_string(c.hidden) + " kept " +
                               std::to_string(kept) + " of " + std::to_string(c.blocks);
      std::vector<float> out;
      ASSERT_TRUE(kept_rows(gpu, m, kept, r0, c.n - r0, c.blocks, k3.rms_norm_eps, out)) << what;
      expect_same_bits(cpu_rows(m, r0, c.n - r0, c.blocks, k3.rms_norm_eps), out, what);
    }
  }
  EXPECT_EQ(gpu.counters().block_upload_bytes, twin) << "the mixes copied no block again";
  EXPECT_EQ(gpu.counters().latent_twin_bytes, 0u);
  const Mix m = random_mix(rng, 6, 37, 4, -6, 6);
  const uint64_t block_bytes = 6 * 37 * 4;
  gpu.limit_chunk_blocks(3 * block_bytes + block_bytes / 2);
  ASSERT_EQ(keep_blocks(gpu, m), 2u) << "the share holds the host's block and two in the twin";
  std::vector<float> out;
  ASSERT_TRUE(kept_rows(gpu, m, 2, 1, 5, 4, 1e-5f, out));
  expect_same_bits(cpu_rows(m, 1, 5, 4, 1e-5f), out, "twin: two of four blocks kept");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
