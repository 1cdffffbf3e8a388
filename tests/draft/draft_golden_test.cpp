// The DSpark draft pass against the goldens of tests/data/k3-tiny-dspark
// (computed by third-party reference code; tolerances from its golden.json),
// with the taps taken from the engine's own forward pass.
#include <gtest/gtest.h>

#include "common/thread_pool.h"
#include "draft/draft_fixture.h"
#include "draft/draft_pass.h"

namespace k3 {
namespace {

using test::DraftGolden;
using test::TinyModel;

struct DraftRun {
  DSparkModel draft = DSparkModel::load(test::draft_dir());
  std::vector<float> taps;  // the engine's, [T][taps*hidden]

  static DraftRun& get() {
    static DraftRun* s = [] {
      auto* out = new DraftRun;
      TinyModel& m = TinyModel::get();
      check_draft_fits(out->draft.config(), m.config, test::draft_dir());
      ThreadPool pool(2);
      ForwardPass engine(m.config, *m.weights, pool);
      test::TapRecorder rec;
      rec.layers = out->draft.config().target_layer_ids;
      rec.hidden = m.config.hidden_size;
      engine.set_layer_tap(&rec);
      engine.set_max_batch(5);  // several batches: the taps must not depend on the split
      SequenceState state;
      engine.reset(state);
      const auto& ids = DraftGolden::get().sequence_ids;
      std::vector<float> logits(m.config.vocab_size);
      engine.forward(state, ids, LogitRows::kLast, logits.data());
      out->taps = std::move(rec.taps);
      return out;
    }();
    return *s;
  }
};

TEST(DraftGolden, EngineTapsMatchTheGoldenTaps) {
  const auto& golden = DraftGolden::get().at("taps");
  const auto& taps = DraftRun::get().taps;
  ASSERT_EQ(taps.size(), golden.size());
  const double err = test::rel_err(taps.data(), golden.data(), taps.size());
  std::printf("taps: max |d| / max |golden| = %.3g\n", err);
  EXPECT_LE(err, 1e-4);
}

TEST(DraftGolden, ContextFusionMatches) {
  DraftRun& s = DraftRun::get();
  const DSparkConfig& c = s.draft.config();
  const DraftGolden& g = DraftGolden::get();
  const size_t T = g.at("context.fused").size() / c.hidden_size;
  ThreadPool pool(2);
  DraftContext ctx;
  std::vector<float> fused;
  s.draft.fuse(s.taps.data(), T, ctx, &pool, &fused);
  ASSERT_EQ(ctx.positions, static_cast<int64_t>(T));
  EXPECT_LE(test::rel_err(fused.data(), g.at("context.fused").data(), fused.size()), 1e-4);
  const size_t kvl = c.kv_lora_rank, stride = c.kv_stride();
  std::vector<float> latent, kpe;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (size_t t = 0; t < T; ++t) {
      const float* row = ctx.layers[l].data() + t * stride;
      latent.insert(latent.end(), row, row + kvl);
      kpe.insert(kpe.end(), row + kvl, row + stride);
    }
  const double e_lat = test::rel_err(latent.data(), g.at("context.latent").data(), latent.size());
  const double e_kpe = test::rel_err(kpe.data(), g.at("context.kpe").data(), kpe.size());
  std::printf("context: latent %.3g, kpe %.3g (relative)\n", e_lat, e_kpe);
  EXPECT_LE(e_lat, 1e-4);
  EXPECT_LE(e_kpe, 1e-4);
}

// Fused in two pieces (as prefill and verification deliver them) or at once:
// the same context bits.
TEST(DraftGolden, ContextDoesNotDependOnHowPositionsArrive) {
  DraftRun& s = DraftRun::get();
  const size_t row = static_cast<size_t>(s.draft.config().num_taps()) * s.draft.config().hidden_size;
  ThreadPool pool(1);
  DraftContext whole, split;
  s.draft.fuse(s.taps.data(), 20, whole, &pool);
  s.draft.fuse(s.taps.data(), 7, split, &pool);
  s.draft.fuse(s.taps.data() + 7 * row, 13, split, &pool);
  ASSERT_EQ(whole.layers, split.layers);
  whole.truncate(s.draft.config(), 9);
  DraftContext nine;
  s.draft.fuse(s.taps.data(), 9, nine, &pool);
  EXPECT_EQ(whole.layers, nine.layers);
}

TEST(DraftGolden, EveryCaseMatches) {
  DraftRun& s = DraftRun::get();
  const DSparkConfig& c = s.draft.config();
  const DraftGolden& g = DraftGolden::get();
  const size_t H = c.hidden_size, V = c.vocab_size;
  ASSERT_GE(g.cases.size(), 4u);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (const auto& cs : g.cases) {
      SCOPED_TRACE(cs.name + " threads " + std::to_string(threads));
      DraftContext ctx;
      s.draft.fuse(s.taps.data(), static_cast<size_t>(cs.anchor_pos), ctx, &pool);
      ASSERT_EQ(cs.anchor_id, g.sequence_ids[cs.anchor_pos]);
      const auto before = ctx.layers;
      DraftPassResult r = s.draft.propose(*TinyModel::get().weights, ctx, cs.anchor_id, cs.n_rows, &pool, true);
      EXPECT_EQ(ctx.layers, before) << "the pass changed the committed context";
      EXPECT_EQ(r.ids, cs.draft_ids);
      const auto& hid = g.at(cs.name + ".hidden");
      const double e_h = test::rel_err(r.hidden.data(), hid.data(), hid.size());
      const double cos = test::min_row_cosine(r.hidden.data(), hid.data(), cs.n_rows, H);
      const auto& base = g.at(cs.name + ".base_logits");
      const double e_b = test::rel_err(r.base_logits.data(), base.data(), base.size());
      const auto& lo = g.at(cs.name + ".layer_out");
      ASSERT_EQ(r.layer_out.size(), lo.size());
      const double e_l = test::rel_err(r.layer_out.data(), lo.data(), lo.size());
      double e_conf = 0;
      ASSERT_EQ(r.confidence.size(), cs.n_rows);
      for (size_t k = 0; k < cs.n_rows; ++k)
        e_conf = std::max(e_conf, std::abs(r.confidence[k] - cs.confidence_logit[k]));
      if (threads == 2)
        std::printf("%s: hidden rel %.3g (min cos %.9f), layers rel %.3g, base rel %.3g, confidence |d| %.3g\n",
                    cs.name.c_str(), e_h, cos, e_l, e_b, e_conf);
      EXPECT_GT(cos, 0.999);
      EXPECT_LE(e_h, 1e-4);
      EXPECT_LE(e_l, 1e-4);
      EXPECT_LE(e_b, 1e-3);
      EXPECT_LE(e_conf, 1e-3);
      ASSERT_EQ(r.base_logits.size(), cs.n_rows * V);
    }
  }
}

}  // namespace
}  // namespace k3
