// k3-pack: gather the trunk (every tensor but the routed experts) of a
// checkpoint into one file with each layer contiguous, so the streaming
// engine fetches a layer with one aligned read.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

#include "checkpoint/checkpoint.h"
#include "cli/cli_parse.h"
#include "cli/interrupt.h"
#include "common/atomic_file_writer.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/file.h"
#include "common/progress_meter.h"
#include "common/tool_main.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "pack_report.h"
#include "trunk/trunk.h"

namespace {
using namespace k3;

// Progress into meter `m`; Ctrl-C stops the work there.
std::function<void(uint64_t, uint64_t)> progress_to(ProgressMeter& m) {
  return [&m](uint64_t done, uint64_t) {
    if (interrupted()) throw Error(ExitCode::kInterrupted, "interrupted; nothing was left behind");
    m.update(done);
  };
}

// --refresh: re-hashes the trunk tensors of changed shards and records the shards.
int refresh_existing(const std::string& trunk_dir, const std::string& model_dir, const Checkpoint& checkpoint) {
  std::optional<ProgressMeter> meter;  // its total is known once the changed sections are
  TrunkCheck r = refresh_trunk(trunk_dir, checkpoint, [&](uint64_t done, uint64_t total) {
    if (!meter) meter.emplace("k3-pack: re-checking", total);
    progress_to (*meter)(done, total);
  });
  if (meter) meter->finish(r.bytes_checked);
  return report_trunk_refresh(r, trunk_dir, model_dir);
}

// --check: the trunk's table against the model's layout, its bytes against the checkpoint's.
int check_existing(const std::string& trunk_dir, const std::string& model_dir, const Checkpoint& checkpoint,
                   const ModelConfig& config) {
  TrunkLayout t = read_trunk_layout(trunk_dir);
  uint64_t decoded = 0;
  for (const TrunkSection& s : t.sections) decoded += s.length;
  ProgressMeter meter("k3-pack: checking", 2 * decoded);
  TrunkCheck r = check_trunk(trunk_dir, checkpoint, expected_tensors(config), progress_to(meter));
  meter.finish(2 * r.bytes_checked);
  if (int status = report_trunk_check_problems(r, trunk_dir, model_dir)) return status;
  std::fprintf(stderr, "k3-pack: %s matches %s (%zu sections, %s%s)\n", trunk_dir.c_str(), model_dir.c_str(),
               t.sections.size(), format_bytes(t.file_size).c_str(),
               t.compressed() ? (", compressed from " + format_bytes(decoded)).c_str() : "");
  std::fprintf(stderr, "k3-pack: next: k3-doctor --model %s --trunk %s\n", model_dir.c_str(), trunk_dir.c_str());
  return 0;
}

// Packs the trunk, refusing a link or device at an output name before any work.
int pack(const std::string& trunk_dir, const std::string& model_dir, const Checkpoint& checkpoint,
         const ModelConfig& config, bool sparse, bool compress) {
  validate_checkpoint(config, checkpoint);
  // A link or device at an output name is refused before any work.
  if (file_exists(trunk_dir))
    for (const char* name : {"trunk.bin", "trunk.json"})
      check_output_path(path_join(trunk_dir, name), OutputPolicy::kRegularFile);
  const std::vector<ExpectedTensor> manifest = expected_tensors(config);
  const TrunkLayout plan = plan_trunk(manifest, checkpoint);
  std::fprintf(stderr, "k3-pack: packing %zu sections (%s) from %s into %s\n", plan.sections.size(),
               format_bytes(plan.file_size).c_str(), model_dir.c_str(), trunk_dir.c_str());
  ProgressMeter meter("k3-pack: packing", plan.file_size);
  PackOptions opt;
  opt.sparse = sparse;
  opt.compress = compress;
  opt.progress = progress_to(meter);
  opt.on_stale_removed = [](const std::string& out, uint64_t n, uint64_t bytes) {
    std::fprintf(stderr, "k3-pack: removed %llu temporary file(s) of %s that a stopped run left (%s)\n",
                 static_cast<unsigned long long>(n), out.c_str(), format_bytes(bytes).c_str());
  };
  TrunkLayout t = pack_trunk(checkpoint, manifest, trunk_dir, opt);
  meter.finish(plan.file_size);
  const uint64_t layers = t.layer_stored_bytes();
  std::fprintf(stderr, "k3-pack: wrote %s/trunk.bin: %s (layers %s, embedding+head %s)", trunk_dir.c_str(),
               format_bytes(t.file_size).c_str(), format_bytes(layers).c_str(),
               format_bytes(t.file_size - layers).c_str());
  if (t.compressed())
    std::fprintf(stderr, "; %.1f%% of the uncompressed %s (layers %.1f%%)", 100.0 * t.file_size / plan.file_size,
                 format_bytes(plan.file_size).c_str(), 100.0 * layers / std::max<uint64_t>(1, t.layer_bytes()));
  std::fprintf(stderr, "\n");
  std::fprintf(stderr,
               "k3-pack: next: k3-doctor --model %s --trunk %s (checks this machine and prints the run command)\n",
               model_dir.c_str(), trunk_dir.c_str());
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{
      "k3-pack MODEL_DIR TRUNK_DIR: write TRUNK_DIR/trunk.bin and trunk.json, every non-routed-expert tensor of\n"
      "the model with each layer contiguous and 4096-aligned (one O_DIRECT read per layer), the embedding and\n"
      "the head in sections of their own, an xxh3 per section and per 256 KiB block (each checked when k3-forward\n"
      "first reads it), and a fingerprint of the checkpoint.\n"
      "--compress: store the layers and the head as lossless compressed blocks (BF16 exponents entropy-coded,\n"
      "sign and mantissa bytes raw; ~2/3 of the size on trained weights), each block with its own xxh3; the\n"
      "engine decodes them as they arrive, with the same bits out. k3-doctor says whether this machine gains.\n"
      "k3-pack --check TRUNK_DIR MODEL_DIR: check trunk.json's tensor table against the model's layout, re-hash\n"
      "the trunk and the same tensors in the checkpoint, and report every entry or section that differs (exit 8).\n"
      "k3-pack --refresh TRUNK_DIR MODEL_DIR: after shards changed on disk (touched, copied, restored), re-hash\n"
      "only the trunk tensors of the changed shards and, when they match, record the shards as they are now in\n"
      "trunk.json (exit 8 if they differ: re-pack); also upgrades a trunk.json older than version 4 (no per-block\n"
      "hashes; k3-forward refuses it) by reading trunk.bin once.\n"
      "Example: k3-pack ~/k3model ~/k3trunk && k3-forward ~/k3model --trunk ~/k3trunk --preset laptop",
      "k3-pack"};
  std::string first, second;
  bool check = false, refresh = false, no_sparse = false, compress = false;
  app.add_option("MODEL_DIR", first, "Checkpoint directory (with --check or --refresh: the TRUNK_DIR)")->required();
  app.add_option("TRUNK_DIR", second, "Where trunk.bin and trunk.json go (with --check or --refresh: the MODEL_DIR)")
      ->required();
  auto* check_flag = app.add_flag("--check", check, "verify an existing trunk instead of writing one");
  auto* refresh_flag =
      app.add_flag("--refresh", refresh, "re-check the trunk tensors of changed shards and record the shards")
          ->excludes(check_flag);
  app.add_flag("--compress", compress, "store the layers and the head as compressed blocks")
      ->excludes(check_flag)
      ->excludes(refresh_flag);
  app.add_flag("--no-sparse", no_sparse, "write all-zero blocks instead of leaving holes (same bytes either way)");
  app.footer(exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-pack")) return *status;
  install_interrupt_handler();
  const bool existing = check || refresh;
  const std::string model_dir = existing ? second : first, trunk_dir = existing ? first : second;
  const ModelConfig config = load_model_config(model_dir);
  const Checkpoint checkpoint = Checkpoint::open(model_dir);
  if (refresh) return refresh_existing(trunk_dir, model_dir, checkpoint);
  if (check) return check_existing(trunk_dir, model_dir, checkpoint, config);
  return pack(trunk_dir, model_dir, checkpoint, config, !no_sparse, compress);
}
}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-pack", [&] { return run(argc, argv); });
}
