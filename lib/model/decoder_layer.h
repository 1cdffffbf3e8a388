// One decoder layer with the AttnRes residual stream (SPEC section 2,
// "Decoder layer i"). The stream carries p, the running sum of the current
// block, and B, the stack of finished block states; both are per token and
// nothing of them crosses tokens.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/sequence_state.h"
#include "model/weight_source.h"

namespace k3 {

class ThreadPool;

struct ResidualStream {
  size_t n = 0;                            // token rows
  std::vector<float> p;                    // [n, hidden]; meaningless while p_none
  bool p_none = false;                     // "p = none" right after a block boundary
  std::vector<std::vector<float>> blocks;  // B, each [n, hidden]

  std::vector<const float*> block_ptrs() const;
};

// Runs layer i over the n rows of `stream`, updating it and the layer's state.
void decoder_layer_forward(const ModelConfig& config, int layer, const LayerWeights& w, WeightSource& source,
                           LayerState& state, ResidualStream& stream, ThreadPool* pool);
// The same for a pass whose rows belong to several sequences (or record a
// history): the segments tile the stream's rows in order.
void decoder_layer_forward(const ModelConfig& config, int layer, const LayerWeights& w, WeightSource& source,
                           std::span<const LayerSegment> segments, ResidualStream& stream, ThreadPool* pool);

}  // namespace k3
