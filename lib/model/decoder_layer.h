// One decoder layer with the AttnRes residual stream (SPEC section 2,
// "Decoder layer i"). The stream (model/forward_scratch.h) carries p, the
// running sum of the current block, and B, the stack of finished block
// states; both are per token and nothing of them crosses tokens.
#pragma once

#include <span>

#include "model/config.h"
#include "model/forward_scratch.h"
#include "model/sequence_state.h"
#include "model/weight_source.h"

namespace k3 {

class ThreadPool;

// Runs layer i over the rows of scratch.stream(), updating it and the layers'
// states; the segments (one per sequence) tile the stream's rows in order.
void decoder_layer_forward(const ModelConfig& config, int layer, const LayerWeights& w, WeightSource& source,
                           std::span<const LayerSegment> segments, ForwardScratch& scratch, ThreadPool* pool);

}  // namespace k3
