#include "planning/first_token_forecast.h"

#include <algorithm>

#include "common/append_printf.h"
#include "common/byte_format.h"
#include "model/tensor_manifest.h"
#include "planning/prefill_chunk_fit.h"
#include "planning/row_block_tables.h"

namespace k3 {

double prefill_flops_per_token(const ModelConfig& c) {
  double weights = 0;
  for (const ExpectedTensor& t : expected_tensors(c)) {
    if (t.group != TensorGroup::kLayerTrunk || t.shape.size() != 2) continue;  // the layers' trunk matrices
    double n = 1;
    for (uint64_t d : t.shape) n *= static_cast<double>(d);
    weights += n;
  }
  // Each MoE layer: top-k experts of three [intermediate x latent] matrices.
  const double moe_layers = std::max(0, c.num_hidden_layers - c.first_k_dense_replace);
  weights += moe_layers * c.num_experts_per_token * 3.0 * c.moe_intermediate_size * c.routed_expert_hidden_size;
  return 2 * weights;
}

FirstTokenForecast forecast_first_token(const ModelConfig& c, const MemoryPlan& plan, uint64_t tokens,
                                        double read_bytes_per_s, double flops_per_s) {
  FirstTokenForecast f;
  f.reads = forecast_prefill_reads(c, plan, tokens);
  f.read_bytes_per_s = read_bytes_per_s;
  f.flops_per_s = flops_per_s;
  f.read_seconds = read_bytes_per_s > 0 ? f.reads.total() / read_bytes_per_s : 0;
  const double per_token = prefill_flops_per_token(c);
  f.tokens_per_s = per_token > 0 ? flops_per_s / per_token : 0;
  f.compute_seconds = f.tokens_per_s > 0 ? static_cast<double>(tokens) / f.tokens_per_s : 0;
  return f;
}

MemoryPlan plan_preset_for_prompt(const Preset& preset, const PlanModel& model, uint64_t tokens, uint64_t available) {
  RunRequest run;
  run.context = std::max<uint64_t>(tokens, 1);
  RunRequest req = preset_plan_request(preset, model, run);
  req.chunk = run.context;
  const RowBlockTables tables = row_block_tables(model.config, model.layout, req.block_bytes);  // once a search
  return fit_prefill_chunk(
      model.config,
      [&](const RunRequest& r) { return plan_memory(model.config, model.layout, model.slot_bytes, r, &tables); },
      [&](const MemoryPlan& p) { return plan_fits(p, available); }, req, tokens, true);
}

std::string describe_first_token(const FirstTokenForecast& f, const MemoryPlan& plan) {
  std::string o;
  // How the prompt's reads are made: one clause each, in the plan's order.
  std::string how = ", a batch of " + std::to_string(plan.batch);
  if (plan.chunk_spilled) how += ", its block states spilled";
  if (plan.layer_held) how += ", each layer held whole" + skipped_layers_phrase(plan);
  else if (plan.row_blocks > 0 && plan.chunk > plan.batch)
    how += ", row blocks once per " + std::to_string(std::max(plan.batch, plan.chunk_sub_batch));
  if (plan.cache_lent_bytes > 0)
    how += ", the expert cache's " + format_bytes(plan.cache_lent_bytes) + " beyond " +
           std::to_string(plan.chunk_slots) + " slots lent to it";
  if (plan.state_lent_bytes > 0)
    how += ", the sequence state's " + format_bytes(plan.state_lent_bytes) + " lent to it (one layer's in memory)";
  append_printf(o,
                "%llu tokens: %s read (1 read of the weights per %llu tokens%s), %.1f s at %s/s + %.1f s of compute "
                "at %.2f tokens/s = %.1f s",
                (unsigned long long)f.reads.tokens, format_bytes(static_cast<uint64_t>(f.reads.total())).c_str(),
                (unsigned long long)plan.chunk, how.c_str(), f.read_seconds,
                format_bytes(static_cast<uint64_t>(f.read_bytes_per_s)).c_str(), f.compute_seconds, f.tokens_per_s,
                f.seconds());
  return o;
}

}  // namespace k3
