#include "runtime/preset_plan.h"

#include "checkpoint/checkpoint.h"
#include "model/tensor_manifest.h"
#include "runtime/expert_index.h"
#include "runtime/trunk_plan.h"

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

PlanRequest preset_plan_request(const Preset& preset, const PlanModel& model) {
  // The same conversion and defaults as k3-forward's resolve_budgets and
  // StreamingRequest (--threads 0, --io-threads 8, the preset's block size and
  // largest batch).
  PlanRequest r;
  r.packed_trunk = true;
  r.trunk_budget = static_cast<uint64_t>(preset.trunk_gb * 1e9);
  r.cache_budget = static_cast<uint64_t>(preset.cache_gb * 1e9);
  r.context = kPresetListContext;
  r.batch = preset.max_batch;
  r.block_bytes = static_cast<uint64_t>(preset.block_mb * 1e6);
  r.io_threads = 8;
  r.compute_threads = 0;
  r.tensor_count = model.tensor_count;
  return r;
}

MemoryPlan plan_preset(const Preset& preset, const PlanModel& model) {
  return plan_memory(model.config, model.layout, model.slot_bytes, preset_plan_request(preset, model));
}

}  // namespace k3
