// Router tie rule and weights; LatentMoE against a double reference, with
// experts delivered in any order, in BF16 and in MXFP4; the layer-major
// chunk's steps against it, bit for bit; the next layer's
// guessed experts (--expert-lookahead), which leave the output alone.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "io/spill_file.h"
#include "kernels/mxfp4.h"
#include "model/forward_scratch.h"
#include "model/latent_moe.h"
#include "model/latent_moe_chunk.h"
#include "model/router.h"
#include "random_weights.h"

namespace k3 {
namespace {

ModelConfig router_config(int E, int k, bool renorm, float scale) {
  ModelConfig c;
  c.num_experts = E;
  c.num_experts_per_token = k;
  c.moe_renormalize = renorm;
  c.routed_scaling_factor = scale;
  return c;
}

TEST(Router, EqualChoicesGoToTheLowerExpertId) {
  const ModelConfig c = router_config(8, 3, true, 1.0f);
  std::vector<float> logits(8, 0.25f), bias(8, 0.0f), w(3);
  std::vector<int32_t> e(3);
  route_tokens(c, logits.data(), bias.data(), 1, e.data(), w.data());
  EXPECT_EQ(e, (std::vector<int32_t>{0, 1, 2}));
  for (float x : w) EXPECT_FLOAT_EQ(x, 1.0f / 3.0f);
  // Experts 6 and 3 tie at the top, 5 and 1 tie next: lower id first in each pair.
  logits = {0, 1, 0, 2, 0, 1, 2, 0};
  route_tokens(c, logits.data(), bias.data(), 1, e.data(), w.data());
  EXPECT_EQ(e, (std::vector<int32_t>{3, 6, 1}));
}

TEST(Router, BiasSelectsButWeightsUseTheSigmoidScore) {
  const ModelConfig c = router_config(6, 2, true, 2.0f);
  std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f, -2.0f, 0.5f};
  std::vector<float> bias = {0, 0, 0, 0, 5.0f, 0};  // expert 4 is chosen only because of its bias
  std::vector<float> w(2);
  std::vector<int32_t> e(2);
  route_tokens(c, logits.data(), bias.data(), 1, e.data(), w.data());
  EXPECT_EQ(e, (std::vector<int32_t>{4, 0}));
  const double s4 = test::sigmoid_d(-2.0), s0 = test::sigmoid_d(2.0);
  EXPECT_NEAR(w[0], 2.0 * s4 / (s4 + s0), 1e-6);  // renormalised, times routed_scaling_factor
  EXPECT_NEAR(w[1], 2.0 * s0 / (s4 + s0), 1e-6);

  const ModelConfig plain = router_config(6, 2, false, 2.0f);
  route_tokens(plain, logits.data(), bias.data(), 1, e.data(), w.data());
  EXPECT_NEAR(w[0], 2.0 * s4, 1e-6);  // not renormalised, still scaled
  const ModelConfig one = router_config(6, 1, true, 1.0f);
  route_tokens(one, logits.data(), bias.data(), 1, e.data(), w.data());
  EXPECT_NEAR(w[0], s4, 1e-6);  // k = 1: no renormalisation
}

// A WeightSource holding only experts, delivering them in reverse order.
class ExpertSource : public WeightSource {
 public:
  std::vector<ExpertWeights> experts;
  bool reverse = false;
  std::vector<int> last_request;
  std::vector<std::vector<int>> requests;  // every request, in order
  const MoeTrunkWeights* ahead = nullptr;  // router_ahead's answer
  std::vector<int> asked_ahead, guessed;   // layers router_ahead was asked for; the last guess
  int guessed_layer = -1;
  std::vector<int> guessed_layers;  // every guess's layer, in order
  const MoeTrunkWeights* router_ahead(int layer) override {
    asked_ahead.push_back(layer);
    return ahead;
  }
  void prefetch_guess(int layer, const std::vector<int>& experts) override {
    guessed_layer = layer;
    guessed = experts;
    guessed_layers.push_back(layer);
  }
  void embed(const int32_t*, size_t, float*) override {}
  const LayerWeights& acquire_layer(int) override { throw std::logic_error("unused"); }
  void release_layer(int) override {}
  const HeadWeights& acquire_head() override { throw std::logic_error("unused"); }
  void release_head() override {}
  void for_each_expert(int, const std::vector<int>& ids,
                       const std::function<void(size_t, const ExpertWeights&)>& on_ready) override {
    last_request = ids;
    requests.push_back(ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t k = reverse ? ids.size() - 1 - i : i;
      on_ready(k, experts[ids[k]]);
    }
  }
};

struct MoeCase {
  static constexpr int hidden = 16, latent = 32, inter = 32, E = 6, K = 3, shared_w = 64;
  ModelConfig c;
  test::RandomBf16 router, down, up, sg, su, sd;
  test::RandomF32 bias, norm;
  std::vector<test::RandomBf16> w1, w3, w2;
  MoeTrunkWeights trunk;
  ExpertSource source;

  MoeCase() {
    c.hidden_size = hidden;
    c.routed_expert_hidden_size = latent;
    c.moe_intermediate_size = inter;
    c.num_experts = E;
    c.num_experts_per_token = K;
    c.num_shared_experts = 2;
    c.moe_renormalize = true;
    c.routed_scaling_factor = 1.5f;
    c.latent_moe_use_norm = true;
    c.rms_norm_eps = 1e-5f;
    c.situ_beta = 4.0f;
    c.has_situ_linear_beta = true;
    c.situ_linear_beta = 25.0f;
    c.experts_mxfp4 = false;
    std::mt19937 rng(31);
    router = {rng, E, hidden, 1.0};
    down = {rng, latent, hidden, 0.5};
    up = {rng, hidden, latent, 0.3};
    sg = {rng, shared_w, hidden, 1.0};
    su = {rng, shared_w, hidden, 1.0};
    sd = {rng, hidden, shared_w, 0.1};
    bias = {rng, E, 0.0, 0.1};
    norm = {rng, latent, 1.0, 0.1};
    for (int e = 0; e < E; ++e) {
      w1.emplace_back(rng, inter, latent, 1.0);
      w3.emplace_back(rng, inter, latent, 2.0);
      w2.emplace_back(rng, latent, inter, 0.2);
    }
    for (int e = 0; e < E; ++e) {
      ExpertWeights ew;
      ew.w1.is_mxfp4 = ew.w3.is_mxfp4 = ew.w2.is_mxfp4 = false;
      ew.w1.bf = w1[e].view();
      ew.w3.bf = w3[e].view();
      ew.w2.bf = w2[e].view();
      source.experts.push_back(ew);
    }
    trunk = MoeTrunkWeights{router.view(), bias.view(), down.view(),
                            up.view(),     norm.view(), DenseMlpWeights{sg.view(), su.view(), sd.view()}};
  }

  static double situ_d(double g, double u) {
    return 4.0 * std::tanh(g / 4.0) * test::sigmoid_d(g) * 25.0 * std::tanh(u / 25.0);
  }
  static std::vector<double> mlp_d(const std::vector<double>& x, const test::RandomBf16& g, const test::RandomBf16& u,
                                   const test::RandomBf16& d) {
    std::vector<double> a = test::lin_d(x, g), b = test::lin_d(x, u);
    for (size_t i = 0; i < a.size(); ++i) a[i] = situ_d(a[i], b[i]);
    return test::lin_d(a, d);
  }

  std::vector<double> reference(const std::vector<float>& x, size_t n) const {
    std::vector<double> out;
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> xt(x.begin() + t * hidden, x.begin() + (t + 1) * hidden);
      std::vector<double> s = test::lin_d(xt, router);
      std::vector<int> order(E);
      for (int e = 0; e < E; ++e) order[e] = e, s[e] = test::sigmoid_d(s[e]);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s[a] + bias.f[a] > s[b] + bias.f[b]; });
      double sum = 0;
      for (int j = 0; j < K; ++j) sum += s[order[j]];
      std::vector<double> z = test::lin_d(xt, down), y(latent, 0.0);
      for (int j = 0; j < K; ++j) {
        const int e = order[j];
        std::vector<double> ye = mlp_d(z, w1[e], w3[e], w2[e]);
        for (int d = 0; d < latent; ++d) y[d] += s[e] / sum * 1.5 * ye[d];
      }
      double ms = 0;
      for (double v : y) ms += v * v;
      ms /= latent;
      for (int d = 0; d < latent; ++d) y[d] = y[d] / std::sqrt(ms + 1e-5) * norm.f[d];
      std::vector<double> o = test::lin_d(y, up), sh = mlp_d(xt, sg, su, sd);
      for (int c2 = 0; c2 < hidden; ++c2) out.push_back(o[c2] + sh[c2]);
    }
    return out;
  }
};

TEST(LatentMoe, MatchesDoubleReferenceInAnyArrivalOrder) {
  MoeCase mc;
  const size_t n = 7;
  std::mt19937 rng(2);
  std::vector<float> x = test::random_input(rng, n * MoeCase::hidden);
  std::vector<float> fwd(n * MoeCase::hidden), rev(n * MoeCase::hidden);
  ForwardScratch scratch;  // reused by every call below, whatever its rows
  latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, fwd.data(), nullptr, scratch);
  EXPECT_TRUE(std::is_sorted(mc.source.last_request.begin(), mc.source.last_request.end()));
  mc.source.reverse = true;
  latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, rev.data(), nullptr, scratch);
  EXPECT_EQ(std::memcmp(fwd.data(), rev.data(), fwd.size() * sizeof(float)), 0);
  std::vector<double> want = mc.reference(x, n);
  const test::RelativeError e = test::relative_error(fwd, want);
  EXPECT_LE(e.worst, 1e-5 * e.scale) << e.worst << " " << e.scale;
  // Rows are independent of the batch: each token alone gives the same bits.
  for (size_t t = 0; t < n; ++t) {
    std::vector<float> one(MoeCase::hidden);
    latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data() + t * MoeCase::hidden, 1, one.data(), nullptr, scratch);
    EXPECT_EQ(std::memcmp(one.data(), fwd.data() + t * MoeCase::hidden, one.size() * sizeof(float)), 0) << t;
  }
}

// The layer-major chunk's steps (model/latent_moe_chunk.h) give
// latent_moe_forward's bits for every sub-batch and delivery order, with the
// shared experts' output in memory or in a spill file: both add a token's
// expert outputs in ascending expert id. The chunk hands the source its
// experts in ascending id, in groups of consecutive experts whose entries
// fill at most a sub-batch of rows, each as large as fits (an expert with
// more entries than a sub-batch alone).
TEST(LatentMoe, ChunkGroupsGiveTheBatchBitsInAnyArrivalOrder) {
  MoeCase mc;
  std::mt19937 rng(9);
  char tmpl[] = "/tmp/k3-moe-spill-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  size_t alone = 0;  // groups of one expert with more entries than a sub-batch
  for (const size_t n : {size_t{1}, size_t{7}, size_t{12}}) {
    std::vector<float> x = test::random_input(rng, n * MoeCase::hidden);
    std::vector<float> want(n * MoeCase::hidden);
    ForwardScratch scratch;
    mc.source.reverse = false;
    latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, want.data(), nullptr, scratch);
    for (const size_t sub : {size_t{1}, size_t{3}, size_t{5}, n})
      for (const bool reverse : {false, true})
        for (const bool spilled : {false, true}) {
          SCOPED_TRACE("rows " + std::to_string(n) + ", sub-batch " + std::to_string(sub) +
                       (reverse ? ", reversed" : "") + (spilled ? ", spilled" : ""));
          SpillFile file(dir);
          constexpr uint64_t kAt = 4096;  // where the shared rows start in the file
          MoeChunkRows m;
          m.reserve(mc.c, n, spilled ? &file : nullptr, kAt);
          EXPECT_EQ(m.shared.size(), spilled ? 0 : n * MoeCase::hidden);
          for (size_t r0 = 0; r0 < n; r0 += sub)
            moe_chunk_prepare(mc.c, mc.trunk, x.data() + r0 * MoeCase::hidden, std::min(sub, n - r0), r0, m, nullptr,
                              scratch);
          mc.source.reverse = reverse;
          mc.source.requests.clear();
          moe_chunk_experts(mc.c, 1, mc.source, n, sub, m, nullptr, scratch);
          std::vector<float> got(n * MoeCase::hidden);
          for (size_t r0 = 0; r0 < n; r0 += sub)
            moe_chunk_combine(mc.c, mc.trunk, std::min(sub, n - r0), r0, m, got.data() + r0 * MoeCase::hidden, nullptr,
                              scratch);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
          // Spilled: each row of shared output written once and read back once.
          const uint64_t shared_bytes = spilled ? n * MoeCase::hidden * sizeof(float) : 0;
          EXPECT_EQ(file.bytes_written(), shared_bytes);
          EXPECT_EQ(file.bytes_read(), shared_bytes);
          // The groups, in order, are the chunk's distinct experts in
          // ascending id; each holds at most a sub-batch of entries, or is one
          // expert alone, and could not have taken the next expert.
          const size_t cap = std::min(sub, n);
          std::vector<int> all;
          size_t entries_of_previous = 0;
          for (size_t g = 0; g < mc.source.requests.size(); ++g) {
            const std::vector<int>& group = mc.source.requests[g];
            size_t entries = 0;
            for (int e : group) entries += m.start[e + 1] - m.start[e];
            if (group.size() > 1) EXPECT_LE(entries, cap) << "group " << g;
            alone += entries > cap;
            if (g > 0) EXPECT_GT(entries_of_previous + m.start[group[0] + 1] - m.start[group[0]], cap) << "group " << g;
            entries_of_previous = entries;
            all.insert(all.end(), group.begin(), group.end());
          }
          EXPECT_EQ(all, m.experts);
          EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
          EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
          // n rows choose n * K entries: at least K groups of at most n.
          EXPECT_GE(mc.source.requests.size(), static_cast<size_t>(MoeCase::K));
        }
  }
  EXPECT_GT(alone, 0u) << "no expert outnumbered a sub-batch: its pieces' path was not run";
  std::filesystem::remove_all(dir);
}

// The guess applies the next layers' routers to this layer's input: the
// distinct experts of each token's best half of its top-k (checked against
// a double-precision ranking) go to prefetch_guess best first (by routing
// weight summed over the tokens), and the layer's output keeps every bit, whatever the
// arrival order.
TEST(LatentMoe, LookaheadGuessesTheNextLayersExpertsAndLeavesTheOutputAlone) {
  MoeCase mc;
  mc.c.num_hidden_layers = 3;
  mc.c.first_k_dense_replace = 0;
  std::mt19937 rng(5);
  test::RandomBf16 router2(rng, MoeCase::E, MoeCase::hidden, 1.0);
  test::RandomF32 bias2(rng, MoeCase::E, 0.0, 0.1);
  MoeTrunkWeights next = mc.trunk;
  next.router = router2.view();
  next.router_bias = bias2.view();
  const size_t n = 2;
  std::vector<float> x = test::random_input(rng, n * MoeCase::hidden);
  std::vector<float> plain(n * MoeCase::hidden), guessing(n * MoeCase::hidden), reversed(n * MoeCase::hidden);
  ForwardScratch scratch;
  latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, plain.data(), nullptr, scratch);
  EXPECT_EQ(mc.source.asked_ahead, std::vector<int>{2});
  EXPECT_EQ(mc.source.guessed_layer, -1);  // no router in memory: no guess
  mc.source.ahead = &next;
  latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, guessing.data(), nullptr, scratch);
  mc.source.reverse = true;
  latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, reversed.data(), nullptr, scratch);
  EXPECT_EQ(std::memcmp(plain.data(), guessing.data(), plain.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(plain.data(), reversed.data(), plain.size() * sizeof(float)), 0);
  EXPECT_EQ(mc.source.guessed_layer, 2);
  // Each guessed expert's routing weight (renormalised over the top-k,
  // times routed_scaling_factor), summed over the tokens that guessed it.
  std::vector<double> weight(MoeCase::E, 0.0);
  std::vector<int> want;
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> xt(x.begin() + t * MoeCase::hidden, x.begin() + (t + 1) * MoeCase::hidden);
    std::vector<double> s = test::lin_d(xt, router2);
    std::vector<int> order(MoeCase::E);
    for (int e = 0; e < MoeCase::E; ++e) order[e] = e, s[e] = test::sigmoid_d(s[e]);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s[a] + bias2.f[a] > s[b] + bias2.f[b]; });
    double top = 0;
    for (int j = 0; j < MoeCase::K; ++j) top += s[order[j]];
    for (int j = 0; j < (MoeCase::K + 1) / 2; ++j) {  // the best half of the top-k
      if (weight[order[j]] == 0) want.push_back(order[j]);
      weight[order[j]] += s[order[j]] / top * mc.c.routed_scaling_factor;
    }
  }
  // Best first: the highest summed weight is read first.
  std::sort(want.begin(), want.end());
  std::stable_sort(want.begin(), want.end(), [&](int a, int b) { return weight[a] > weight[b]; });
  // This case's guesses are not in ascending id (best first is seen).
  ASSERT_FALSE(std::is_sorted(want.begin(), want.end())) << want.size();
  EXPECT_EQ(mc.source.guessed, want);
  // The last layer has no next layer to guess for.
  mc.source.asked_ahead.clear();
  latent_moe_forward(mc.c, 2, mc.trunk, mc.source, x.data(), n, guessing.data(), nullptr, scratch);
  EXPECT_TRUE(mc.source.asked_ahead.empty());
  // latent_moe_lookahead_layers() ahead: layer 1 of 5 guesses layers 2 up
  // to 1 + that (whose routers here are the same), the nearer first, and
  // its output still keeps every bit.
  mc.c.num_hidden_layers = 5;
  mc.source.asked_ahead.clear();
  mc.source.guessed_layers.clear();
  latent_moe_forward(mc.c, 1, mc.trunk, mc.source, x.data(), n, guessing.data(), nullptr, scratch);
  std::vector<int> ahead;
  for (int a = 1; a <= latent_moe_lookahead_layers(); ++a) ahead.push_back(1 + a);
  EXPECT_EQ(mc.source.asked_ahead, ahead);
  EXPECT_EQ(mc.source.guessed_layers, ahead);
  EXPECT_EQ(mc.source.guessed, want);
  EXPECT_EQ(std::memcmp(plain.data(), guessing.data(), plain.size() * sizeof(float)), 0);
  // A dense layer guesses the MoE layer after it (the first of a pass) the
  // same way, from its own input; a dense layer before another dense one
  // guesses nothing.
  mc.c.first_k_dense_replace = 2;
  mc.source.guessed_layers.clear();
  mc.source.guessed.clear();
  latent_moe_guess_from_dense(mc.c, 0, mc.source, x.data(), n, nullptr, scratch);
  EXPECT_TRUE(mc.source.guessed_layers.empty());
  latent_moe_guess_from_dense(mc.c, 1, mc.source, x.data(), n, nullptr, scratch);
  EXPECT_EQ(mc.source.guessed_layers, std::vector<int>{2});
  EXPECT_EQ(mc.source.guessed, want);
}

// MXFP4 experts give the same result as BF16 experts holding their decoded
// values (every MXFP4 value is exact in BF16).
TEST(LatentMoe, Mxfp4ExpertsEqualTheirDecodedBf16) {
  MoeCase mc;
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> code(0, 255), sc(120, 130);
  struct Packed {
    std::vector<uint8_t> packed, scales;
  };
  std::vector<Packed> store;
  std::vector<std::vector<uint16_t>> decoded;
  auto make = [&](int64_t rows, int64_t cols, ExpertMatrix* mx, ExpertMatrix* bf) {
    Packed p;
    for (int64_t i = 0; i < rows * cols / 2; ++i) p.packed.push_back(static_cast<uint8_t>(code(rng)));
    for (int64_t i = 0; i < rows * cols / 32; ++i) p.scales.push_back(static_cast<uint8_t>(sc(rng)));
    store.push_back(std::move(p));
    std::vector<uint16_t> d(rows * cols);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_mxfp4_row(store.back().packed.data() + r * cols / 2,
                                    store.back().scales.data() + r * cols / 32, cols, row.data());
      for (int64_t c = 0; c < cols; ++c) d[r * cols + c] = kernels::f32_to_bf16(row[c]);
    }
    decoded.push_back(std::move(d));
    mx->is_mxfp4 = true;
    mx->mx = Mxfp4Matrix{store.back().packed.data(), store.back().scales.data(), rows, cols};
    bf->is_mxfp4 = false;
    bf->bf = Bf16Matrix{decoded.back().data(), rows, cols};
  };
  store.reserve(64);
  decoded.reserve(64);
  ExpertSource mx_source, bf_source;
  for (int e = 0; e < MoeCase::E; ++e) {
    ExpertWeights m, b;
    make(MoeCase::inter, MoeCase::latent, &m.w1, &b.w1);
    make(MoeCase::inter, MoeCase::latent, &m.w3, &b.w3);
    make(MoeCase::latent, MoeCase::inter, &m.w2, &b.w2);
    mx_source.experts.push_back(m);
    bf_source.experts.push_back(b);
  }
  const size_t n = 5;
  std::vector<float> x = test::random_input(rng, n * MoeCase::hidden);
  std::vector<float> a(n * MoeCase::hidden), b(n * MoeCase::hidden);
  ForwardScratch scratch;
  latent_moe_forward(mc.c, 1, mc.trunk, mx_source, x.data(), n, a.data(), nullptr, scratch);
  latent_moe_forward(mc.c, 1, mc.trunk, bf_source, x.data(), n, b.data(), nullptr, scratch);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i]))) << i;
}

}  // namespace
}  // namespace k3
