// k3-synth: write a synthetic checkpoint in the real K3 layout at any geometry.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "cli/cli_parse.h"
#include "cli/seed_flag.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/progress_meter.h"
#include "common/tool_main.h"
#include "synth/synth_checkpoint.h"
#include "synth/synth_dspark.h"
#include "synth_flags.h"

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
  SynthSizeFlags sizes;
  app.add_option("OUT_DIR", out_dir, "directory to write (created if needed)")->required();
  app.add_option("--preset", preset, "tiny-like | bench | k3")->capture_default_str();
  app.add_option("--seed", seed, "PRNG seed: same seed, same bytes (0 to 2^63-1)")
      ->capture_default_str()
      ->check(k3::cli::seed_range());
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
  app.add_option("--tokenizer-from", tokenizer_from,
                 "copy tiktoken.model and tokenizer_config.json from this dir (default: none: a "
                 "synthetic vocabulary)");
  app.add_flag("--dry-run", dry_run, "print the sizes and write nothing");
  sizes.add_to(app);
  app.footer(exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-synth")) return *status;
  return k3::run_tool("k3-synth", [&] {
    if (dspark) return synth_dspark_main(out_dir, seed, sparse || headers_only, dry_run);
    if (!synth_preset(preset, &g)) {
      std::string names;
      for (const auto& n : synth_preset_names()) names += (names.empty() ? "" : ", ") + n;
      throw Error(ExitCode::kUsage, "unknown --preset '" + preset + "' (known: " + names + ")");
    }
    sizes.apply(g);
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
