// k3-synth: write a synthetic checkpoint in the real K3 layout at any geometry.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "cli/cli_parse.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/progress_meter.h"
#include "common/tool_main.h"
#include "synth/synth_checkpoint.h"
#include "synth/synth_dspark.h"

int main(int argc, char** argv) {
  using namespace k3;
  CLI::App app{
      "k3-synth: write a synthetic checkpoint in the exact layout of Kimi-K3 (wrapper config, "
      "language_model. names, shards + vision shard, index, MXFP4 experts), deterministic from --seed.\n"
      "Geometry comes from --preset, then any size flag overrides it."};
  std::string out_dir, preset = "tiny-like", tokenizer_from, weights = "uniform";
  uint64_t seed = 1;
  bool sparse = false, headers_only = false, dry_run = false, dspark = false;
  SynthGeometry g;
  int vocab = 0, hidden = 0, inter = 0, layers = 0, experts = 0, topk = 0, shared = 0, moe_inter = 0, latent = 0,
      kda_heads = 0, kda_dim = 0, mla_heads = 0, q_lora = 0, kv_lora = 0, shards = 0, block = 0;
  app.add_option("OUT_DIR", out_dir, "directory to write (created if needed)")->required();
  app.add_option("--preset", preset, "tiny-like | bench | k3")->capture_default_str();
  app.add_option("--seed", seed, "PRNG seed: same seed, same bytes")->capture_default_str();
  app.add_flag("--sparse", sparse,
               "leave large matrices and routed experts as holes (norms, routers, biases, A_log, embedding "
               "stay real)");
  app.add_flag("--headers-only", headers_only,
               "every tensor a hole: config, tokenizer, index and shard headers only (enough for memory plans "
               "and index loading at full scale; seconds to write)");
  app.add_option("--weights", weights,
                 "uniform | normal: noise of the projections and norms around their center with the per-tensor "
                 "standard deviation (normal: Gaussian, like trained weights, for compression measurements)")
      ->check(CLI::IsMember({"uniform", "normal"}))
      ->capture_default_str();
  app.add_flag("--dspark", dspark,
               "write K3's draft model instead: a Kimi-K3-DSpark checkpoint at its real geometry (config.json + "
               "one model.safetensors, 7.1 GB; --sparse: matrices as holes), for timing a draft pass");
  app.add_option("--tokenizer-from", tokenizer_from, "copy tiktoken.model and tokenizer_config.json from this dir");
  app.add_flag("--dry-run", dry_run, "print the sizes and write nothing");
  app.add_option("--vocab", vocab, "vocab_size (ordinary tokens + 256 specials)");
  app.add_option("--hidden", hidden, "hidden_size");
  app.add_option("--intermediate", inter, "intermediate_size of the dense layers");
  app.add_option("--layers", layers, "num_hidden_layers (MLA at every 4th and the last, 1-indexed)");
  app.add_option("--attn-res-block", block, "attn_res_block_size");
  app.add_option("--experts", experts, "num_experts");
  app.add_option("--top-k", topk, "num_experts_per_token");
  app.add_option("--shared", shared, "num_shared_experts");
  app.add_option("--moe-inter", moe_inter, "moe_intermediate_size (multiple of 32)");
  app.add_option("--latent", latent, "routed_expert_hidden_size (multiple of 32)");
  app.add_option("--kda-heads", kda_heads, "linear_attn_config.num_heads");
  app.add_option("--kda-head-dim", kda_dim, "linear_attn_config.head_dim");
  app.add_option("--mla-heads", mla_heads, "num_attention_heads");
  app.add_option("--q-lora", q_lora, "q_lora_rank");
  app.add_option("--kv-lora", kv_lora, "kv_lora_rank");
  app.add_option("--shards", shards, "number of weight shards (a vision shard is added)");
  app.footer(exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-synth")) return *status;
  return k3::run_tool("k3-synth", [&] {
    if (dspark) return synth_dspark_main(out_dir, seed, sparse || headers_only, dry_run);
    if (!synth_preset(preset, &g)) {
      std::string names;
      for (const auto& n : synth_preset_names()) names += (names.empty() ? "" : ", ") + n;
      throw Error(ExitCode::kUsage, "unknown --preset '" + preset + "' (known: " + names + ")");
    }
    auto set = [](int v, int& field) {
      if (v) field = v;
    };
    set(vocab, g.vocab_size);
    set(hidden, g.hidden_size);
    set(inter, g.intermediate_size);
    if (layers) {
      g.num_hidden_layers = layers;
      g.full_attn_layers = SynthGeometry::k3_full_attn_layers(layers);
    }
    set(block, g.attn_res_block_size);
    set(experts, g.num_experts);
    set(topk, g.num_experts_per_token);
    set(shared, g.num_shared_experts);
    set(moe_inter, g.moe_intermediate_size);
    set(latent, g.routed_expert_hidden_size);
    set(kda_heads, g.kda_num_heads);
    set(kda_dim, g.kda_head_dim);
    set(mla_heads, g.mla_num_heads);
    set(q_lora, g.q_lora_rank);
    set(kv_lora, g.kv_lora_rank);
    set(shards, g.num_shards);
    // The published total only holds for the preset's own geometry.
    if (vocab || hidden || inter || layers || block || experts || topk || shared || moe_inter || latent || kda_heads ||
        kda_dim || mla_heads || q_lora || kv_lora || shards)
      g.total_shard_bytes = 0;
    validate_geometry(g);

    const SynthLayout layout = synth_layout(g);
    uint64_t trunk = 0, expert = 0, written = 0;
    for (const SynthTensor& s : layout.tensors) {
      if (!s.vision) (s.t.group == TensorGroup::kRoutedExpert ? expert : trunk) += s.nbytes();
      if (!headers_only && !(sparse && s.hole_when_sparse)) written += s.nbytes();
    }
    std::fprintf(stderr,
                 "k3-synth: %s geometry: %d layers (%d KDA, %d MLA), hidden %d, %d experts (top-%d); %zu tensors "
                 "in %zu shards (%llu bytes), trunk %s, routed experts %s, %s to write\n",
                 g.name.c_str(), g.num_hidden_layers, g.kda_count(), g.mla_count(), g.hidden_size, g.num_experts,
                 g.num_experts_per_token, layout.tensors.size(), layout.shards.size(),
                 static_cast<unsigned long long>(layout.apparent_bytes), format_bytes(trunk).c_str(),
                 format_bytes(expert).c_str(), format_bytes(written).c_str());
    if (dry_run) return 0;
    SynthOptions opt;
    opt.seed = seed;
    opt.weights = weights == "normal" ? SynthWeights::kNormal : SynthWeights::kUniform;
    opt.sparse = sparse;
    opt.headers_only = headers_only;
    opt.tokenizer_from = tokenizer_from;
    ProgressMeter meter("k3-synth: writing", written);
    opt.progress = [&](uint64_t done, uint64_t) { meter.update(done); };
    SynthResult r = write_synthetic_checkpoint(out_dir, g, opt);
    meter.finish(r.written_bytes);
    std::fprintf(stderr, "k3-synth: wrote %s: %zu shards, %zu tensors, apparent size %s, data written %s\n",
                 out_dir.c_str(), r.shard_count, r.tensor_count, format_bytes(r.apparent_bytes).c_str(),
                 format_bytes(r.written_bytes).c_str());
    return 0;
  });
}
