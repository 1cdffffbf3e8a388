// The KDA layer (model/kda.cpp's kda_forward) with a device installed, as
// the chunk installs it, against the same call on the CPU, bit for bit, on
// lavapipe with the validation layer on: two sequences of different
// lengths in one call (each segment's rows go to the device on their own:
// its offsets), with and without a row history (which keeps the recurrence
// on the CPU while the norms and gates still run on the device), both gate
// forms. The layer's output and each sequence's state are compared, and
// the counters say what ran on the device. And a layer's pieces within a
// span of kept states (ComputeBackend::begin_kda_states): each state copied
// to the device once and back once, a capture between pieces synced, and a
// device lost mid-layer leaving each state as its last finished call did.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/compute_backend.h"
#include "model/forward_scratch.h"
#include "model/kda.h"
#include "model/random_weights.h"
#include "model/sequence_state.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::shared_gpu;

// A random KDA layer: 2 heads of 16, hidden 24, conv kernel 4.
struct KdaLayer : test::RandomKdaLayer {
  explicit KdaLayer(bool lower_bound) : RandomKdaLayer({24, 2, 16, 4}, lower_bound, 17) {}
};

// Two sequences (rows 0..4 and 5..11) through one kda_forward call, each
// from its own state; the output and the states after it.
struct Run {
  std::vector<float> out;
  LayerState first, second;
  KdaRowHistory first_history, second_history;
};

Run run_layer(const KdaLayer& layer, const std::vector<float>& x, bool history, kernels::ComputeBackend* backend) {
  const size_t n = 12, split = 5;
  Run r;
  r.out.assign(n * layer.c.hidden_size, 0.0f);
  kda_reset(layer.c, r.first.kda);
  kda_reset(layer.c, r.second.kda);
  const LayerSegment segments[] = {{&r.first, 0, split, history ? &r.first_history : nullptr},
                                   {&r.second, split, n - split, history ? &r.second_history : nullptr}};
  kernels::ScopedComputeBackend scoped(backend);
  ForwardScratch scratch;
  kda_forward(layer.c, layer.w, segments, x.data(), n, r.out.data(), nullptr, scratch);
  return r;
}

void expect_layer_equal(bool lower_bound, bool history, const std::string& what) {
  const KdaLayer layer(lower_bound);
  std::mt19937 rng(23);
  const std::vector<float> x = floats_over_exponents(rng, 12 * layer.c.hidden_size, -4, 2);
  GpuBackend& gpu = shared_gpu();
  const kernels::ComputeBackendCounters before = gpu.counters();
  const Run cpu = run_layer(layer, x, history, nullptr);
  const Run dev = run_layer(layer, x, history, &gpu);
  const kernels::ComputeBackendCounters after = gpu.counters();
  expect_same_bits(cpu.out, dev.out, what + ": output");
  expect_same_bits(cpu.first.kda.S, dev.first.kda.S, what + ": first state");
  expect_same_bits(cpu.second.kda.S, dev.second.kda.S, what + ": second state");
  expect_same_bits(cpu.second.kda.conv_k, dev.second.kda.conv_k, what + ": second conv carry");
  if (history) expect_same_bits(cpu.second_history.S, dev.second_history.S, what + ": second history");
  // Per segment: q's and k's norms, the gates, the output; the recurrences
  // only without a history.
  EXPECT_EQ(after.kda_norms - before.kda_norms, 4u) << what;
  EXPECT_EQ(after.kda_gates - before.kda_gates, 2u) << what;
  EXPECT_EQ(after.kda_outputs - before.kda_outputs, 2u) << what;
  EXPECT_EQ(after.kda_recurrences - before.kda_recurrences, history ? 0u : 2u) << what;
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuKdaLayerSeam, TwoSequencesEqualTheCpuBitForBit) {
  expect_layer_equal(true, false, "lower bound");
  expect_layer_equal(false, false, "softplus");
}

TEST(GpuKdaLayerSeam, WithARowHistoryTheNormsStillRunOnTheDevice) { expect_layer_equal(true, true, "history"); }

// A layer's pieces as a chunk runs them (model/forward_pass_chunk.cpp),
// within one span of kept states: two sequences, rows 0..9 and 10..21, in
// pieces of 8 rows (the middle one holds rows of both), the second
// sequence's state captured after the second piece (synced from the
// device, as ChunkRun::capture_kda does). Only the first `pieces` run.
struct Pieces {
  std::vector<float> out;
  LayerState first, second;
  KdaState captured;
};
constexpr size_t kRows = 22, kSplit = 10, kPiece = 8;

void run_pieces(const KdaLayer& layer, const std::vector<float>& x, kernels::ComputeBackend* backend, size_t pieces,
                Pieces& r) {
  const size_t hidden = layer.c.hidden_size;
  r.out.assign(kRows * hidden, 0.0f);
  kda_reset(layer.c, r.first.kda);
  kda_reset(layer.c, r.second.kda);
  kernels::ScopedComputeBackend scoped(backend);
  kernels::ScopedKdaStates kept;
  ForwardScratch scratch;
  for (size_t r0 = 0; r0 < std::min(kRows, pieces * kPiece); r0 += kPiece) {
    const size_t m = std::min(kPiece, kRows - r0);
    std::vector<LayerSegment> segments;
    if (r0 < kSplit) segments.push_back({&r.first, 0, std::min(kSplit, r0 + m) - r0, nullptr});
    if (r0 + m > kSplit) {
      const size_t b = std::max(kSplit, r0);
      segments.push_back({&r.second, b - r0, r0 + m - b, nullptr});
    }
    kda_forward(layer.c, layer.w, segments, x.data() + r0 * hidden, m, r.out.data() + r0 * hidden, nullptr, scratch);
    if (r0 + m == 2 * kPiece) {
      kept.sync(r.second.kda.S.data());
      r.captured = r.second.kda;
    }
  }
}

// Each sequence's state goes to the device once for the layer and back once
// (and once more for the capture), however many pieces: the outputs, the
// captured state and the states after the layer equal the CPU's.
TEST(GpuKdaLayerSeam, KeptStatesAcrossPiecesEqualTheCpuBitForBit) {
  const KdaLayer layer(true);
  std::mt19937 rng(29);
  const std::vector<float> x = floats_over_exponents(rng, kRows * layer.c.hidden_size, -4, 2);
  GpuBackend& gpu = shared_gpu();
  Pieces cpu, dev;
  run_pieces(layer, x, nullptr, 3, cpu);
  const kernels::ComputeBackendCounters before = gpu.counters();
  run_pieces(layer, x, &gpu, 3, dev);
  const kernels::ComputeBackendCounters after = gpu.counters();
  expect_same_bits(cpu.out, dev.out, "output");
  expect_same_bits(cpu.captured.S, dev.captured.S, "the captured state");
  expect_same_bits(cpu.first.kda.S, dev.first.kda.S, "first state after the layer");
  expect_same_bits(cpu.second.kda.S, dev.second.kda.S, "second state after the layer");
  expect_same_bits(cpu.second.kda.conv_v, dev.second.kda.conv_v, "second conv carry");
  // Four recurrences (the first sequence in pieces 1 and 2, the second in 2
  // and 3): two states in, two back at the end and one for the capture.
  const uint64_t state = layer.c.kda_num_heads * layer.c.kda_head_dim * layer.c.kda_head_dim * sizeof(float);
  EXPECT_EQ(after.kda_recurrences - before.kda_recurrences, 4u);
  EXPECT_EQ(after.kda_state_upload_bytes - before.kda_state_upload_bytes, 2 * state);
  EXPECT_EQ(after.kda_state_download_bytes - before.kda_state_download_bytes, 3 * state);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Outside a span each call copies its state in and back.
TEST(GpuKdaLayerSeam, WithoutASpanEachCallCopiesTheStateInAndOut) {
  const KdaLayer layer(false);
  std::mt19937 rng(31);
  const std::vector<float> x = floats_over_exponents(rng, 12 * layer.c.hidden_size, -4, 2);
  GpuBackend& gpu = shared_gpu();
  const kernels::ComputeBackendCounters before = gpu.counters();
  run_layer(layer, x, false, &gpu);
  const kernels::ComputeBackendCounters after = gpu.counters();
  const uint64_t state = layer.c.kda_num_heads * layer.c.kda_head_dim * layer.c.kda_head_dim * sizeof(float);
  EXPECT_EQ(after.kda_state_upload_bytes - before.kda_state_upload_bytes, 2 * state);
  EXPECT_EQ(after.kda_state_download_bytes - before.kda_state_download_bytes, 2 * state);
}

// The device lost at the second piece's first product: the span, ended by
// the exception, leaves each state as its last finished call left it (the
// first sequence's after piece 1, the second's untouched), as the CPU's
// state after piece 1.
TEST(GpuKdaLayerSeam, ADeviceLostMidLayerLeavesTheStatesOfTheLastFinishedCall) {
  const KdaLayer layer(true);
  std::mt19937 rng(37);
  const std::vector<float> x = floats_over_exponents(rng, kRows * layer.c.hidden_size, -4, 2);
  Pieces cpu, dev;
  run_pieces(layer, x, nullptr, 1, cpu);
  // A piece runs 8 products (q, k, v, f_a, f_b, b; g, o): the 9th is lost.
  setenv("K3_GPU_FAIL_AFTER", "8", 1);
  GpuBackend gpu(test::open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  unsetenv("K3_GPU_FAIL_AFTER");
  try {
    run_pieces(layer, x, &gpu, 3, dev);
    ADD_FAILURE() << "the device was not lost";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lost"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gpu.counters().kda_recurrences, 1u);
  expect_same_bits(cpu.first.kda.S, dev.first.kda.S, "first state");
  expect_same_bits(cpu.second.kda.S, dev.second.kda.S, "second state");
}

}  // namespace
}  // namespace k3
