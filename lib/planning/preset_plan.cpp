#include "planning/preset_plan.h"

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "expert_cache/expert_index.h"
#include "model/tensor_manifest.h"
#include "trunk/plan.h"

namespace k3 {

PlanModel plan_model_for_checkpoint(const ModelConfig& config, const Checkpoint& checkpoint) {
  PlanModel m;
  m.config = config;
  m.layout = plan_trunk(expected_tensors(config), checkpoint);
  m.slot_bytes = ExpertIndex(config, checkpoint).slot_bytes();
  m.tensor_count = checkpoint.tensor_count();
  return m;
}

PlanModel plan_model_for_config(const ModelConfig& config) {
  PlanModel m;
  m.config = config;
  const std::vector<ExpectedTensor> manifest = expected_tensors(config);  // ~500k tensors for K3: built once
  m.layout = layout_trunk(manifest);
  m.slot_bytes = expert_slot_bytes(config, manifest);
  m.tensor_count = manifest.size();
  return m;
}

RunRequest preset_plan_request(const Preset& preset, const PlanModel& model, const RunRequest& run) {
  // The same conversion and defaults as a run's resolve_budgets (--threads
  // 0, --io-threads 8, the preset's block size and largest batch).
  RunRequest r = run;
  r.packed_trunk = true;
  r.trunk_budget = static_cast<uint64_t>(preset.trunk_gb * 1e9);
  r.cache_budget = static_cast<uint64_t>(preset.cache_gb * 1e9);
  r.batch = preset.max_batch;
  r.block_bytes = static_cast<uint64_t>(preset.block_mb * 1e6);
  r.io_threads = 8;
  r.compute_threads = 0;
  r.tensor_count = model.tensor_count;
  return r;
}

MemoryPlan plan_preset(const Preset& preset, const PlanModel& model, const RunRequest& run) {
  return plan_memory(model.config, model.layout, model.slot_bytes, preset_plan_request(preset, model, run));
}

PresetChoice choose_preset(const PlanModel& model, uint64_t available, const RunRequest& run) {
  PresetChoice c;
  c.available = available;
  if (available == UINT64_MAX) {
    c.preset = find_preset("laptop");
    c.plan = plan_preset(*c.preset, model, run);
    return c;
  }
  // presets() is in ascending order of memory: the last that fits wins.
  for (const Preset& p : presets()) {
    MemoryPlan plan = plan_preset(p, model, run);
    if (!plan_fits(plan, available)) {
      if (!c.preset && c.plan.peak_rss == 0) c.plan = plan;  // the smallest, for the refusal
      if (c.preset && !c.larger) {
        c.larger = &p;
        c.larger_peak = plan.peak_rss;
      }
      continue;
    }
    c.preset = &p;
    c.plan = std::move(plan);
    c.larger = nullptr;
  }
  return c;
}

std::string PresetChoice::reason() const {
  if (available == UINT64_MAX)
    return std::string(preset->name) + ", the default: the memory available is unknown (forecast " +
           format_bytes(plan.peak_rss) + ")";
  const std::string limit =
      "the " + format_bytes(plan_limit(available)) + " limit (90% of " + format_bytes(available) + " available)";
  if (!preset)
    return "no preset fits: the smallest (" + presets().front().name + ") needs " + format_bytes(plan.peak_rss) +
           ", over " + limit;
  std::string r = preset->name + ": forecast " + format_bytes(plan.peak_rss) +
                  (plan_fits(plan, available) ? ", within " : ", over ") + limit;
  if (larger) r += "; " + larger->name + " would need " + format_bytes(larger_peak);
  return r;
}

}  // namespace k3
