// The DSpark draft model and its pass (docs/dspark.md): block_size query
// rows at positions L .. L+n-1 with ids [anchor, mask x (n-1)], embedded
// with the target's table, through the draft layers over the context of
// positions 0 .. L-1, final-normed, turned into base logits by the target's
// lm_head (read once for all rows; the target's final norm is not applied),
// then the Markov chain and the confidence head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "draft/context_fusion.h"
#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"
#include "draft/yarn_rope.h"

namespace k3 {

class ThreadPool;
class WeightSource;

struct DraftPassResult {
  std::vector<int32_t> ids;        // d_0 .. d_{n-1}: the tokens of positions L+1 .. L+n
  std::vector<float> hidden;       // [n][hidden] final-normed rows
  std::vector<float> base_logits;  // [n][vocab]
  std::vector<float> layer_out;    // [layers][n][hidden] residual after each layer (when asked)
  std::vector<float> confidence;   // [n] logits (empty without the head)
};

class DSparkModel {
 public:
  // Reads DIR (config.json + model.safetensors). Throws kBadModel.
  static DSparkModel load(const std::string& dir);
  DSparkModel(DSparkConfig config, DSparkWeights weights);

  const DSparkConfig& config() const { return config_; }
  const DSparkWeights& weights() const { return weights_; }
  const YarnRope& rope() const { return rope_; }

  // Fuses taps [n][num_taps * hidden] of the next n committed positions.
  void fuse(const float* taps, size_t n, DraftContext& context, ThreadPool* pool,
            std::vector<float>* fused = nullptr) const {
    fuse_context(config_, weights_, rope_, taps, n, context, pool, fused);
  }

  // One draft pass of `rows` query rows (block_size unless a test asks for
  // fewer) with the anchor at position context.positions. `target` supplies
  // the embedding rows and the lm_head. The context is unchanged on return.
  DraftPassResult propose(WeightSource& target, DraftContext& context, int32_t anchor, size_t rows, ThreadPool* pool,
                          bool keep_layer_out = false) const;

 private:
  DSparkConfig config_;
  DSparkWeights weights_;
  YarnRope rope_;
};

}  // namespace k3
