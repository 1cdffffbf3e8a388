// What a prompt of N tokens reads under a memory plan (the layer-major
// prefill, ForwardPass::set_chunk): one read of the weights per chunk of
// MemoryPlan::chunk tokens. Per read, the streamed trunk once (a trunk
// streamed in row blocks through the products: once per sub-batch of
// MemoryPlan::chunk_sub_batch rows instead, unless the chunk holds each
// layer whole: then once per chunk, with the pinned layers lent to the hold
// buffer, MemoryPlan::layer_held, but the layers over its hold limit once per
// sub-batch, MemoryPlan::skipped_layers) and each routed expert some row of the
// chunk chose, once, less what the expert cache holds (its floor only,
// where the plan lends the rest to the chunk: MemoryPlan::cache_lent_bytes). The routing part
// assumes flat routing (each row's top-k independent and uniform over the
// experts, the worst case for sharing: bench/pass_bytes_bench.cpp), so the
// expert bytes are an upper bound. A forecast for --plan and the bench, not
// a measurement: --stats-json counts what a run read. The spill file's reads
// are counted in the total (they may come from the page cache).
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"

namespace k3 {

struct PrefillReads {
  uint64_t tokens = 0;
  uint64_t reads = 0;       // reads of the weights (chunks)
  double trunk_bytes = 0;   // streamed trunk, the prompt's embedding rows
  double expert_bytes = 0;  // routed experts not in the cache
  // A spilled chunk's block states (MemoryPlan::chunk_spilled): written once
  // each, and read back by every layer from the one that opens them on, once
  // for a sub-batch of at most kChunkPieceRows rows, otherwise for each of
  // the layer's two mixes (the attention's without the block the layer
  // opens; model/prefill_chunk.h); the head's read of the last row's blocks
  // left out; and each MoE layer's shared-expert rows, written and read back
  // once.
  double spill_written_bytes = 0;
  double spill_read_bytes = 0;
  // The sequence state lent to each chunk (MemoryPlan::state_lent_bytes):
  // its file's bytes written and read back (state_loan_bytes).
  double state_written_bytes = 0;
  double state_read_bytes = 0;
  double total() const { return trunk_bytes + expert_bytes + spill_read_bytes + state_read_bytes; }
};

PrefillReads forecast_prefill_reads(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens);

// What follows "each layer held whole" where a held chunk skips the layers
// over its hold limit: " but 1 layer (2.34 GB), which streams in row blocks"
// (MemoryPlan::skipped_layers); "" where it skips none.
std::string skipped_layers_phrase(const MemoryPlan& plan);

}  // namespace k3
