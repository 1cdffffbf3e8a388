// What a layer-major prefill carries for its chunk of tokens from one layer
// to the next (ForwardPass::set_chunk): the residual stream's running sum p and
// block states B for every token of the chunk, and the routed-expert rows of
// the MoE layer being run (model/latent_moe_chunk.h). The KDA state and the
// MLA latent cache are the sequence's own (SequenceState) and are counted
// by the memory plan already.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/latent_moe_chunk.h"

namespace k3 {

struct PrefillChunk {
  std::vector<float> p;       // [rows, hidden]
  std::vector<float> blocks;  // [block states, rows, hidden]
  MoeChunkRows moe;

  // Sizes the buffers for a chunk of `rows` tokens (grows only).
  void reserve(const ModelConfig& config, size_t rows);
  uint64_t bytes() const;
};

// Bytes a chunk carries per token: what the memory plan multiplies by the
// chunk's tokens.
uint64_t prefill_chunk_bytes_per_token(const ModelConfig& config);

}  // namespace k3
