#include "model/prefill_chunk.h"

#include "model/forward_scratch.h"

namespace k3 {

void PrefillChunk::reserve(const ModelConfig& c, size_t rows) {
  const size_t row = static_cast<size_t>(c.hidden_size) * rows;
  if (p.size() < row) p.resize(row);
  if (blocks.size() < residual_block_count(c) * row) blocks.resize(residual_block_count(c) * row);
  if (c.first_k_dense_replace < c.num_hidden_layers) moe.reserve(c, rows);
}

uint64_t PrefillChunk::bytes() const {
  return (p.size() + blocks.size() + moe.z.size() + moe.shared.size() + moe.expert_out.size() + moe.weights.size()) *
             sizeof(float) +
         moe.chosen.size() * sizeof(int32_t) + (moe.expert_rows.size() + moe.start.size()) * sizeof(size_t);
}

uint64_t prefill_chunk_bytes_per_token(const ModelConfig& c) {
  const uint64_t stream = (residual_block_count(c) + 1) * static_cast<uint64_t>(c.hidden_size) * sizeof(float);
  const bool moe = c.first_k_dense_replace < c.num_hidden_layers;
  return stream + (moe ? MoeChunkRows::bytes_per_row(c) : 0);
}

}  // namespace k3
