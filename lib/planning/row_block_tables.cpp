#include "planning/row_block_tables.h"

#include "common/error.h"
#include "trunk/row_blocks.h"

namespace k3 {

namespace {

LayerRowBlockSizes sizes_of(const LayerRowBlocks& rb) {
  LayerRowBlockSizes s;
  s.held_bytes = rb.held_bytes;
  s.largest_block_bytes = rb.largest_block_bytes;
  for (const StreamedMatrix& m : rb.matrices) s.blocks += m.blocks();
  return s;
}

}  // namespace

RowBlockTables row_block_tables(const ModelConfig& config, const TrunkLayout& layout, uint64_t block_bytes) {
  RowBlockTables t;
  if (block_bytes == 0 || block_bytes < min_block_bytes(config)) return t;
  t.block_bytes = block_bytes;
  t.sections.resize(layout.sections.size());
  for (size_t s = 0; s < layout.sections.size(); ++s) {
    if (layout.sections[s].layer < 0) continue;
    // A layer that cannot stream in row blocks is left out: plan_memory
    // builds it again, and refuses it, only where it streams.
    try {
      t.sections[s] = sizes_of(layer_row_blocks(config, layout.sections[s], block_bytes));
    } catch (const Error&) {}
  }
  return t;
}

LayerRowBlockSizes row_block_sizes(const ModelConfig& config, const TrunkLayout& layout, int section,
                                   uint64_t block_bytes, const RowBlockTables* tables) {
  const size_t s = static_cast<size_t>(section);
  if (tables && tables->block_bytes == block_bytes && tables->sections.size() == layout.sections.size() &&
      tables->sections[s])
    return *tables->sections[s];
  return sizes_of(layer_row_blocks(config, layout.sections[s], block_bytes));
}

}  // namespace k3
