#include "planning/prefill_forecast.h"

#include <algorithm>
#include <cmath>

#include "common/byte_format.h"
#include "common/plural.h"
#include "io/aligned_buffer.h"
#include "model/forward_scratch.h"
#include "model/prefill_chunk.h"
#include "planning/state_loan_plan.h"

namespace k3 {

namespace {

// Block states a layer-major chunk's layers read back from its spill file
// for a sub-batch of `m` rows, in rows of one block (ChunkBlocks::rows):
// layer i's blocks opened by then, once where the sub-batch is one piece;
// otherwise all but the one layer i opens for the attention's mix, then all
// of them again for the FFN's.
double spilled_rows_read(const ModelConfig& c, uint64_t m) {
  double blocks = 0;
  for (int i = 0; i < c.num_hidden_layers && c.attn_res_block_size > 0; ++i) {
    const double opened = static_cast<double>(i / c.attn_res_block_size + 1);
    blocks += opened;
    if (m > kChunkPieceRows) blocks += opened - (i % c.attn_res_block_size == 0 ? 1 : 0);
  }
  return blocks * static_cast<double>(m);
}

}  // namespace

PrefillReads forecast_prefill_reads(const ModelConfig& c, const MemoryPlan& plan, uint64_t tokens) {
  PrefillReads r;
  r.tokens = tokens;
  const uint64_t batch = std::max<uint64_t>(1, plan.batch), chunk = std::max(batch, plan.chunk);
  const double L = std::max(0, c.num_hidden_layers - c.first_k_dense_replace), E = c.num_experts,
               k = c.num_experts_per_token;
  const double expert = plan.slot_bytes > kDirectAlign ? static_cast<double>(plan.slot_bytes - kDirectAlign) : 0.0;
  // A cache lent to the chunk holds the chunk's slots only while the prompt runs.
  const uint64_t slots = plan.cache_lent_bytes > 0 ? plan.chunk_slots : plan.cache_slots;
  const double miss = L * E > 0 ? 1.0 - std::min(1.0, static_cast<double>(slots) / (L * E)) : 0.0;
  // Layers stream in row blocks through the products, once per sub-batch,
  // unless a chunk holds each layer whole (MemoryPlan::layer_held).
  const bool blocks_per_sub_batch = plan.row_blocks > 0 && !plan.layer_held;
  // Every chunk but the last holds `chunk` rows: count those once, then the
  // rest (a loop over chunks took minutes for a context of 10^11 positions).
  auto add_reads = [&](uint64_t rows, uint64_t times) {
    if (times == 0 || rows == 0) return;
    r.reads += times;
    const uint64_t sub = std::max(batch, plan.chunk_sub_batch);  // rows a row block is read for
    const uint64_t passes = blocks_per_sub_batch ? (rows + sub - 1) / sub : 1;
    r.trunk_bytes +=
        static_cast<double>(times) * static_cast<double>(passes) * static_cast<double>(plan.streamed_read_bytes);
    if (plan.layer_held && rows > batch) {
      // A held chunk reads the pinned layers lent to its hold buffer too.
      r.trunk_bytes += static_cast<double>(times) * static_cast<double>(plan.pinned_lent_read_bytes);
      // Its layers over the hold limit stream in row blocks once per
      // sub-batch (one piece), not once per chunk: the reads beyond the
      // first (counted in streamed_read_bytes above).
      const uint64_t pieces = (rows + sub - 1) / sub;
      r.trunk_bytes +=
          static_cast<double>(times) * static_cast<double>(pieces - 1) * static_cast<double>(plan.skipped_read_bytes);
    }
    if (plan.chunk_spilled && rows > batch) {
      // The chunk's rows go through in sub-batches of `sub`, the last shorter;
      // a MoE layer writes its shared experts' rows and reads them back.
      const double row = static_cast<double>(c.hidden_size) * sizeof(float);
      const uint64_t in = std::min(rows, sub), whole = rows / in, rest = rows % in;
      r.spill_written_bytes += static_cast<double>(times) * (static_cast<double>(residual_block_count(c)) + L) *
                               static_cast<double>(rows) * row;
      r.spill_read_bytes += static_cast<double>(times) * row *
                            (static_cast<double>(whole) * spilled_rows_read(c, in) + spilled_rows_read(c, rest) +
                             L * static_cast<double>(rows));
    }
    if (E > 0)
      r.expert_bytes +=
          static_cast<double>(times) * L * E * (1.0 - std::pow(1.0 - k / E, static_cast<double>(rows))) * miss * expert;
  };
  add_reads(chunk, tokens / chunk);
  add_reads(tokens % chunk, 1);
  if (!plan.embedding_pinned) r.trunk_bytes += static_cast<double>(tokens) * c.hidden_size * 2;  // BF16 rows
  // The sequence state lent to each chunk.
  if (plan.state_lent_bytes > 0) {
    const StateLoanBytes s = state_loan_bytes(c, tokens, chunk, batch);
    r.state_written_bytes = s.written;
    r.state_read_bytes = s.read;
  }
  return r;
}

std::string skipped_layers_phrase(const MemoryPlan& plan) {
  if (plan.skipped_layers == 0) return "";
  return " but " + plural(plan.skipped_layers, "layer") + " (" + format_bytes(plan.skipped_bytes) + "), which " +
         (plan.skipped_layers == 1 ? "streams" : "stream") + " in row blocks";
}

}  // namespace k3
