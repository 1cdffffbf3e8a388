#include "runtime/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "common/progress_meter.h"

namespace k3 {

MemoryPlan plan_memory(const ModelConfig& c, const TrunkLayout& layout, uint64_t slot_bytes, const PlanRequest& req) {
  MemoryPlan p;
  // Use order: layers, then the head. The embedding is read row by row.
  std::vector<int> order;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (size_t s = 0; s < layout.sections.size(); ++s)
      if (layout.sections[s].layer == l) order.push_back(static_cast<int>(s));
  for (size_t s = 0; s < layout.sections.size(); ++s) {
    if (layout.sections[s].name == "head") order.push_back(static_cast<int>(s));
    if (layout.sections[s].name == "embedding") p.embedding_bytes = layout.sections[s].length;
  }
  // Pin in use order while the budget lasts (every section costs the same
  // I/O per token, so which ones are pinned does not matter, only how many).
  uint64_t largest_streamed = 0;
  for (int s : order) {
    const uint64_t len = layout.sections[s].length;
    if (!req.packed_trunk || p.pinned_bytes + len <= req.trunk_budget) {
      p.pinned.push_back(s);
      p.pinned_bytes += len;
    } else {
      p.streamed.push_back(s);
      largest_streamed = std::max(largest_streamed, len);
    }
  }
  p.stream_buffer_bytes = p.streamed.empty() ? 0 : 2 * largest_streamed;

  p.slot_bytes = slot_bytes;
  const bool moe = c.num_hidden_layers > c.first_k_dense_replace;
  p.min_slots = moe ? 2 * static_cast<uint64_t>(c.num_experts_per_token) : 0;
  p.cache_slots = slot_bytes ? req.cache_budget / slot_bytes : 0;
  const uint64_t all = moe ? static_cast<uint64_t>(c.num_hidden_layers - c.first_k_dense_replace) * c.num_experts : 0;
  p.cache_slots = std::min(std::max(p.cache_slots, p.min_slots), all);
  p.cache_bytes = p.cache_slots * slot_bytes;

  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  p.kda_state_bytes = static_cast<uint64_t>(c.num_kda_layers()) * (H * D * D + 3 * (K > 0 ? K - 1 : 0) * H * D) * 4;
  p.mla_cache_bytes = static_cast<uint64_t>(c.num_mla_layers()) * req.context *
                      (static_cast<uint64_t>(c.kv_lora_rank) + c.qk_rope_head_dim) * 4;

  // Activations of one prefill batch: the residual stream and AttnRes
  // blocks, the widest projections, router scores, logits.
  const uint64_t n = std::max<uint64_t>(1, req.batch), hidden = c.hidden_size;
  const uint64_t blocks = c.attn_res_block_size ? c.num_hidden_layers / c.attn_res_block_size + 2 : 2;
  const uint64_t wide = std::max<uint64_t>({H * D * 8, static_cast<uint64_t>(c.mla_num_heads) *
                                                            (c.qk_nope_head_dim + c.qk_rope_head_dim + c.v_head_dim) * 3,
                                           static_cast<uint64_t>(c.intermediate_size) * 3,
                                           static_cast<uint64_t>(c.moe_intermediate_size) * c.num_shared_experts * 3});
  p.activation_bytes = n * 4 * (hidden * (blocks + 8) + wide + 2 * c.num_experts +
                                 c.routed_expert_hidden_size * (2 + c.num_experts_per_token) + c.vocab_size);
  // Attention over the context for one batch row block.
  p.activation_bytes += n * 4 * static_cast<uint64_t>(c.mla_num_heads) * std::min<uint64_t>(req.context, 1u << 16);

  p.io_bytes = 2 * (4u << 20) + req.tensor_count * 160 + (req.io_threads + req.compute_threads) * (8u << 20) / 8 +
               (48u << 20);  // program, libraries, allocator slack
  p.peak_rss = p.pinned_bytes + p.stream_buffer_bytes + p.cache_bytes + p.kda_state_bytes + p.mla_cache_bytes +
               p.activation_bytes + p.io_bytes;
  return p;
}

std::string MemoryPlan::describe(const TrunkLayout& layout, const ModelConfig& c, const PlanRequest& req) const {
  auto count_layers = [&](const std::vector<int>& v, bool* head) {
    int n = 0;
    *head = false;
    for (int s : v) {
      if (layout.sections[s].layer >= 0)
        ++n;
      else
        *head = true;
    }
    return n;
  };
  bool pinned_head, streamed_head;
  const int pl = count_layers(pinned, &pinned_head), sl = count_layers(streamed, &streamed_head);
  char buf[2048];
  std::string o;
  std::snprintf(buf, sizeof buf, "  pinned trunk      %d of %d layers%s  %s\n", pl, c.num_hidden_layers,
                pinned_head ? " + head" : "", format_bytes(pinned_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  streamed trunk    %d layers%s, 2 buffers  %s\n", sl, streamed_head ? " + head" : "",
                format_bytes(stream_buffer_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  embedding         rows read on demand (%s on disk)\n",
                format_bytes(embedding_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  expert cache      %llu slots x %s  %s\n", (unsigned long long)cache_slots,
                format_bytes(slot_bytes).c_str(), format_bytes(cache_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  KDA state         %d layers  %s\n", c.num_kda_layers(),
                format_bytes(kda_state_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  MLA latent cache  %d layers x %llu positions  %s\n", c.num_mla_layers(),
                (unsigned long long)req.context, format_bytes(mla_cache_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  activations       batch of %llu  %s\n", (unsigned long long)req.batch,
                format_bytes(activation_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  I/O, index, misc  %s\n", format_bytes(io_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "  forecast peak RSS %s", format_bytes(peak_rss).c_str());
  o += buf;
  return o;
}

}  // namespace k3
