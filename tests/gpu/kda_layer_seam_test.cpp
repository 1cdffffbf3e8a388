// The KDA layer (model/kda.cpp's kda_forward) with a device installed, as
// the chunk installs it, against the same call on the CPU, bit for bit, on
// lavapipe with the validation layer on: two sequences of different
// lengths in one call (each segment's rows go to the device on their own:
// its offsets), with and without a row history (which keeps the recurrence
// on the CPU while the norms and gates still run on the device), both gate
// forms. The layer's output and each sequence's state are compared, and
// the counters say what ran on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace k3
