#include "planning/state_loan_plan.h"

#include <algorithm>

#include "common/append_printf.h"
#include "common/byte_format.h"
#include "common/checked_math.h"

namespace k3 {

uint64_t kda_layer_state_bytes(const ModelConfig& c) {
  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  return (H * D * D + 3 * (K > 0 ? K - 1 : 0) * H * D) * 4;
}

uint64_t mla_layer_cache_bytes(const ModelConfig& c, uint64_t positions) {
  const uint64_t row = (static_cast<uint64_t>(c.kv_lora_rank) + c.qk_rope_head_dim) * 4;
  return checked_mul(positions, row, "the MLA latent cache");
}

void plan_state_loan(const ModelConfig& c, const RunRequest& req, MemoryPlan& p) {
  p.state_lent_bytes = p.state_loan_file_bytes = 0;
  if (!req.lend_state || !req.packed_trunk || p.chunk <= p.batch) return;
  const uint64_t seqs = std::max<uint64_t>(1, req.sequences);
  const uint64_t kda_layer = c.num_kda_layers() > 0 ? kda_layer_state_bytes(c) : 0;
  const uint64_t mla_layer = c.num_mla_layers() > 0 ? mla_layer_cache_bytes(c, req.context) : 0;
  const uint64_t kda_all = kda_layer * static_cast<uint64_t>(c.num_kda_layers());
  const uint64_t mla_all = checked_mul(mla_layer, static_cast<uint64_t>(c.num_mla_layers()), "the state loan");
  // Held: the sequences' states and the stop copies (kda_state_bytes and
  // mla_cache_bytes, rollback copies aside); kept: the running layer's.
  const uint64_t held =
      checked_add(checked_mul(seqs, checked_add(kda_all, mla_all, "the state loan"), "the state loan"),
                  checked_mul(plan_stop_copies(req), kda_all, "the state loan"), "the state loan");
  const uint64_t kept = seqs * std::max(kda_layer, mla_layer);
  p.state_lent_bytes = held > kept ? held - kept : 0;
  // The file: per sequence each KDA layer's state before and after the
  // chunk, each MLA layer's rows at the context.
  p.state_loan_file_bytes = checked_mul(seqs, checked_add(2 * kda_all, mla_all, "the state loan"), "the state loan");
}

std::string describe_state_loan(const MemoryPlan& p) {
  if (p.state_lent_bytes == 0) return "";
  std::string o;
  append_printf(o,
                "  state lent        the sequence state's %s lent to the chunk: one layer's in memory, the rest in "
                "a file beside the trunk (%s on disk) while the chunk runs; the peak counts the larger\n",
                format_bytes(p.state_lent_bytes).c_str(), format_bytes(p.state_loan_file_bytes).c_str());
  return o;
}

StateLoanBytes state_loan_bytes(const ModelConfig& c, uint64_t tokens, uint64_t chunk, uint64_t batch) {
  StateLoanBytes b;
  if (chunk <= batch || tokens <= batch) return b;
  const double kda = static_cast<double>(kda_layer_state_bytes(c)) * c.num_kda_layers();
  const double row = static_cast<double>(mla_layer_cache_bytes(c, 1)) * c.num_mla_layers();  // a position, all layers
  // The chunk starting at position P with r rows writes 2 kda + (P + r) rows
  // and reads 2 kda + (2P + r) rows (state_loan_plan.h).
  auto add = [&](double P, double r) {
    b.written += 2 * kda + (P + r) * row;
    b.read += 2 * kda + (2 * P + r) * row;
  };
  const uint64_t whole = tokens / chunk, rest = tokens % chunk;
  // The whole chunks in closed form (a loop over chunks takes minutes at 10^11
  // positions): sum of P + r is chunk n(n+1)/2, of 2P + r is chunk n^2.
  const double n = static_cast<double>(whole), C = static_cast<double>(chunk);
  b.written += n * 2 * kda + C * n * (n + 1) / 2 * row;
  b.read += n * 2 * kda + C * n * n * row;
  if (rest > batch) add(static_cast<double>(whole * chunk), static_cast<double>(rest));
  return b;
}

}  // namespace k3
