// Bytes read per weight pass as a function of the rows the pass computes:
// what speculation (1 current id + drafts verified together) and batches of
// sequences (one row each) buy at K3's true geometry, per memory preset.
//
// The trunk part is the plan's exact count (MemoryPlan::streamed_read_bytes,
// an uncompressed trunk): every streamed section (layers and head, whole or
// in row blocks) is read once per pass whatever the rows, plus one embedding
// row per row. The expert part depends on routing: a
// pass reads the union of its rows' routed experts. With flat routing (each
// row's top-k independent and uniform over E experts, the worst case for
// sharing) a layer's expected union of R rows is E * (1 - (1 - k/E)^R), and
// an LRU cache of C slots over L x E equally likely experts hits C / (L x E)
// of the loads. Real routers share more (the 5-token prefill of
// bench/true_scale.sh loaded 14% fewer experts than 5 x 16 per layer), so
// the expert column is an upper bound for R > 1 and exact in expectation
// for R = 1.
//
// With K3's trained draft (DSpark, docs/dspark.md) a pass verifies the
// current id and k drafts (k + 1 rows) and yields 1 + S_1 + .. + S_k tokens
// in expectation, S_i the chance the first i drafts are all accepted: the
// published per-position acceptance shapes (DSPARK.md section 3.2, a
// GSM8K-like and a prose/code-like curve). The draft's own weights are
// resident on the presets whose trunk is whole layers (desktop); on those
// that stream the trunk in row blocks (min, laptop) its large matrices
// stream too and are read again for every draft pass (the pass's matrices,
// and context_proj and kv_a again to fuse the committed positions). It reads
// K3's lm_head once more per draft pass where the head streams. The policy
// column is the k VerifyPolicy picks for that curve once measured.
//
// Then what a token of a layer-major chunk carries from layer to layer, part
// by part (model/prefill_chunk.h, model/latent_moe_chunk.h), in memory and
// with the chunk spilled, and the op area a row of the chunk's sub-batch
// takes. Last, what a prompt of 8,192 tokens reads at each preset with one weight
// read per prefill batch (before the layer-major prefill) and with the
// chunk, spill file and chunk sub-batch (tokens a row block is read for)
// the preset's machine class fits (planning/prefill_chunk_fit.h).
//
// Before that, the memory a layer-major chunk's sub-batch takes per row,
// part by part (model/prefill_chunk.h): the longest sub-batch that fits
// decides how often a trunk streamed in row blocks is read.
//
// Usage: k3-bench-pass-bytes [MODEL_DIR]   (default: K3's geometry from
// k3-synth --preset k3, nothing written; MODEL_DIR: its config.json)
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/tool_main.h"
#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"
#include "draft/verify_policy.h"
#include "io/aligned_buffer.h"
#include "model/config.h"
#include "model/kda.h"
#include "model/latent_moe_chunk.h"
#include "model/mla.h"
#include "model/prefill_chunk.h"
#include "model/situ_mlp_chunk.h"
#include "model/tensor_manifest.h"
#include "planning/first_token_forecast.h"
#include "planning/memory_plan.h"
#include "planning/prefill_forecast.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "synth/synth_geometry.h"

using namespace k3;

namespace {

struct PassBytes {
  double trunk = 0, experts = 0;
  double total() const { return trunk + experts; }
};

void print_preset(const ModelConfig& c, const Preset& preset) {
  RunRequest req;
  req.trunk_budget = static_cast<uint64_t>(preset.trunk_gb * 1e9);
  req.cache_budget = static_cast<uint64_t>(preset.cache_gb * 1e9);
  req.block_bytes = static_cast<uint64_t>(preset.block_mb * 1e6);
  req.batch = 16;
  const MemoryPlan plan = plan_memory_for_config(c, req);
  const uint64_t streamed = plan.streamed_read_bytes;                   // streamed layers and lm_head, as read per pass
  const double embedding_row = static_cast<double>(c.hidden_size) * 2;  // BF16
  const double expert = static_cast<double>(plan.slot_bytes - kDirectAlign);  // one aligned expert read
  const double L = c.num_hidden_layers - c.first_k_dense_replace, E = c.num_experts, k = c.num_experts_per_token;
  const double miss = 1.0 - std::min(1.0, static_cast<double>(plan.cache_slots) / (L * E));
  auto pass = [&](int rows) {
    PassBytes b;
    b.trunk = static_cast<double>(streamed) + rows * embedding_row;
    b.experts = L * E * (1.0 - std::pow(1.0 - k / E, rows)) * miss * expert;
    return b;
  };
  const PassBytes one = pass(1);
  std::printf(
      "\npreset %s: trunk pinned %.2f GB, streamed %.2f GB per pass; %llu expert slots (hit rate %.2f%%), "
      "expert %.2f MB, %g MoE layers x %g experts, top-%g\n",
      preset.name.c_str(), plan.pinned_bytes / 1e9, streamed / 1e9, static_cast<unsigned long long>(plan.cache_slots),
      100 * (1 - miss), expert / 1e6, L, E, k);
  std::printf("%5s %12s %12s %12s %11s %14s %14s %14s\n", "rows", "trunk GB", "experts GB", "pass GB", "break-even",
              "GB/tok (1 kept)", "GB/tok (2 kept)", "GB/tok (4 kept)");
  for (int r = 1; r <= 9; ++r) {
    const PassBytes b = pass(r);
    std::printf("%5d %12.2f %12.2f %12.2f %11.3f", r, b.trunk / 1e9, b.experts / 1e9, b.total() / 1e9,
                b.total() / one.total());
    for (int kept : {1, 2, 4})
      if (kept <= r) std::printf(" %14.2f", b.total() / kept / 1e9);
      else std::printf(" %14s", "-");
    std::printf("\n");
  }
  // The draft: cumulative acceptance after 1..7 drafts (DSPARK.md 3.2).
  const DSparkConfig d = kimi_k3_dspark_geometry();
  const double head = static_cast<double>(c.vocab_size) * c.hidden_size * 2;
  const bool draft_streams = preset.block_mb > 0;  // as the memory plan decides (RunRequest::draft.streamed_held)
  const double kv_a = 2.0 * d.num_hidden_layers * d.kv_stride() * d.hidden_size;
  const double draft_weights = draft_streams ? dspark_streamed_weight_bytes(d) + kv_a : 0.0;
  const double draft_read = (plan.head_streamed ? head : 0.0) + draft_weights;
  std::printf("draft (DSpark, %.2f GB %s + %.1f KB/position context): %.2f GB read per draft pass (%s%s)\n",
              dspark_weight_bytes(d) / 1e9, draft_streams ? "streamed in row blocks" : "resident",
              4.0 * d.num_hidden_layers * d.kv_stride() / 1e3, draft_read / 1e9,
              plan.head_streamed ? "K3's streamed lm_head again" : "K3's lm_head is pinned",
              draft_streams
                  ? (", and its own matrices: " + std::to_string(draft_weights / 1e9).substr(0, 4) + " GB").c_str()
                  : "");
  const struct Curve {
    const char* name;
    std::vector<double> cumulative;
  } curves[] = {{"GSM8K-like", {0.86, 0.71, 0.59, 0.48, 0.39, 0.32, 0.26}},
                {"prose-like", {0.77, 0.56, 0.41, 0.29, 0.21, 0.16, 0.12}}};
  const VerifyCosts costs{one.trunk, one.experts, draft_read};
  for (const Curve& cv : curves) {
    std::vector<double> p;
    for (size_t i = 0; i < cv.cumulative.size(); ++i) p.push_back(cv.cumulative[i] / (i ? cv.cumulative[i - 1] : 1.0));
    const size_t pick = VerifyPolicy::best_k(costs, p);
    std::printf("%-11s k:", cv.name);
    double at_pick = 0;
    for (size_t k = 0; k <= p.size(); ++k) {
      double tokens = 1, survive = 1;
      for (size_t i = 0; i < k; ++i) tokens += survive *= p[i];
      const double per_token = (pass(static_cast<int>(k) + 1).total() + (k ? draft_read : 0.0)) / tokens;
      if (k == pick) at_pick = per_token;
      std::printf(" %zu=%.2f", k, per_token / 1e9);
    }
    std::printf(" GB/token; policy k=%zu: %.2f GB/token, %.3fx plain\n", pick, at_pick / 1e9, at_pick / one.total());
  }
  std::printf("%5s %12s %12s %12s %14s %12s\n", "batch", "trunk GB", "experts GB", "pass GB", "GB/token", "vs batch 1");
  for (int n = 1; n <= 16; ++n) {
    const PassBytes b = pass(n);
    std::printf("%5d %12.2f %12.2f %12.2f %14.2f %12.3f\n", n, b.trunk / 1e9, b.experts / 1e9, b.total() / 1e9,
                b.total() / n / 1e9, b.total() / n / one.total());
  }
}

// A token of the chunk: the residual p, the block states, and a MoE layer's
// rows (routing, z, the running sum of expert outputs, the shared experts'
// output); spilled, the block states and the shared output are in the file.
void print_chunk_token(const ModelConfig& c, int64_t positions) {
  const double kB = 1e3, row = c.hidden_size * 4.0, latent = c.routed_expert_hidden_size * 4.0;
  const double routing = c.num_experts_per_token * (4.0 + 4.0 + 8.0);  // expert id, weight, entry index
  std::printf(
      "\na token of a layer-major chunk carries (kB): residual p %.1f, block states %.1f, MoE rows %.1f (routing %.2f, "
      "z %.1f, sum of expert outputs %.1f, shared experts' output %.1f)\n",
      row / kB, spilled_block_bytes_per_token(c) / kB, MoeChunkRows::bytes_per_row(c) / kB, routing / kB, latent / kB,
      latent / kB, row / kB);
  std::printf("  in memory %.1f kB; spilled %.1f kB in memory (MoE rows %.1f) and %.1f kB in the spill file\n",
              prefill_chunk_bytes_per_token(c) / kB, prefill_chunk_bytes_per_token(c, true) / kB,
              MoeChunkRows::bytes_per_row(c, true) / kB, spill_file_bytes_per_token(c) / kB);
  std::printf("  a row of the chunk's sub-batch: op area %.1f kB (the MoE steps' %.1f kB) at %lld positions\n",
              prefill_sub_batch_op_floats(c, 1024, positions, 1) * 4.0 / 1024 / kB,
              moe_chunk_scratch_floats(c, 1024) * 4.0 / 1024 / kB, (long long)positions);
}

// A long prompt at each preset: today's prefill (one weight read per batch)
// against the layer-major prefill whose chunk is the one a run takes on the
// preset's machine class (planning/first_token_forecast.h
// plan_preset_for_prompt: the prompt, its block states spilled beside the
// trunk, then halved, until it fits); the forecast seconds of reading at
// kDiskGBps (planning/prefill_forecast.h; the experts under flat routing, an
// upper bound).
constexpr double kDiskGBps = 3.0;
void print_prefill(const ModelConfig& c, uint64_t tokens) {
  std::printf("\nprefill of a %llu-token prompt (forecast; reading at %.0f GB/s)\n", (unsigned long long)tokens,
              kDiskGBps);
  std::printf("%-12s %-18s %6s %8s %9s %6s %10s %11s %9s %10s %10s %10s\n", "preset", "prefill", "batch", "tok/read",
              "tok/block", "reads", "trunk TB", "experts TB", "spill TB", "total TB", "hours", "peak GB");
  const PlanModel model = plan_model_for_config(c);
  for (const Preset& preset : presets()) {
    auto row = [&](const char* what, const MemoryPlan& plan) {
      const PrefillReads r = forecast_prefill_reads(c, plan, tokens);
      // tok/block: the tokens a row block is read for (the chunk's sub-batch), "-" for whole layers.
      const std::string per_block =
          plan.row_blocks > 0 ? std::to_string(std::max(plan.batch, plan.chunk_sub_batch)) : std::string("-");
      std::printf("%-12s %-18s %6llu %8llu %9s %6llu %10.2f %11.2f %9.3f %10.2f %10.2f %10.2f\n", preset.name.c_str(),
                  what, (unsigned long long)plan.batch, (unsigned long long)plan.chunk, per_block.c_str(),
                  (unsigned long long)r.reads, r.trunk_bytes / 1e12, r.expert_bytes / 1e12, r.spill_read_bytes / 1e12,
                  r.total() / 1e12, r.total() / (kDiskGBps * 1e9) / 3600, plan.peak_rss / 1e9);
    };
    RunRequest run;
    run.context = tokens;
    row("batches", plan_memory(c, model.layout, model.slot_bytes, preset_plan_request(preset, model, run)));
    const MemoryPlan fit = plan_preset_for_prompt(preset, model, tokens, preset.machine.available_bytes());
    const std::string label =
        std::string("layer-major") + (fit.chunk_spilled ? "+s" : "") + (fit.layer_held ? " held" : "");
    row(label.c_str(), fit);
  }
}

// Bytes a row of a chunk's sub-batch of `rows` rows takes, by part, at a
// context of `positions` (one thread): the op areas are taken one at a time,
// so the largest bounds the sub-batch with the rows and the staging.
void print_sub_batch_rows(const ModelConfig& c, size_t rows, int64_t positions) {
  const double n = static_cast<double>(rows), row = static_cast<double>(c.hidden_size) * sizeof(float);
  const size_t piece = std::min(rows, kChunkPieceRows);
  struct Part {
    const char* name;
    double bytes;  // per row of the sub-batch
  };
  const size_t context = std::bit_ceil(static_cast<size_t>(std::max<int64_t>(positions, 4096)));
  const Part ops[] = {
      {"KDA", c.num_kda_layers() > 0 ? kda_scratch_floats(c, rows, 1) * 4.0 / n : 0.0},
      {"MLA", c.num_mla_layers() > 0 ? mla_scratch_floats(c, rows, context, 1) * 4.0 / n : 0.0},
      {"dense SiTU",
       c.first_k_dense_replace > 0 ? situ_chunk_scratch_floats(rows, c.intermediate_size, piece) * 4.0 / n : 0.0},
      {"MoE chunk", c.first_k_dense_replace < c.num_hidden_layers ? moe_chunk_scratch_floats(c, rows) * 4.0 / n : 0.0},
  };
  const Part* largest = &ops[0];
  for (const Part& p : ops) largest = p.bytes > largest->bytes ? &p : largest;
  std::printf("\na chunk's sub-batch of %zu rows at %lld positions, kB per row: x, a %.1f each; h %.1f (%zu-row piece)",
              rows, static_cast<long long>(positions), row / 1e3, row * piece / n / 1e3, piece);
  for (const Part& p : ops) std::printf("; %s op area %.1f", p.name, p.bytes / 1e3);
  const double staged = static_cast<double>(prefill_chunk_staging_bytes(c, rows)) / n;
  const double scratch = static_cast<double>(prefill_sub_batch_scratch_bytes(c, rows, positions)) / n;
  std::printf("; spilled block states staged %.1f\n", staged / 1e3);
  std::printf(
      "  in all %.1f kB a row (%.1f spilled), of which the %s op area %.0f%%; the chunk carries %.1f kB a "
      "token besides (%.1f spilled)\n",
      scratch / 1e3, (scratch + staged) / 1e3, largest->name, 100 * largest->bytes / scratch,
      prefill_chunk_bytes_per_token(c) / 1e3, prefill_chunk_bytes_per_token(c, true) / 1e3);
}

int run(int argc, char** argv) {
  ModelConfig c;
  std::string what;
  if (argc > 1) {
    c = load_model_config(argv[1]);
    what = argv[1];
  } else {
    SynthGeometry g;
    if (!synth_preset("k3", &g)) throw Error(ExitCode::kInternal, "no k3 synth preset");
    c = parse_model_config(synth_config_json(g), synth_generation_config_json(g), "k3");
    what = "K3 geometry (k3-synth --preset k3)";
  }
  std::printf(
      "bytes read per weight pass, %s; 'break-even': tokens per pass a pass of this many rows must yield to "
      "read no more per token than one row per pass\n",
      what.c_str());
  for (const char* name : {"min", "laptop", "desktop"})
    if (const Preset* p = find_preset(name)) print_preset(c, *p);
  print_chunk_token(c, 8192);
  for (size_t rows : {size_t{1024}, size_t{8192}}) print_sub_batch_rows(c, rows, 8192);
  print_prefill(c, 8192);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-bench-pass-bytes", [&] { return run(argc, argv); });
}
