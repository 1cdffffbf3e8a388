// The layer-major prefill (ForwardPass::set_chunk) against today's batches: the
// same logits, sequence state and layer taps, bit for bit, for every chunk
// and sub-batch size; each layer's weights acquired once per chunk and each
// routed expert requested at most once per chunk and layer; a stop inside a
// layer puts the sequence back as it was before the prompt.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "model/forward_pass.h"
#include "model/forwarding_weight_source.h"
#include "model/prefill_chunk.h"
#include "model_fixture.h"

namespace k3 {
namespace {

using test::TinyModel;

// A prompt longer than the golden's 32 ids, so chunks split it several ways.
std::vector<int32_t> prompt(size_t n) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 2654435761u + 17) % 8192);
  return ids;
}

// Counts what the passes ask the weights for.
class CountingSource : public ForwardingWeightSource {
 public:
  using ForwardingWeightSource::ForwardingWeightSource;
  const LayerWeights& acquire_layer(int layer) override {
    ++acquired[layer];
    return inner_.acquire_layer(layer);
  }
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override {
    ++expert_calls;
    for (int e : experts) {
      ++requests[{layer, e}];
      union_[layer].insert(e);
    }
    inner_.for_each_expert(layer, experts, on_ready);
  }
  std::map<int, int> acquired;
  std::map<std::pair<int, int>, int> requests;
  std::map<int, std::set<int>> union_;
  int expert_calls = 0;
};

// Records every tapped row by (layer, position).
class RecordingTap : public LayerTap {
 public:
  bool wants(int) const override { return true; }
  void on_layer(int layer, const SequenceState&, int64_t pos0, const float* rows, size_t n) override {
    for (size_t t = 0; t < n; ++t)
      rows_[{layer, pos0 + static_cast<int64_t>(t)}].assign(rows + t * hidden, rows + (t + 1) * hidden);
  }
  size_t hidden = 0;
  std::map<std::pair<int, int64_t>, std::vector<float>> rows_;
};

struct PrefillRun {
  std::vector<float> logits;
  SequenceState state;
  std::map<std::pair<int, int64_t>, std::vector<float>> taps;
};

PrefillRun run(size_t max_batch, size_t chunk, const std::vector<int32_t>& ids, LogitRows rows, int threads = 2,
               CountingSource* counting = nullptr) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(threads);
  WeightSource& source = counting ? static_cast<WeightSource&>(*counting) : *m.weights;
  ForwardPass engine(m.config, source, pool);
  engine.set_max_batch(max_batch);
  engine.set_chunk(chunk);
  RecordingTap tap;
  tap.hidden = static_cast<size_t>(m.config.hidden_size);
  engine.set_layer_tap(&tap);
  PrefillRun r;
  engine.reset(r.state);
  const size_t vocab = m.config.vocab_size;
  r.logits.resize((rows == LogitRows::kAll ? ids.size() : 1) * vocab);
  engine.forward(r.state, ids, rows, r.logits.data());
  r.taps = std::move(tap.rows_);
  return r;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp of two empty vectors would pass it null pointers.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Every float of the sequence state, bit for bit.
void expect_same_state(const SequenceState& a, const SequenceState& b, const std::string& what) {
  EXPECT_EQ(a.positions, b.positions) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.layers.size(), b.layers.size()) << what;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerState &x = a.layers[i], &y = b.layers[i];
    EXPECT_TRUE(same_floats(x.kda.S, y.kda.S)) << what << ": KDA state of layer " << i;
    EXPECT_TRUE(same_floats(x.kda.conv_q, y.kda.conv_q) && same_floats(x.kda.conv_k, y.kda.conv_k) &&
                same_floats(x.kda.conv_v, y.kda.conv_v))
        << what << ": conv carries of layer " << i;
    EXPECT_TRUE(same_floats(x.mla.latent, y.mla.latent)) << what << ": MLA cache of layer " << i;
  }
}

TEST(PrefillChunk, BitIdenticalToBatchesForEveryChunkAndSubBatch) {
  const std::vector<int32_t> ids = prompt(75);
  const PrefillRun want = run(256, 0, ids, LogitRows::kAll);
  const PrefillRun want_last = run(256, 0, ids, LogitRows::kLast);
  for (size_t max_batch : {1, 3, 8}) {
    for (size_t chunk : {0, 4, 9, 16, 75, 200}) {
      const std::string what = "batch " + std::to_string(max_batch) + ", chunk " + std::to_string(chunk);
      const PrefillRun got = run(max_batch, chunk, ids, LogitRows::kAll, max_batch == 3 ? 3 : 1);
      EXPECT_TRUE(same_floats(want.logits, got.logits)) << what << ": logits of every row";
      expect_same_state(want.state, got.state, what);
      EXPECT_EQ(want.taps.size(), got.taps.size()) << what;
      EXPECT_TRUE(want.taps == got.taps) << what << ": layer taps";
      const PrefillRun last = run(max_batch, chunk, ids, LogitRows::kLast);
      EXPECT_TRUE(same_floats(want_last.logits, last.logits)) << what << ": logits of the last row";
    }
  }
}

// A prompt after earlier tokens (a second turn): the chunk starts mid-context.
TEST(PrefillChunk, ContinuesAfterEarlierTokens) {
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t> first = prompt(20), second = prompt(47);
  const size_t vocab = m.config.vocab_size;
  std::vector<std::vector<float>> outs;
  for (size_t chunk : {0, 47}) {
    ThreadPool pool(2);
    ForwardPass engine(m.config, *m.weights, pool);
    engine.set_max_batch(6);
    engine.set_chunk(chunk);
    SequenceState s;
    engine.reset(s);
    std::vector<float> logits(second.size() * vocab);
    engine.forward(s, first, LogitRows::kLast, logits.data());
    engine.forward(s, second, LogitRows::kAll, logits.data());
    outs.push_back(logits);
  }
  EXPECT_TRUE(same_floats(outs[0], outs[1]));
}

TEST(PrefillChunk, WeightsReadOncePerChunk) {
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t> ids = prompt(64);
  const int layers = m.config.num_hidden_layers;
  CountingSource batches(*m.weights);
  run(4, 0, ids, LogitRows::kLast, 2, &batches);  // today: 16 passes
  CountingSource one(*m.weights);
  run(4, 64, ids, LogitRows::kLast, 2, &one);
  CountingSource two(*m.weights);
  run(4, 32, ids, LogitRows::kLast, 2, &two);
  for (int i = 0; i < layers; ++i) {
    EXPECT_EQ(batches.acquired[i], 16) << "layer " << i;
    EXPECT_EQ(one.acquired[i], 1) << "layer " << i;
    EXPECT_EQ(two.acquired[i], 2) << "layer " << i;
  }
  const int moe_layers = layers - m.config.first_k_dense_replace;
  EXPECT_EQ(one.expert_calls, moe_layers);
  EXPECT_EQ(two.expert_calls, 2 * moe_layers);
  size_t distinct = 0, batch_requests = 0;
  for (const auto& [key, count] : one.requests) {
    EXPECT_EQ(count, 1) << "layer " << key.first << " expert " << key.second << " requested again in one chunk";
    ++distinct;
  }
  for (const auto& [key, count] : batches.requests) batch_requests += count;
  EXPECT_TRUE(one.union_ == batches.union_) << "the chunk requests the experts the batches chose";
  EXPECT_LT(distinct, batch_requests);
  for (const auto& [key, count] : two.requests) EXPECT_LE(count, 2);
}

// Ctrl-C inside a layer of a chunk (between its sub-batches): the sequence is
// put back as it was before the prompt and stays usable.
TEST(PrefillChunk, StopInsideALayerRestoresTheSequence) {
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t> ids = prompt(40);
  const PrefillRun want = run(256, 0, ids, LogitRows::kLast);
  ThreadPool pool(2);
  ForwardPass engine(m.config, *m.weights, pool);
  engine.set_max_batch(8);
  engine.set_chunk(40);
  SequenceState s, fresh;
  engine.reset(s);
  engine.reset(fresh);
  int polls = 0;
  for (int stop_at : {1, 3, 12, 30}) {
    polls = 0;
    engine.set_stop([&] { return ++polls == stop_at; }, true);
    std::vector<float> logits(m.config.vocab_size);
    try {
      engine.forward(s, ids, LogitRows::kLast, logits.data());
      ADD_FAILURE() << "no stop at poll " << stop_at;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kInterrupted);
    }
    expect_same_state(fresh, s, "after a stop at poll " + std::to_string(stop_at));
  }
  engine.set_stop(nullptr, false);
  std::vector<float> logits(m.config.vocab_size);
  engine.forward(s, ids, LogitRows::kLast, logits.data());
  EXPECT_TRUE(same_floats(want.logits, logits));
}

TEST(PrefillChunk, CarriedBytesPerToken) {
  const ModelConfig& c = TinyModel::get().config;
  const uint64_t hidden = c.hidden_size, k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  const uint64_t blocks = (c.num_hidden_layers + c.attn_res_block_size - 1) / c.attn_res_block_size;
  // p and B; then routing (id, weight, row index), z, shared output, k expert outputs.
  const uint64_t want = (blocks + 1) * hidden * 4 + k * (4 + 4 + 8) + 4 * (latent + hidden + k * latent);
  EXPECT_EQ(prefill_chunk_bytes_per_token(c), want);
  PrefillChunk chunk;
  chunk.reserve(c, 100);
  EXPECT_EQ(chunk.bytes(), 100 * want + (c.num_experts + 1) * 8);
}

}  // namespace
}  // namespace k3
