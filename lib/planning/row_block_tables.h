// What the memory plan takes from each streamed layer's row blocks at one
// block size (trunk/row_blocks.h layer_row_blocks): the held part, the
// largest block and the number of blocks. Building them walks every matrix
// of every layer, most of a plan's cost at K3's geometry, yet they depend on
// the layout and the block size alone, so a search that plans one layout
// many times (planning/prefill_chunk_fit.h: hundreds of plans) builds them
// once and passes them to plan_memory.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/config.h"
#include "trunk/layout.h"

namespace k3 {

struct LayerRowBlockSizes {
  uint64_t held_bytes = 0;           // buffer bytes of the held part
  uint64_t largest_block_bytes = 0;  // buffer bytes of the largest block
  uint64_t blocks = 0;               // row blocks of all its streamed matrices
};

struct RowBlockTables {
  uint64_t block_bytes = 0;  // 0: none built (plan_memory builds what it needs)
  // By layout section; empty for a section that is not a layer, or whose
  // row blocks could not be built (plan_memory then builds them and says
  // why, where that layer streams).
  std::vector<std::optional<LayerRowBlockSizes>> sections;
};

// The tables of `layout` at `block_bytes`; none where block_bytes is 0 or
// below min_block_bytes(config) (plan_memory refuses that block itself).
RowBlockTables row_block_tables(const ModelConfig& config, const TrunkLayout& layout, uint64_t block_bytes);

// Section `section`'s sizes: from `tables` where they were built for this
// layout and block size, else built now (throws as layer_row_blocks does).
LayerRowBlockSizes row_block_sizes(const ModelConfig& config, const TrunkLayout& layout, int section,
                                   uint64_t block_bytes, const RowBlockTables* tables);

}  // namespace k3
