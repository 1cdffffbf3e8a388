// Where the model's weights come from during a forward step.
//
// The forward pass asks for weights in the order it uses them and releases
// them when done, so an implementation is free to keep everything resident
// (ResidentWeights), pin part of the trunk and stream the rest, or cache
// routed experts in a cache arena. Whatever it does, the bytes delivered are
// the checkpoint's bytes, so the output never depends on the implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/weights.h"

namespace k3 {

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  // FP32 embedding rows for `n` token ids into out[n, hidden]. Ids were
  // validated against vocab_size by the caller.
  virtual void embed(const int32_t* ids, size_t n, float* out) = 0;

  // Trunk weights of layer i, valid until release_layer(i). A streaming
  // source may start reading layer i+1 in the background here.
  virtual const LayerWeights& acquire_layer(int layer) = 0;
  virtual void release_layer(int layer) = 0;

  // Routed experts of a MoE layer. Calls on_ready(k, w) once for every
  // experts[k] (the weights are valid during the call only), in whatever
  // order their bytes become available, and returns when all were delivered.
  // Calls are made one at a time on the calling thread (on_ready itself uses
  // the thread pool).
  // Callers must not let the arrival order affect results: compute each
  // expert into its own buffer and combine in a fixed order afterwards.
  // A hint given as soon as a MoE layer's routing is known, before the
  // router-independent work of the layer (latent projection, shared experts)
  // and before for_each_expert(layer, experts): a streaming source starts the
  // reads now so they overlap that work. Changes nothing else.
  virtual void prefetch_experts(int /*layer*/, const std::vector<int>& /*experts*/) {}

  // Cross-layer reads (opt-in, --expert-lookahead). router_ahead(layer):
  // the trunk weights of MoE layer `layer` when its router may be used to
  // guess that layer's experts one layer early, that is when the source
  // looks ahead and the weights are in memory now (never read for the
  // guess); nullptr otherwise (the default). Valid until the next
  // release_layer. prefetch_guess(layer, experts): the distinct experts so
  // guessed, given while layer - 1 computes (after its prefetch_experts):
  // a streaming source may read them where it has room. Like
  // prefetch_experts, both change nothing but timing and the bytes read.
  virtual const MoeTrunkWeights* router_ahead(int /*layer*/) { return nullptr; }
  virtual void prefetch_guess(int /*layer*/, const std::vector<int>& /*experts*/) {}

  virtual void for_each_expert(int layer, const std::vector<int>& experts,
                               const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) = 0;

  // A layer-major chunk (ForwardPass::set_chunk) is about to run: a source
  // whose memory serves decode only (an expert cache beyond the chunk's slots: a
  // chunk reads each expert its rows chose once per layer anyway) may lend
  // it to the chunk's carried state until reclaim_after_chunk(), which the
  // forward pass calls after it has freed that state (returns whether it
  // lent anything; the default lends nothing). Changes nothing but memory
  // and the bytes decode reads while the cache refills.
  virtual bool lend_for_chunk() { return false; }
  virtual void reclaim_after_chunk() {}

  // Final norm, output AttnRes and lm_head, valid until release_head().
  // A source that streams the head may leave head.lm_head empty: the logits
  // are computed through for_each_head_block().
  virtual const HeadWeights& acquire_head() = 0;
  virtual void release_head() = 0;

  // The rows of lm_head, between acquire_head() and release_head(): calls
  // on_block(first_row, rows) for consecutive row blocks covering
  // [0, vocab_size) in order; `rows` is valid during the call only. A logit
  // depends on its own lm_head row alone, so blocks never change the output;
  // they let a streaming source read the 2.35 GB head of K3 through buffers a
  // fraction of its size. The default passes head.lm_head as one block.
  using HeadBlock = std::function<void(int64_t first_row, const Bf16Matrix& rows)>;
  virtual void for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) { on_block(0, head.lm_head); }
};

}  // namespace k3
