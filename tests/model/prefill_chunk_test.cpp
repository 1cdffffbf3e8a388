// The layer-major prefill (ForwardPass::set_chunk) against today's batches: the
// same logits, sequence state and layer taps, bit for bit, for every chunk
// and sub-batch size; each layer's weights acquired once per chunk and each
// routed expert requested at most once per chunk and layer; a stop inside a
// layer puts the sequence back as it was before the prompt. The same with
// the chunk's block states in a spill file, which reads and writes exactly
// what the layers need and leaves nothing in its directory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "io/spill_file.h"
#include "model/forward_pass.h"
#include "model/forwarding_weight_source.h"
#include "model/prefill_chunk.h"
#include "model/weight_binding.h"
#include "model_fixture.h"
#include "runtime/resident_weights.h"
#include "same_state.h"

namespace k3 {
namespace {

using test::expect_same_state;
using test::same_bits;
using test::ScratchDir;
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

// The tiny model's layers with every matrix the forward pass reads through
// lin() alone handed over in row blocks of `block_rows` rows, as a trunk
// streamed in row blocks does (trunk_stream/trunk_stream.h); each matrix counts
// how often its blocks pass (one pass = one read of the matrix from disk).
class RowBlockSource : public ForwardingWeightSource {
 public:
  RowBlockSource(WeightSource& inner, const ModelConfig& c, const Checkpoint& checkpoint, int64_t block_rows)
      : ForwardingWeightSource(inner) {
    // Each tensor's bytes, read from its shard (aligned for the kernels).
    const TensorLookup lookup = [&](const std::string& name) -> const void* {
      const TensorLocation& at = checkpoint.at(name);
      std::ifstream f(checkpoint.shards()[at.shard].path, std::ios::binary);
      f.seekg(static_cast<std::streamoff>(at.info->offset));
      bytes_.emplace_back((at.info->nbytes + 63) / 64);
      f.read(reinterpret_cast<char*>(bytes_.back().data()), static_cast<std::streamsize>(at.info->nbytes));
      EXPECT_TRUE(f.good()) << name;
      return bytes_.back().data();
    };
    const RowMatrixLookup row_lookup = [&, block_rows](const std::string& name, int64_t r, int64_t cols) {
      matrices_.emplace_back(static_cast<const uint16_t*>(lookup(name)), r, cols, block_rows);
      return Bf16Matrix{nullptr, r, cols, &matrices_.back()};
    };
    for (int i = 0; i < c.num_hidden_layers; ++i) layers_.push_back(bind_layer_weights(c, i, lookup, &row_lookup));
  }
  const LayerWeights& acquire_layer(int layer) override {
    inner_.acquire_layer(layer);
    return layers_[static_cast<size_t>(layer)];
  }
  // How often each matrix's blocks passed, in binding order.
  std::vector<int> passes() const {
    std::vector<int> v;
    for (const Blocked& b : matrices_) v.push_back(b.passes);
    return v;
  }

 private:
  struct Blocked : MatrixRows {
    Blocked(const uint16_t* d, int64_t r, int64_t c, int64_t b) : data(d), rows(r), cols(c), block(b) {}
    void for_each_block(const Block& on_block) const override {
      ++passes;
      for (int64_t r0 = 0; r0 < rows; r0 += block)
        on_block(r0, Bf16Matrix{data + r0 * cols, std::min(block, rows - r0), cols, nullptr});
    }
    const uint16_t* data;
    int64_t rows, cols, block;
    mutable int passes = 0;
  };
  struct alignas(64) Line {
    unsigned char b[64];
  };
  std::deque<std::vector<Line>> bytes_;
  std::deque<Blocked> matrices_;  // stable addresses: the layers point at them
  std::vector<LayerWeights> layers_;
};

struct PrefillRun {
  std::vector<float> logits;
  SequenceState state;
  std::map<std::pair<int, int64_t>, std::vector<float>> taps;
};

struct SpillCounts {
  uint64_t written = 0, read = 0;
};

// spill_dir: the chunk's block states go to a spill file there; its counts
// are left in *spilled.
// source: the weights (default: the tiny model's, resident); sub_batch: the
// chunk's sub-batch (ForwardPass::set_chunk_sub_batch); piece: the rows whose
// block states are mixed at a time (ForwardPass::set_chunk_piece_rows).
PrefillRun run(size_t max_batch, size_t chunk, const std::vector<int32_t>& ids, LogitRows rows, int threads = 2,
               WeightSource* counting = nullptr, const std::string& spill_dir = "", SpillCounts* spilled = nullptr,
               size_t sub_batch = 0, size_t piece = kChunkPieceRows) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(threads);
  WeightSource& source = counting ? *counting : *m.weights;
  ForwardPass engine(m.config, source, pool);
  engine.set_max_batch(max_batch);
  engine.set_chunk(chunk);
  engine.set_chunk_sub_batch(sub_batch);
  engine.set_chunk_piece_rows(piece);
  if (!spill_dir.empty()) engine.set_spill(std::make_unique<SpillFile>(spill_dir));
  RecordingTap tap;
  tap.hidden = static_cast<size_t>(m.config.hidden_size);
  engine.set_layer_tap(&tap);
  PrefillRun r;
  engine.reset(r.state);
  const size_t vocab = m.config.vocab_size;
  r.logits.resize((rows == LogitRows::kAll ? ids.size() : 1) * vocab);
  engine.forward(r.state, ids, rows, r.logits.data());
  r.taps = std::move(tap.rows_);
  if (spilled && engine.spill()) *spilled = {engine.spill()->bytes_written(), engine.spill()->bytes_read()};
  return r;
}

TEST(PrefillChunk, BitIdenticalToBatchesForEveryChunkAndSubBatch) {
  const std::vector<int32_t> ids = prompt(75);
  const PrefillRun want = run(256, 0, ids, LogitRows::kAll);
  const PrefillRun want_last = run(256, 0, ids, LogitRows::kLast);
  for (size_t max_batch : {1, 3, 8}) {
    for (size_t chunk : {0, 4, 9, 16, 75, 200}) {
      const std::string what = "batch " + std::to_string(max_batch) + ", chunk " + std::to_string(chunk);
      const PrefillRun got = run(max_batch, chunk, ids, LogitRows::kAll, max_batch == 3 ? 3 : 1);
      EXPECT_TRUE(same_bits(want.logits, got.logits)) << what << ": logits of every row";
      expect_same_state(want.state, got.state, what);
      EXPECT_EQ(want.taps.size(), got.taps.size()) << what;
      EXPECT_TRUE(want.taps == got.taps) << what << ": layer taps";
      const PrefillRun last = run(max_batch, chunk, ids, LogitRows::kLast);
      EXPECT_TRUE(same_bits(want_last.logits, last.logits)) << what << ": logits of the last row";
    }
  }
}

// A trunk in row blocks: the same bits for every chunk, sub-batch and batch,
// and each matrix's blocks pass once per sub-batch of the chunk, so a
// sub-batch as long as the chunk reads every row block once per chunk.
TEST(PrefillChunk, RowBlocksPassOncePerSubBatchWithTheSameBits) {
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t> ids = prompt(75);
  const PrefillRun want = run(256, 0, ids, LogitRows::kAll);
  for (size_t max_batch : {1, 3, 8}) {
    for (size_t chunk : {9, 40, 75}) {
      for (size_t sub : {size_t{0}, size_t{5}, size_t{16}, chunk}) {
        const std::string what = "batch " + std::to_string(max_batch) + ", chunk " + std::to_string(chunk) +
                                 ", sub-batch " + std::to_string(sub);
        RowBlockSource blocked(*m.weights, m.config, *m.checkpoint, 3);
        const PrefillRun got =
            run(max_batch, chunk, ids, LogitRows::kAll, max_batch == 3 ? 3 : 1, &blocked, "", nullptr, sub);
        EXPECT_TRUE(same_bits(want.logits, got.logits)) << what << ": logits of every row";
        expect_same_state(want.state, got.state, what);
        EXPECT_TRUE(want.taps == got.taps) << what << ": layer taps";
        // Passes per matrix: each chunk (a chunk of at most a batch is one
        // batch) goes through in sub-batches of max(batch, sub) rows.
        const size_t per = std::max(chunk, max_batch);
        int expected = 0;
        for (size_t begin = 0; begin < ids.size(); begin += per) {
          const size_t n = std::min(per, ids.size() - begin);
          const size_t step = n > max_batch ? std::min(n, std::max(max_batch, sub)) : n;
          expected += static_cast<int>((n + step - 1) / step);
        }
        for (int passes : blocked.passes()) ASSERT_EQ(passes, expected) << what;
      }
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
  EXPECT_TRUE(same_bits(outs[0], outs[1]));
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
  // A layer's experts go to the source in groups whose outputs fill at most
  // a sub-batch of latent rows, or one expert alone (model/latent_moe_chunk.h):
  // the chunk's rows * k entries take at least k calls (an expert has at
  // most a row each), each expert in exactly one of them.
  const int k = m.config.num_experts_per_token;
  EXPECT_GE(one.expert_calls, k * moe_layers);
  EXPECT_LE(one.expert_calls, m.config.num_experts * moe_layers);
  EXPECT_GE(two.expert_calls, 2 * k * moe_layers);
  // With the whole chunk as the sub-batch, next-fit packs them: two groups
  // in a row hold more entries than the chunk's rows.
  CountingSource whole(*m.weights);
  run(4, 64, ids, LogitRows::kLast, 2, &whole, "", nullptr, 64);
  EXPECT_GE(whole.expert_calls, k * moe_layers);
  EXPECT_LE(whole.expert_calls, 2 * k * moe_layers);
  EXPECT_TRUE(whole.union_ == batches.union_);
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
  EXPECT_TRUE(same_bits(want.logits, logits));
}

// What the spill file sees for a prompt of `tokens` in chunks of `chunk`
// with sub-batches of max(batch, sub) rows, written out: a chunk longer than
// the batch writes each block state of its rows once, when the block opens;
// layer i reads the rows of the i / block_size + 1 blocks opened by then,
// once for a sub-batch of at most `piece` rows, otherwise once for its
// FFN's mix and, but for the block layer i opens, once for its attention's;
// each MoE layer writes its rows of shared-expert output and reads them back;
// the head reads every block for the rows it computes logits of (all of
// them, or the last row of the prompt).
SpillCounts spill_formula(const ModelConfig& c, size_t tokens, size_t batch, size_t chunk, LogitRows rows,
                          size_t sub = 0, size_t piece = kChunkPieceRows) {
  const uint64_t row = static_cast<uint64_t>(c.hidden_size) * 4;
  const uint64_t L = c.num_hidden_layers, size = c.attn_res_block_size, blocks = (L + size - 1) / size;
  const uint64_t moe_layers = L - c.first_k_dense_replace;  // each writes its shared rows and reads them back
  const size_t per = std::max(chunk, batch);
  SpillCounts want;
  for (size_t begin = 0; begin < tokens; begin += per) {
    const uint64_t r = std::min(per, tokens - begin);
    if (r <= batch) continue;  // a batch: no chunk, nothing spilled
    want.written += (blocks + moe_layers) * r * row;
    const size_t step = std::min<size_t>(r, std::max(batch, sub));
    for (size_t b = 0; b < r; b += step) {
      const uint64_t m = std::min<size_t>(step, r - b);
      for (uint64_t i = 0; i < L; ++i) {
        want.read += (i / size + 1) * m * row;
        if (m > piece) want.read += (i / size + (i % size == 0 ? 0 : 1)) * m * row;
      }
    }
    want.read += moe_layers * r * row;
    const bool last = begin + r == tokens;
    if (rows == LogitRows::kAll) want.read += blocks * r * row;
    else if (rows == LogitRows::kLast && last) want.read += blocks * row;
  }
  return want;
}

TEST(PrefillChunk, SpilledBlockStatesBitIdentical) {
  const ModelConfig& c = TinyModel::get().config;
  ASSERT_GT(c.num_hidden_layers, c.attn_res_block_size) << "the tiny model must open several blocks";
  const std::vector<int32_t> ids = prompt(75);
  const PrefillRun want = run(256, 0, ids, LogitRows::kAll);
  const PrefillRun want_last = run(256, 0, ids, LogitRows::kLast);
  ScratchDir dir;
  for (size_t max_batch : {1, 3, 8}) {
    for (size_t chunk : {4, 9, 16, 75, 200}) {
      const std::string what = "spilled, batch " + std::to_string(max_batch) + ", chunk " + std::to_string(chunk);
      SpillCounts counts;
      const PrefillRun got =
          run(max_batch, chunk, ids, LogitRows::kAll, max_batch == 3 ? 3 : 1, nullptr, dir.path(), &counts);
      EXPECT_TRUE(same_bits(want.logits, got.logits)) << what << ": logits of every row";
      expect_same_state(want.state, got.state, what);
      EXPECT_TRUE(want.taps == got.taps) << what << ": layer taps";
      const SpillCounts all = spill_formula(c, ids.size(), max_batch, chunk, LogitRows::kAll);
      EXPECT_EQ(counts.written, all.written) << what;
      EXPECT_EQ(counts.read, all.read) << what;
      const PrefillRun last = run(max_batch, chunk, ids, LogitRows::kLast, 1, nullptr, dir.path(), &counts);
      EXPECT_TRUE(same_bits(want_last.logits, last.logits)) << what << ": logits of the last row";
      EXPECT_EQ(counts.read, spill_formula(c, ids.size(), max_batch, chunk, LogitRows::kLast).read) << what;
      EXPECT_EQ(dir.entries(), 0u) << what << ": the spill file is unlinked as soon as it is made";
    }
  }
  // Sub-batches longer than the batch: the shared experts' rows go to the
  // file and come back a sub-batch at a time, and an expert's rows run in
  // pieces of the sub-batch; the same bits and the same bytes.
  for (size_t chunk : {16, 75})
    for (size_t sub : {size_t{5}, chunk}) {
      const std::string what =
          "spilled, batch 3, chunk " + std::to_string(chunk) + ", sub-batch " + std::to_string(sub);
      SpillCounts counts;
      const PrefillRun got = run(3, chunk, ids, LogitRows::kAll, 3, nullptr, dir.path(), &counts, sub);
      EXPECT_TRUE(same_bits(want.logits, got.logits)) << what << ": logits of every row";
      expect_same_state(want.state, got.state, what);
      EXPECT_TRUE(want.taps == got.taps) << what << ": layer taps";
      const SpillCounts all = spill_formula(c, ids.size(), 3, chunk, LogitRows::kAll);
      EXPECT_EQ(counts.written, all.written) << what;
      EXPECT_EQ(counts.read, all.read) << what;
    }
}

// The block states mixed a piece of rows at a time (h one piece), in memory
// and spilled: the same bits for every piece, sub-batch and batch (a row's
// mix does not depend on its piece), and a spilled sub-batch longer than a
// piece reads a layer's blocks back for each of its two mixes.
TEST(PrefillChunk, BlockStatesInPiecesBitIdentical) {
  const ModelConfig& c = TinyModel::get().config;
  const std::vector<int32_t> ids = prompt(75);
  const PrefillRun want = run(256, 0, ids, LogitRows::kAll);
  const PrefillRun want_last = run(256, 0, ids, LogitRows::kLast);
  ScratchDir dir;
  struct Case {
    size_t batch, chunk, sub, piece;
  };
  for (const Case& k :
       {Case{1, 40, 16, 1}, Case{3, 75, 0, 2}, Case{3, 40, 16, 5}, Case{2, 40, 16, 8}, Case{8, 75, 75, 7}}) {
    for (const bool spill : {false, true}) {
      const std::string what = std::string(spill ? "spilled" : "in memory") + ", batch " + std::to_string(k.batch) +
                               ", chunk " + std::to_string(k.chunk) + ", sub-batch " + std::to_string(k.sub) +
                               ", piece " + std::to_string(k.piece);
      SpillCounts counts;
      const PrefillRun got = run(k.batch, k.chunk, ids, LogitRows::kAll, k.batch == 3 ? 3 : 1, nullptr,
                                 spill ? dir.path() : "", &counts, k.sub, k.piece);
      EXPECT_TRUE(same_bits(want.logits, got.logits)) << what << ": logits of every row";
      expect_same_state(want.state, got.state, what);
      EXPECT_TRUE(want.taps == got.taps) << what << ": layer taps";
      if (!spill) continue;
      const SpillCounts all = spill_formula(c, ids.size(), k.batch, k.chunk, LogitRows::kAll, k.sub, k.piece);
      EXPECT_EQ(counts.written, all.written) << what;
      EXPECT_EQ(counts.read, all.read) << what;
      const PrefillRun last =
          run(k.batch, k.chunk, ids, LogitRows::kLast, 1, nullptr, dir.path(), &counts, k.sub, k.piece);
      EXPECT_TRUE(same_bits(want_last.logits, last.logits)) << what << ": logits of the last row";
      EXPECT_EQ(counts.read, spill_formula(c, ids.size(), k.batch, k.chunk, LogitRows::kLast, k.sub, k.piece).read)
          << what;
    }
  }
}

TEST(SpillFile, LeavesNothingAndNamesItsDirectory) {
  ScratchDir dir;
  {
    SpillFile f(dir.path());
    EXPECT_EQ(dir.entries(), 0u) << "only the descriptor holds the file";
    const std::vector<char> data(10000, 'x');
    f.write(4096, data.data(), data.size());
    std::vector<char> back(data.size());
    f.read(4096, back.data(), back.size());
    EXPECT_EQ(back, data);
    EXPECT_EQ(f.bytes_written(), 10000u);
    EXPECT_EQ(f.bytes_read(), 10000u);
    try {  // past what was written: an error, not zeros or garbage
      f.read(14000, back.data(), back.size());
      FAIL() << "a read past the end returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kIo);
      EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
    }
  }
  try {
    SpillFile missing(dir.path() + "/no-such-dir");
    FAIL() << "a spill file was made in a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kIo);
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(PrefillChunk, CarriedBytesPerToken) {
  const ModelConfig& c = TinyModel::get().config;
  const uint64_t hidden = c.hidden_size, k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  const uint64_t blocks = (c.num_hidden_layers + c.attn_res_block_size - 1) / c.attn_res_block_size;
  // p and B; then routing (id, weight, entry index), z, shared output and
  // the row's sum of expert outputs: one latent row of sums, not k outputs
  // (a group's outputs are the sub-batch's op area).
  const uint64_t want = (blocks + 1) * hidden * 4 + k * (4 + 4 + 8) + 4 * (latent + hidden + latent);
  EXPECT_EQ(prefill_chunk_bytes_per_token(c), want);
  PrefillChunk chunk;
  chunk.reserve(c, 100, 8, nullptr);
  EXPECT_EQ(chunk.bytes(), 100 * want + (c.num_experts + 1) * 8);
  // Spilled: the block states and the shared output leave memory but for 8
  // staged rows of each block (the shared rows pass through the op area).
  const uint64_t block_states = blocks * hidden * 4;
  EXPECT_EQ(spilled_block_bytes_per_token(c), block_states);
  EXPECT_EQ(spill_file_bytes_per_token(c), block_states + hidden * 4);
  EXPECT_EQ(prefill_chunk_bytes_per_token(c, true), want - block_states - hidden * 4);
  ScratchDir dir;
  SpillFile file(dir.path());
  PrefillChunk spilled;
  spilled.reserve(c, 100, 8, &file);
  EXPECT_EQ(spilled.bytes(), 100 * (want - block_states - hidden * 4) + 8 * block_states + (c.num_experts + 1) * 8);
}

}  // namespace
}  // namespace k3
