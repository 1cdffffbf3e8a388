#include "runtime/streaming_setup.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "common/cli_limits.h"
#include "common/error.h"
#include "common/setting_spelling.h"
#include "common/tool_main.h"
#include "expert_cache/expert_index.h"
#include "model/latent_moe.h"
#include "model/tensor_manifest.h"
#include "planning/prefill_chunk_fit.h"
#include "planning/prefill_forecast.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "planning/row_block_tables.h"
#include "platform/memory_limits.h"
#include "runtime/plan_refusal.h"
#include "trunk/pack_command.h"
#include "trunk/plan.h"

namespace k3 {

namespace {
// Budgets arrive as doubles: NaN, infinities and values past any machine
// (1e300 would wrap to a 0-byte cache) are refused, in the one range the
// command line's flags check too (common/cli_limits.h).
uint64_t gb(double x, const char* setting) {
  if (!std::isfinite(x) || x < 0 || x > kMaxGigabytes)
    throw Error(ExitCode::kUsage, spelled(setting) + " " + std::to_string(x) + " is not a budget: give GB from 0 to " +
                                      std::to_string(static_cast<long>(kMaxGigabytes)));
  return static_cast<uint64_t>(x * 1e9);
}

std::string preset_names() {
  std::string s;
  for (const Preset& p : presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s + ", or auto: the largest that fits";
}
}  // namespace

void resolve_budgets(const RunRequest& req, uint64_t* trunk_bytes, uint64_t* cache_bytes) {
  const Preset* p = find_preset(req.preset.empty() ? "laptop" : req.preset);
  if (!p)
    throw Error(ExitCode::kUsage,
                "unknown " + spelled(run_setting::kPreset) + " '" + req.preset + "' (known: " + preset_names() + ")");
  if (req.trunk_gb >= 0 && req.trunk_dir.empty())
    throw Error(ExitCode::kUsage, spelled(run_setting::kTrunkGb) + " needs " + spelled(run_setting::kTrunkDir) +
                                      " DIR (without a packed trunk the whole trunk is resident; pack one with " +
                                      spelled(kPackTrunk) + " MODEL_DIR TRUNK_DIR)");
  if (req.block_mb >= 0 && req.trunk_dir.empty())
    throw Error(ExitCode::kUsage, spelled(run_setting::kBlockMb) + " needs " + spelled(run_setting::kTrunkDir) +
                                      " DIR (row blocks are read from a packed trunk; pack one with " +
                                      spelled(kPackTrunk) + " MODEL_DIR TRUNK_DIR)");
  *trunk_bytes = gb(req.trunk_gb >= 0 ? req.trunk_gb : p->trunk_gb, run_setting::kTrunkGb);
  *cache_bytes = gb(req.cache_gb >= 0 ? req.cache_gb : p->cache_gb, run_setting::kCacheGb);
}

uint64_t resolve_block_bytes(const RunRequest& req) {
  const Preset* p = find_preset(req.preset.empty() ? "laptop" : req.preset);
  const double mb = req.block_mb >= 0 ? req.block_mb : (p ? p->block_mb : 0);
  return static_cast<uint64_t>(mb * 1e6);
}

// The expert cache lent to the prefill's chunk, when the plan lends it.
static std::string lent_cache_line(const MemoryPlan& plan) {
  if (plan.cache_lent_bytes == 0) return "";
  return std::string(tool_name()) + ": prefill: the expert cache's " + format_bytes(plan.cache_lent_bytes) +
         " beyond the chunk's " + std::to_string(plan.chunk_slots) + " slots lent to the chunk (" +
         format_bytes(plan.chunk_bytes) +
         ") and given back, empty, for decode, which refills it as it misses; the peak counts the larger, not both\n";
}

// What the layer-major prefill reads for a prompt as long as the context.
static std::string prefill_plan_line(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens) {
  const PrefillReads r = forecast_prefill_reads(config, plan, tokens);
  const uint64_t sub = std::max(plan.batch, plan.chunk_sub_batch);
  return std::string(tool_name()) + ": prefill: one read of the weights per " + std::to_string(plan.chunk) +
         " prompt tokens" +
         (plan.layer_held
              ? " (each layer held whole" + skipped_layers_phrase(plan) +
                    (plan.skipped_layers > 0 ? ": the held layers'" : ": its") + " row blocks once per chunk)"
          : plan.row_blocks > 0 && plan.chunk > plan.batch
              ? " (the trunk's row blocks once per " + std::to_string(std::min(sub, plan.chunk)) + ")"
              : std::string()) +
         "; a prompt of " + std::to_string(tokens) + " tokens reads " + format_bytes(static_cast<uint64_t>(r.total())) +
         " in " + std::to_string(r.reads) + (r.reads == 1 ? " read" : " reads") + " (trunk " +
         format_bytes(static_cast<uint64_t>(r.trunk_bytes)) + ", experts at most " +
         format_bytes(static_cast<uint64_t>(r.expert_bytes)) +
         (plan.chunk_spilled
              ? ", the spill file " + format_bytes(static_cast<uint64_t>(r.spill_read_bytes)) + " read back after " +
                    format_bytes(static_cast<uint64_t>(r.spill_written_bytes)) + " written"
              : std::string()) +
         (plan.state_lent_bytes > 0
              ? ", the lent sequence state " + format_bytes(static_cast<uint64_t>(r.state_read_bytes)) +
                    " read back after " + format_bytes(static_cast<uint64_t>(r.state_written_bytes)) + " written"
              : std::string()) +
         ": a forecast)\n" + lent_cache_line(plan);
}

uint64_t resolve_max_batch(const RunRequest& req) {
  const Preset* p = find_preset(req.preset.empty() ? "laptop" : req.preset);
  return std::max<uint64_t>(1, std::min<uint64_t>(req.batch, p ? p->max_batch : req.batch));
}

static PreparedStream plan_for(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req,
                               uint64_t trunk_bytes, uint64_t cache_bytes, TrunkLayout layout, bool packed,
                               uint64_t slot_bytes, const RowBlockTables* tables = nullptr) {
  PreparedStream out;
  out.layout = std::move(layout);
  RunRequest& pr = out.plan_request = req;
  pr.packed_trunk = packed;
  pr.trunk_budget = trunk_bytes;
  pr.cache_budget = cache_bytes;
  pr.batch = resolve_max_batch(req);
  const uint64_t forced = req.chunk ? req.chunk : prefill_chunk_override();
  pr.chunk = forced ? forced : req.context;
  pr.spill_chunk = packed && (req.spill_chunk || prefill_spill_override());
  pr.lend_cache = req.lend_cache || prefill_lend_override();
  pr.hold_layer = req.hold_layer || prefill_hold_override();
  pr.hold_limit = req.hold_limit ? req.hold_limit : prefill_hold_limit_override();
  // The sequence state lent to the chunk.
  pr.lend_state = packed && (req.lend_state || prefill_lend_state_override());
  pr.block_bytes = packed ? resolve_block_bytes(req) : 0;
  pr.tensor_count = checkpoint.tensor_count();
  out.plan = plan_memory(config, out.layout, slot_bytes, pr, tables);
  return out;
}

static TrunkLayout layout_for(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req) {
  if (!req.trunk_dir.empty()) return open_packed_trunk(req.trunk_dir, config, checkpoint);
  return plan_trunk(expected_tensors(config), checkpoint);
}

std::string available_source(const MemoryLimits& lim) {
  std::string s = lim.override_bytes ? "K3_AVAILABLE_MEMORY" : "MemAvailable";
  if (!lim.cgroup_source.empty()) s += " and " + lim.cgroup_source;
  if (lim.address_space_limited)
    s += " and the address-space limit (ulimit -v) of " + format_bytes(lim.address_space_limit) + ", " +
         format_bytes(lim.address_space_used) + " of it in use";
  return s;
}

RunRequest standard_run(const RunRequest& req) {
  RunRequest run = req;
  run.context = kPresetListContext;
  run.chunk = 0;  // the presets are sized for one prefill batch per weight read
  // Default drafts (k3-chat) are dropped before a smaller preset is chosen
  // for them; the plan lowers them later when memory is short.
  if (req.snapshots_optional) run.state_snapshots = 0;
  return run;
}

PresetChoice choose_auto_preset(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req,
                                uint64_t available) {
  RunRequest run = standard_run(req);
  run.context = req.context_is_default ? kPresetListContext : std::max(req.context, kPresetListContext);
  return choose_preset(plan_model_for_checkpoint(config, checkpoint), available, run);
}

// What --expert-lookahead will do under this plan: it costs no memory (the
// guesses use the cache's own slots) but bytes for every wrong guess, and
// does nothing without a pinned MoE layer to guess for or a spare slot.
static std::string lookahead_plan_line(const ModelConfig& config, const PreparedStream& p) {
  // Each pinned MoE layer is guessed by each of the MoE layers up to
  // latent_moe_lookahead_layers() before it, and one right after a dense
  // layer (the first MoE layer) by that dense layer: one guess each.
  int pinned_moe = 0, guesses = 0;
  for (int s : p.plan.pinned) {
    const int layer = p.layout.sections[static_cast<size_t>(s)].layer;
    if (layer < 1 || !config.is_moe_layer(layer)) continue;
    int g = config.is_moe_layer(layer - 1) ? 0 : 1;
    for (int a = 1; a <= latent_moe_lookahead_layers(); ++a)
      if (layer - a >= 0 && config.is_moe_layer(layer - a)) ++g;
    if (g == 0) continue;
    ++pinned_moe;
    guesses += g;
  }
  const uint64_t spare = p.plan.cache_slots > p.plan.min_slots ? p.plan.cache_slots - p.plan.min_slots : 0;
  const uint64_t all = static_cast<uint64_t>(std::max(0, config.num_hidden_layers - config.first_k_dense_replace)) *
                       static_cast<uint64_t>(config.num_experts);
  std::string o = std::string(tool_name()) + ": expert lookahead: ";
  if (p.plan.cache_slots >= all) return o + "the cache holds every expert, so there is nothing to guess\n";
  if (pinned_moe == 0)
    return o + "no MoE layer has its trunk pinned, so no guess is made (raise " + spelled(run_setting::kTrunkGb) +
           ")\n";
  if (spare == 0)
    return o + "the cache holds one layer's top-k only, so no guessed expert is read (raise " +
           spelled(run_setting::kCacheGb) + ")\n";
  // A decoded token's guess reads its best experts at the guessed layer, as
  // many as the spare slots take: the most a token can read for its
  // guesses, which is what they add to the bytes read per token if none is
  // right (each right one saves its read later).
  const uint64_t reads =
      std::min<uint64_t>(spare, latent_moe_guessed_per_token(config)) * static_cast<uint64_t>(guesses);
  return o + "guesses for " + std::to_string(pinned_moe) + " pinned MoE layers, read into up to " +
         std::to_string(spare) + " spare cache slots; no extra memory; at most " + std::to_string(reads) +
         " guessed reads per decoded token (" + format_bytes(reads * p.plan.slot_bytes) + "), each wrong guess costs " +
         format_bytes(p.plan.slot_bytes) + " read\n";
}

PreparedStream prepare_streaming(const ModelConfig& config, const Checkpoint& checkpoint, RunRequest req,
                                 std::ostream& log) {
  const MemoryLimits lim = read_memory_limits();
  const uint64_t avail = lim.available();
  std::optional<PresetChoice> choice;
  if (req.preset == kAutoPreset) {
    choice = choose_auto_preset(config, checkpoint, req, avail);
    if (!choice->preset)
      throw Error(ExitCode::kResource, spelled(run_setting::kPreset) + " auto: " + choice->reason() + " (" +
                                           available_source(lim) + "); free memory, or lower " +
                                           spelled(run_setting::kContext));
    req.preset = choice->preset->name;
  }
  uint64_t trunk_bytes, cache_bytes;
  resolve_budgets(req, &trunk_bytes, &cache_bytes);
  PreparedStream p = plan_for(config, checkpoint, req, trunk_bytes, cache_bytes, layout_for(config, checkpoint, req),
                              !req.trunk_dir.empty(), ExpertIndex(config, checkpoint).slot_bytes());
  // Short of memory: fewer default drafts per pass, then the prefill's
  // batch, chunk, spill file and sub-batch (fit_prefill_chunk: of the fits,
  // the one whose prompt reads the fewest bytes, the batch lowered down to
  // one token where that lets a longer chunk fit; the output depends on none
  // of them).
  const uint64_t wanted_batch = p.plan.batch, wanted_chunk = p.plan.chunk, wanted_snapshots = req.state_snapshots;
  const bool packed = !req.trunk_dir.empty();
  RunRequest smaller = req;
  // The search plans one layout hundreds of times: its row blocks built once.
  const RowBlockTables tables = row_block_tables(config, p.layout, p.plan_request.block_bytes);
  auto replan = [&](const RunRequest& r) {
    p = plan_for(config, checkpoint, r, trunk_bytes, cache_bytes, std::move(p.layout), packed, p.plan.slot_bytes,
                 &tables);
    return p.plan;
  };
  const auto fits = [&](const MemoryPlan& m) { return plan_fits(m, avail); };
  while (!fits(p.plan) && smaller.snapshots_optional && smaller.state_snapshots > 0) {
    smaller.state_snapshots /= 2;
    replan(smaller);
  }
  fit_prefill_chunk(config, replan, fits, smaller, req.context, packed);
  replan(smaller);
  if (choice) {
    // The forecast said is this run's plan (its context, batch, copies), not
    // the standard run's; a plan refused below (no packed trunk) keeps the
    // standard run's, which the refusal's advice is about.
    if (plan_fits(p.plan, avail)) choice->plan = p.plan;
    log << tool_name() << ": " << spelled(run_setting::kPreset) << " auto chose " << choice->reason()
        << (avail == UINT64_MAX ? "" : " (" + available_source(lim) + ")") << "\n";
  }
  if (smaller.state_snapshots < wanted_snapshots)
    log << tool_name() << ": speculation lowered from " << wanted_snapshots << " to " << smaller.state_snapshots
        << " drafts per pass to fit the memory available (each needs a rollback copy of the KDA state)\n";
  if (p.plan.chunk_spilled && !prefill_spill_override())
    log << tool_name() << ": prefill spills the block states of its chunk to a file beside the trunk ("
        << format_bytes(p.plan.spill_file_bytes) << ", removed at exit) to fit the memory available\n";
  if (p.plan.chunk > p.plan.batch && p.plan.chunk < wanted_chunk)
    log << tool_name() << ": prefill reads the weights once per " << p.plan.chunk
        << " prompt tokens (not the whole context) to fit the memory available\n";
  if (p.plan.batch < wanted_batch)
    log << tool_name() << ": prefill batch lowered from " << wanted_batch << " to " << p.plan.batch
        << " tokens to fit the memory available\n";
  if (req.trunk_dir.empty())
    log << tool_name() << ": no " << spelled(run_setting::kTrunkDir) << ": the whole trunk ("
        << format_bytes(p.plan.pinned_bytes)
        << ") is read from the shards and held resident; routed experts stream through the cache\n";
  log << tool_name() << ": memory plan ("
      << (req.trunk_dir.empty() ? "trunk from the shards" : "trunk " + req.trunk_dir) << "; budgets: trunk "
      << format_bytes(trunk_bytes) << ", cache " << format_bytes(cache_bytes) << ")\n"
      << p.plan.describe(p.layout, config, p.plan_request);
  if (avail != UINT64_MAX) log << " of " << format_bytes(avail) << " available (" << available_source(lim) << ")";
  log << "\n";
  log << prefill_plan_line(config, p.plan, req.context);
  if (req.expert_lookahead) log << lookahead_plan_line(config, p);
  if (!plan_fits(p.plan, avail))
    throw Error(ExitCode::kResource, plan_refusal(config, checkpoint, req, p, wanted_batch, lim));
  p.preset = req.preset.empty() ? "laptop" : req.preset;
  return p;
}

namespace {

// A test-only switch (CONTRIBUTING.md): unset, empty or 0 is off, 1 is on,
// anything else is refused.
bool env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string(v) == "0") return false;
  if (std::string(v) != "1") throw Error(ExitCode::kUsage, std::string(name) + ": '" + v + "' is not 0 or 1");
  return true;
}

// A test-only count (CONTRIBUTING.md): unset or empty is 0 (none asked
// for); a whole number from 1 to `most`, else refused naming `what`.
uint64_t env_count(const char* name, uint64_t most, const std::string& what) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end || errno || n == 0 || v[0] == '-' || n > most)
    throw Error(ExitCode::kUsage, std::string(name) + ": '" + v + "' is not " + what);
  return n;
}

}  // namespace

uint64_t prefill_chunk_override() {
  return env_count("K3_PREFILL_CHUNK", 1ull << 24, "a token count from 1 to 16777216");
}

bool prefill_lend_override() { return env_switch("K3_PREFILL_LEND"); }

bool prefill_spill_override() { return env_switch("K3_PREFILL_SPILL"); }

bool prefill_lend_state_override() { return env_switch("K3_PREFILL_LEND_STATE"); }

bool prefill_hold_override() { return env_switch("K3_PREFILL_HOLD"); }

// A held chunk's hold limit (test-only).
uint64_t prefill_hold_limit_override() {
  return env_count("K3_PREFILL_HOLD_LIMIT", UINT64_MAX, "a byte count of 1 or more");
}

}  // namespace k3
