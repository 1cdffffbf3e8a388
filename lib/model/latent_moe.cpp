#include "model/latent_moe.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/rms_norm.h"
#include "model/expert_sum.h"
#include "model/forward_scratch.h"
#include "model/linear.h"
#include "model/router.h"
#include "model/situ_mlp.h"

namespace k3 {

using kernels::rms_norm;

namespace {

// The widest SiTU MLP of a MoE layer: the shared experts or one routed expert.
size_t widest_situ(const ModelConfig& c) {
  return static_cast<size_t>(c.moe_intermediate_size) * static_cast<size_t>(std::max(1, c.num_shared_experts));
}

// The pieces of LatentMoE's scratch, in carving order. Routed expert e
// writes the rows that chose it to rows [start[e], start[e+1]) of
// expert_out, so every expert has its own output whatever order experts
// arrive in; expert_in holds the input rows of one expert at a time
// (experts are delivered one after another). rows[] holds each of those
// output rows' routing entry (token * k + j), so the weight goes with it.
struct MoeScratch {
  float *logits, *weights, *route, *z, *shared, *expert_in, *expert_out, *y, *situ, *guess_weights;
  int32_t *chosen, *order, *guess;
  size_t *start, *fill, *rows;
  static size_t floats(const ModelConfig& c, size_t n) {
    using C = ScratchCarver<float>;
    const size_t hidden = c.hidden_size, latent = c.routed_expert_hidden_size, E = c.num_experts;
    const size_t k = c.num_experts_per_token;
    return C::padded(n * E) + C::padded(n * k) + C::padded(2 * E) + C::padded(n * latent) + C::padded(n * hidden) +
           C::padded(n * latent) + C::padded(n * k * latent) + C::padded(n * latent) +
           C::padded(situ_scratch_floats(n, widest_situ(c))) + C::padded(n * k);
  }
  static size_t indices(const ModelConfig& c, size_t n) {
    return 2 * static_cast<size_t>(c.num_experts) + 1 + n * c.num_experts_per_token;
  }
  MoeScratch(const ModelConfig& c, size_t n, ForwardScratch& scratch) {
    const size_t hidden = c.hidden_size, latent = c.routed_expert_hidden_size, E = c.num_experts;
    const size_t k = c.num_experts_per_token;
    ScratchCarver<float> carve(scratch.op_floats(floats(c, n)));
    logits = carve.take(n * E);
    weights = carve.take(n * k);
    route = carve.take(2 * E);
    z = carve.take(n * latent);
    shared = carve.take(n * hidden);
    expert_in = carve.take(n * latent);
    expert_out = carve.take(n * k * latent);
    y = carve.take(n * latent);
    situ = carve.take(situ_scratch_floats(n, widest_situ(c)));
    guess_weights = carve.take(n * k);
    chosen = scratch.op_ints(latent_moe_scratch_ints(c, n));
    order = chosen + n * k;
    guess = order + E;
    start = scratch.op_indices(indices(c, n));
    fill = start + E + 1;
    rows = fill + E;
  }
};

// --expert-lookahead: a later MoE layer's router applied to this layer's
// input guesses its experts (the residual stream changes little from one
// layer to the next), so their reads can start while this layer computes.
// Only when the source has that router in memory; the guess goes to the
// source only, never into this layer's output. Each token's guess is the
// best half of that router's top-k (route_tokens lists them best first):
// on the bench checkpoint, guessing all 16 was right for about half of the
// experts it read and, at 1.5x the bytes, slower than no guess; the best 8
// were right more often and made decode faster (docs/memory.md).
// Layer `next`'s router weights when it can be guessed (a MoE layer whose
// router the source has in memory), else null.
const MoeTrunkWeights* guessable(const ModelConfig& c, int next, WeightSource& source) {
  if (next >= c.num_hidden_layers || !c.is_moe_layer(next)) return nullptr;
  return source.router_ahead(next);
}

void guess_with(const ModelConfig& c, int next, const MoeTrunkWeights* w, WeightSource& source, const float* x,
                size_t n, const MoeScratch& m, ThreadPool* pool, std::vector<int>& guessed) {
  const size_t k = c.num_experts_per_token, E = c.num_experts;
  lin(w->router, x, n, m.logits, pool);  // this layer's logits are no longer needed
  route_tokens(c, m.logits, w->router_bias.data, n, m.guess, m.guess_weights, m.route, m.order);
  // Distinct, best first: by routing weight summed over the batch's tokens
  // (ties to the lower id), so the reads that land before layer `next`
  // routes are the likeliest to be used; m.fill (free once this layer's
  // rows are sorted) marks the ids seen, m.route (free after routing) sums.
  std::fill(m.fill, m.fill + E, size_t{0});
  std::fill(m.route, m.route + E, 0.0f);
  for (size_t t = 0; t < n; ++t)
    for (size_t j = 0; j < latent_moe_guessed_per_token(c); ++j) {
      m.fill[m.guess[t * k + j]] = 1;
      m.route[m.guess[t * k + j]] += m.guess_weights[t * k + j];
    }
  guessed.clear();
  for (size_t e = 0; e < E; ++e)
    if (m.fill[e]) guessed.push_back(static_cast<int>(e));
  std::stable_sort(guessed.begin(), guessed.end(), [&](int a, int b) { return m.route[a] > m.route[b]; });
  source.prefetch_guess(next, guessed);
}

// The nearer layer first: its reads queue first.
void guess_next_layers(const ModelConfig& c, int layer, WeightSource& source, const float* x, size_t n,
                       const MoeScratch& m, ThreadPool* pool, std::vector<int>& guessed) {
  for (int ahead = 1; ahead <= latent_moe_lookahead_layers(); ++ahead)
    if (const MoeTrunkWeights* w = guessable(c, layer + ahead, source))
      guess_with(c, layer + ahead, w, source, x, n, m, pool, guessed);
}

}  // namespace

size_t latent_moe_guessed_per_token(const ModelConfig& c) {
  return (static_cast<size_t>(c.num_experts_per_token) + 1) / 2;
}

// One layer ahead: on the bench checkpoint, also guessing two layers ahead
// (each layer guessed from both layers before it) read 14% more bytes per
// token (607 MB against 533 MB; 68% of the guessed experts right against
// 74%) and decoded no faster (docs/memory.md). The cache takes guesses for
// any later layer; this is the one place to change.
int latent_moe_lookahead_layers() { return 1; }

void latent_moe_guess_from_dense(const ModelConfig& c, int layer, WeightSource& source, const float* x, size_t n,
                                 ThreadPool* pool, ForwardScratch& scratch) {
  // Checked before the scratch is carved: without --expert-lookahead this
  // costs a dense layer nothing.
  const MoeTrunkWeights* w = guessable(c, layer + 1, source);
  if (!w) return;
  const MoeScratch m(c, n, scratch);
  guess_with(c, layer + 1, w, source, x, n, m, pool, scratch.guessed_experts());
}

size_t latent_moe_scratch_floats(const ModelConfig& c, size_t rows) { return MoeScratch::floats(c, rows); }
size_t latent_moe_scratch_ints(const ModelConfig& c, size_t rows) {
  return 2 * rows * c.num_experts_per_token + c.num_experts;
}
size_t latent_moe_scratch_indices(const ModelConfig& c, size_t rows) { return MoeScratch::indices(c, rows); }

void latent_moe_forward(const ModelConfig& c, int layer, const MoeTrunkWeights& w, WeightSource& source, const float* x,
                        size_t n, float* out, ThreadPool* pool, ForwardScratch& scratch) {
  const size_t hidden = c.hidden_size, latent = c.routed_expert_hidden_size, E = c.num_experts;
  const size_t k = c.num_experts_per_token;
  const SituParams situ = SituParams::from(c);
  const MoeScratch m(c, n, scratch);
  auto check_width = [&](size_t inter, const char* what) {
    if (inter > widest_situ(c))
      throw Error(ExitCode::kInternal, std::string(what) + " is wider than the config's MoE intermediate size");
  };

  // Route every token on x.
  lin(w.router, x, n, m.logits, pool);
  route_tokens(c, m.logits, w.router_bias.data, n, m.chosen, m.weights, m.route, m.order);

  // The distinct experts of the batch (ascending id) and, per expert, the
  // routing entries that chose it (ascending token), as consecutive runs of
  // m.rows.
  std::fill(m.start, m.start + E + 1, size_t{0});
  for (size_t i = 0; i < n * k; ++i) ++m.start[m.chosen[i] + 1];
  for (size_t e = 0; e < E; ++e) m.start[e + 1] += m.start[e];
  std::copy(m.start, m.start + E, m.fill);
  for (size_t i = 0; i < n * k; ++i) m.rows[m.fill[m.chosen[i]]++] = i;
  std::vector<int>& experts = scratch.experts();
  experts.clear();
  for (size_t e = 0; e < E; ++e)
    if (m.start[e + 1] > m.start[e]) experts.push_back(static_cast<int>(e));

  // The reads of experts that are not resident start now, while the latent
  // projection and the shared experts (which do not depend on routing)
  // compute; the shared result is added at the end exactly as before.
  source.prefetch_experts(layer, experts);
  guess_next_layers(c, layer, source, x, n, m, pool, scratch.guessed_experts());
  lin(w.latent_down, x, n, m.z, pool);
  check_width(out_dim(w.shared.gate_proj), "the shared experts' MLP");
  situ_mlp(w.shared, situ, x, n, m.shared, pool, m.situ);

  // Each expert runs once on its rows into its own buffer.
  source.for_each_expert(layer, experts, [&](size_t s, const ExpertWeights& ew) {
    const size_t e = static_cast<size_t>(experts[s]), first = m.start[e], count = m.start[e + 1] - first;
    float* in = m.expert_in;
    for (size_t r = 0; r < count; ++r) {
      const float* zr = m.z + m.rows[first + r] / k * latent;
      std::copy(zr, zr + latent, in + r * latent);
    }
    check_width(out_dim(ew.w1), "a routed expert's MLP");
    situ_mlp(ew, situ, in, count, m.expert_out + first * latent, pool, m.situ);
  });

  // Sum per token in the one order of every path (model/expert_sum.h):
  // output rows run by ascending expert id, so each token's experts are
  // added in ascending id, whatever order they arrived in.
  std::fill(m.y, m.y + n * latent, 0.0f);
  for (size_t r = 0; r < n * k; ++r)
    add_expert_output(m.y + m.rows[r] / k * latent, m.weights[m.rows[r]], m.expert_out + r * latent, latent);
  if (c.latent_moe_use_norm) rms_norm(m.y, n, latent, w.latent_norm.data, c.rms_norm_eps, m.y);
  lin(w.latent_up, m.y, n, out, pool);

  for (size_t i = 0; i < n * hidden; ++i) out[i] += m.shared[i];
}

}  // namespace k3
