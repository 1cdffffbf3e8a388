// How a streamed trunk layer passes through the stream buffers in row
// blocks, so that no buffer has to hold a whole layer: the tensors the
// forward pass reads element by element (norms, short-conv weights, AttnRes
// projections, MLA's kv_b_proj) form the layer's held part, in memory while
// the layer runs; every matrix it reads through lin() alone follows in use
// order as blocks of whole rows of at most the block budget (those that fit
// in the budget beside the held part join it, smallest first). Shared by the
// memory plan (sizes) and the trunk stream (reads), so both agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weight_binding.h"
#include "trunk/layout.h"

namespace k3 {

struct HeldTensor {
  const TrunkTensor* tensor = nullptr;
  uint64_t read_offset = 0, read_length = 0;  // aligned read covering the tensor
  uint64_t buffer_offset = 0;                 // where that read lands in the buffer (aligned)
  uint64_t skip = 0;                          // the tensor starts at buffer_offset + skip
};

struct StreamedMatrix {
  const TrunkTensor* tensor = nullptr;
  RowMatrix shape;
  uint64_t row_bytes = 0;
  uint64_t block_rows = 0;  // rows per block (the last block may be shorter)
  uint64_t blocks() const { return (static_cast<uint64_t>(shape.rows) + block_rows - 1) / block_rows; }
};

struct LayerRowBlocks {
  std::vector<HeldTensor> held;
  uint64_t held_bytes = 0;               // buffer bytes of the held part
  std::vector<StreamedMatrix> matrices;  // in use order
  uint64_t largest_block_bytes = 0;      // buffer bytes of the largest block
};

// Throws k3::Error(kBadModel) when the section lacks a tensor the layer
// needs, kUsage when block_bytes is below min_block_bytes().
LayerRowBlocks layer_row_blocks(const ModelConfig& config, const TrunkSection& section, uint64_t block_bytes);

// Buffer bytes of a block of `rows` rows of `row_bytes` each, at any offset.
uint64_t row_block_buffer_bytes(uint64_t rows, uint64_t row_bytes);

// The smallest block budget: one row of the widest matrix that may stream in
// row blocks (K3: mlp.down_proj of the dense layer, 33792 BF16 columns,
// 67,584 bytes) or of lm_head. `what` receives the matrix's name.
uint64_t min_block_bytes(const ModelConfig& config, std::string* what = nullptr);

}  // namespace k3
