// One decoder layer with the AttnRes residual stream (SPEC section 2,
// "Decoder layer i"). The stream (model/forward_scratch.h) carries p, the
// running sum of the current block, and B, the stack of finished block
// states; both are per token and nothing of them crosses tokens.
//
// The layer is also available in its two halves, so a layer-major prefill
// (model/prefill_chunk.h) can run the attention half over sub-batches of a
// chunk and the routed experts once for the whole chunk: every value is per
// token, so the halves give the bits of the whole layer.
#pragma once

#include <functional>
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

// The first half of layer i over the rows of `s`: the attention input mixed
// from p and B, the block boundary (push_block() is called where the layer
// closes a block, and must append p's rows to s.blocks, or count one more of
// a chunk's, s.chunk_block_count), attention, p's
// update; then the FFN's input rms(mix(p, B, mlp_res_*),
// post_attention_layernorm) is left in scratch.x() [s.n, hidden].
void decoder_layer_attention(const ModelConfig& config, int layer, const LayerWeights& w, WeightSource& source,
                             std::span<const LayerSegment> segments, ResidualStream& s,
                             const std::function<void()>& push_block, ForwardScratch& scratch, ThreadPool* pool);

// p += out, the FFN's output [s.n, hidden] (the second half's last step).
void decoder_layer_add(const ModelConfig& config, ResidualStream& s, const float* out);

}  // namespace k3
