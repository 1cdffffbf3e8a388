// The sequence state lent to a layer-major chunk (ForwardPass::set_state_loan,
// model/state_loan.h) on the tiny model: the logits, the state and the taps
// are bit-identical to the chunk without the loan, continuing a sequence
// (MLA rows before the chunk), with captures inside it and for two sequences
// in one pass; while a layer runs every other layer's state is freed; the
// file takes and gives back exactly the bytes of state_loan.h's formula;
// an MLA cache keeps its generation across a loan; a stop inside a layer,
// an error mid-chunk and a file that cannot give the state back each leave
// every sequence whole (as before the chunk, or empty), never part in the
// file; and nothing is left in the directory.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "io/spill_file.h"
#include "model/forward_pass.h"
#include "model_fixture.h"
#include "planning/state_loan_plan.h"
#include "same_state.h"

namespace k3 {
namespace {

using test::expect_same_state;
using test::same_bits;
using test::ScratchDir;
using test::TinyModel;

std::vector<int32_t> prompt(size_t n, uint32_t seed) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 2654435761u + seed) % 8192);
  return ids;
}

std::unique_ptr<SpillFile> loan_file(const ScratchDir& d) {
  return std::make_unique<SpillFile>(d.path(), "k3-state-loan", "the sequence state lent to the prefill's chunk");
}

// Records every tapped row, and checks as each layer's output is tapped
// (inside the chunk, the layer still in memory) that every other layer's
// state of every sequence is freed (no capacity left) where `lent`.
class LoanTap : public LayerTap {
 public:
  explicit LoanTap(std::vector<SequenceState*> seqs, bool lent) : seqs_(std::move(seqs)), lent_(lent) {}
  bool wants(int) const override { return true; }
  void on_layer(int layer, const SequenceState&, int64_t pos0, const float* rows, size_t n) override {
    const size_t hidden = TinyModel::get().config.hidden_size;
    for (size_t t = 0; t < n; ++t) taps.emplace_back(rows + t * hidden, rows + (t + 1) * hidden);
    taps.push_back({static_cast<float>(layer), static_cast<float>(pos0)});
    if (!lent_) return;
    for (const SequenceState* s : seqs_)
      for (size_t j = 0; j < s->layers.size(); ++j) {
        const LayerState& ls = s->layers[j];
        const size_t held = ls.kda.S.capacity() + ls.kda.conv_q.capacity() + ls.kda.conv_k.capacity() +
                            ls.kda.conv_v.capacity() + ls.mla.latent.capacity();
        if (static_cast<int>(j) == layer) {
          EXPECT_GT(held, 0u) << "the running layer " << layer << " is in memory";
        } else {
          EXPECT_EQ(held, 0u) << "layer " << j << "'s state is in memory while layer " << layer << " runs";
        }
      }
    if (throw_at == layer)
      throw Error(ExitCode::kBadModel, "a non-finite value (a test's) in layer " + std::to_string(layer));
  }
  std::vector<std::vector<float>> taps;
  int throw_at = -1;

 private:
  std::vector<SequenceState*> seqs_;
  bool lent_;
};

struct Engine {
  ThreadPool pool{2};
  ForwardPass pass;
  explicit Engine(const ScratchDir* dir) : pass(TinyModel::get().config, *TinyModel::get().weights, pool) {
    pass.set_max_batch(8);
    pass.set_chunk(40);
    if (dir) pass.set_state_loan(loan_file(*dir));
  }
};

// Each sequence continues after `before` ids run plainly (MLA rows before
// the chunk): the chunk of 40 rows with and without the loan.
TEST(StateLoan, ChunkBitIdenticalAndFreesTheOtherLayers) {
  const ModelConfig& c = TinyModel::get().config;
  ScratchDir dir;
  std::vector<float> logits[2];
  SequenceState states[2];
  std::vector<std::vector<float>> taps[2];
  uint64_t generation_before = 0, generation_after = 0;
  const int mla = [&] {
    for (int i = 0; i < c.num_hidden_layers; ++i)
      if (!c.is_kda_layer(i)) return i;
    return -1;
  }();
  ASSERT_GE(mla, 0);
  for (int lend : {0, 1}) {
    Engine e(lend ? &dir : nullptr);
    SequenceState& s = states[lend];
    e.pass.reset(s);
    logits[lend].resize(c.vocab_size);
    e.pass.forward(s, prompt(13, 5), LogitRows::kLast, logits[lend].data());  // 13 > 8: a chunk, lent too
    LoanTap tap({&s}, lend == 1);
    e.pass.set_layer_tap(&tap);
    if (lend) generation_before = s.layers[mla].mla.generation;
    const uint64_t written = lend ? e.pass.state_loan_file()->bytes_written() : 0;
    const uint64_t read = lend ? e.pass.state_loan_file()->bytes_read() : 0;
    e.pass.forward(s, prompt(40, 17), LogitRows::kLast, logits[lend].data());
    taps[lend] = std::move(tap.taps);
    if (!lend) continue;
    generation_after = s.layers[mla].mla.generation;
    // The second chunk: P = 13 positions before it, r = 40 rows.
    const double kda = static_cast<double>(kda_layer_state_bytes(c)) * c.num_kda_layers();
    const double row = static_cast<double>(mla_layer_cache_bytes(c, 1)) * c.num_mla_layers();
    EXPECT_EQ(static_cast<double>(e.pass.state_loan_file()->bytes_written() - written), 2 * kda + (13 + 40) * row);
    EXPECT_EQ(static_cast<double>(e.pass.state_loan_file()->bytes_read() - read), 2 * kda + (2 * 13 + 40) * row);
    // Both chunks, as the forecast counts a prompt of 53 in chunks of 40 (the
    // first of 13 rows is shorter: written 2 kda + 13 rows, read the same).
    const StateLoanBytes both = state_loan_bytes(c, 80, 40, 8);
    EXPECT_EQ(static_cast<double>(e.pass.state_loan_file()->bytes_written()), 2 * kda + 13 * row + 2 * kda + 53 * row);
    EXPECT_EQ(both.written, 2 * (2 * kda) + (40 + 80) * row);
    EXPECT_EQ(both.read, 2 * (2 * kda) + (40 + 120) * row);
  }
  EXPECT_TRUE(same_bits(logits[0], logits[1]));
  expect_same_state(states[0], states[1], "lent against kept");
  EXPECT_TRUE(taps[0] == taps[1]) << "the taps";
  EXPECT_EQ(generation_before, generation_after) << "rows that went to the file and back are the same rows";
  EXPECT_TRUE(dir.empty());
}

// A server's pass: two sequences' rows in one chunk, with a capture inside.
TEST(StateLoan, TwoSequencesAndACaptureBitIdentical) {
  const ModelConfig& c = TinyModel::get().config;
  ScratchDir dir;
  std::vector<float> logits[2];
  SequenceState a[2], b[2];
  StateCapture caps[2] = {{1, 20, {}, {}}, {1, 20, {}, {}}};
  for (int lend : {0, 1}) {
    Engine e(lend ? &dir : nullptr);
    e.pass.reset(a[lend]);
    e.pass.reset(b[lend]);
    std::vector<float> first(c.vocab_size);
    e.pass.forward(a[lend], prompt(5, 3), LogitRows::kLast, first.data());
    SequenceState* both[] = {&a[lend], &b[lend]};
    const std::vector<int32_t> ia = prompt(11, 7), ib = prompt(29, 9);
    const std::span<const int32_t> spans[] = {ia, ib};
    logits[lend].resize(2 * c.vocab_size);
    LoanTap tap({&a[lend], &b[lend]}, lend == 1);
    e.pass.set_layer_tap(&tap);
    e.pass.forward_sequences_last(both, spans, logits[lend].data(), std::span<StateCapture>(&caps[lend], 1));
  }
  EXPECT_TRUE(same_bits(logits[0], logits[1]));
  expect_same_state(a[0], a[1], "sequence 0");
  expect_same_state(b[0], b[1], "sequence 1");
  expect_same_state(caps[0].state, caps[1].state, "the capture");
  EXPECT_TRUE(same_bits(caps[0].logits, caps[1].logits));
}

// Ctrl-C inside a layer and after one: the sequence is put back as before
// the chunk from the file (no stop copies are kept while lent) and stays
// usable; an error mid-chunk does the same.
TEST(StateLoan, StopOrErrorPutsTheSequenceBack) {
  const ModelConfig& c = TinyModel::get().config;
  ScratchDir dir;
  Engine plain(nullptr), lent(&dir);
  SequenceState want, s;
  plain.pass.reset(want);
  lent.pass.reset(s);
  std::vector<float> logits(c.vocab_size), want_logits(c.vocab_size);
  plain.pass.forward(want, prompt(12, 1), LogitRows::kLast, logits.data());
  lent.pass.forward(s, prompt(12, 1), LogitRows::kLast, logits.data());
  const SequenceState before = s;
  const std::vector<int32_t> ids = prompt(40, 23);
  int polls = 0;
  for (int stop_at : {1, 3, 12, 30, 60}) {
    polls = 0;
    lent.pass.set_stop([&] { return ++polls == stop_at; }, true);
    try {
      lent.pass.forward(s, ids, LogitRows::kLast, logits.data());
      ADD_FAILURE() << "no stop at poll " << stop_at;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kInterrupted);
    }
    expect_same_state(before, s, "after a stop at poll " + std::to_string(stop_at));
  }
  lent.pass.set_stop(nullptr, false);
  LoanTap tap({&s}, true);
  tap.throw_at = 4;
  lent.pass.set_layer_tap(&tap);
  try {
    lent.pass.forward(s, ids, LogitRows::kLast, logits.data());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadModel);
  }
  expect_same_state(before, s, "after an error in layer 4");
  lent.pass.set_layer_tap(nullptr);
  plain.pass.forward(want, ids, LogitRows::kLast, want_logits.data());
  lent.pass.forward(s, ids, LogitRows::kLast, logits.data());
  EXPECT_TRUE(same_bits(want_logits, logits));
  expect_same_state(want, s, "run to the end after the stops");
}

// The file's descriptor, found by its name under /proc/self/fd.
int loan_fd() {
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.find("k3-state-loan") != std::string::npos) return std::stoi(e.path().filename().string());
  }
  return -1;
}

// A file that loses its bytes mid-chunk (shortened under the run): the
// error names the file, and the sequence is whole: empty, as a new one.
TEST(StateLoan, AFileThatCannotGiveBackLeavesTheSequenceEmpty) {
  const ModelConfig& c = TinyModel::get().config;
  ScratchDir dir;
  Engine lent(&dir);
  SequenceState s, fresh;
  lent.pass.reset(s);
  lent.pass.reset(fresh);
  std::vector<float> logits(c.vocab_size);
  lent.pass.forward(s, prompt(12, 1), LogitRows::kLast, logits.data());
  class Shorten : public LayerTap {
   public:
    bool wants(int layer) const override { return layer == 2; }
    void on_layer(int, const SequenceState&, int64_t, const float*, size_t) override {
      const int fd = loan_fd();
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::ftruncate(fd, 0), 0);
    }
  } shorten;
  lent.pass.set_layer_tap(&shorten);
  try {
    lent.pass.forward(s, prompt(40, 23), LogitRows::kLast, logits.data());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kIo);
    EXPECT_NE(std::string(e.what()).find(dir.path() + ": the sequence state lent to the prefill's chunk"),
              std::string::npos)
        << e.what();
  }
  expect_same_state(fresh, s, "a sequence whose state the file lost");
}

}  // namespace
}  // namespace k3
