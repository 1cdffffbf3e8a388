// The weights of a DSpark draft, read from DIR/model.safetensors into memory
// (BF16 matrices as stored; norm vectors widened to FP32 once).
//
// K3's embedding and lm_head are not loaded: the draft uses the target's own
// (the checkpoint's embed_tokens copy is only checked for its shape), so a
// draft pass reads them through the target's WeightSource.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "draft/dspark_config.h"
#include "model/weights.h"

namespace k3 {

struct DraftLayerWeights {
  std::vector<float> input_layernorm, post_attention_layernorm;  // [hidden]
  Bf16Matrix q_a_proj;                  // [q_lora, hidden]
  std::vector<float> q_a_layernorm;     // [q_lora]
  Bf16Matrix q_b_proj;                  // [heads*(nope+rope), q_lora]
  Bf16Matrix kv_a_proj_with_mqa;        // [kv_lora + rope, hidden]
  std::vector<float> kv_a_layernorm;    // [kv_lora]
  Bf16Matrix kv_b_proj;                 // [heads*(nope+v), kv_lora]
  Bf16Matrix o_proj;                    // [hidden, heads*v]
  Bf16Matrix gate_proj, up_proj;        // [inter, hidden]
  Bf16Matrix down_proj;                 // [hidden, inter]
};

struct DSparkWeights {
  Bf16Matrix context_proj;              // [hidden, taps*hidden]
  std::vector<float> context_norm;      // [hidden]
  std::vector<DraftLayerWeights> layers;
  std::vector<float> final_norm;        // [hidden]
  Bf16Matrix markov_w1, markov_w2;      // [vocab, markov_rank]
  std::vector<float> confidence_w;      // [hidden + markov_rank] (empty without the head)
  float confidence_b = 0;
  uint64_t bytes = 0;                   // BF16 bytes held (the plan counts them)

  DSparkWeights() = default;
  DSparkWeights(const DSparkWeights&) = delete;
  DSparkWeights& operator=(const DSparkWeights&) = delete;
  DSparkWeights(DSparkWeights&&) = default;
  DSparkWeights& operator=(DSparkWeights&&) = default;

  std::vector<std::vector<uint16_t>> storage;  // the matrices point into these
};

// Reads every tensor the draft pass uses, checking names, dtypes (BF16) and
// shapes against the config. Throws Error(kBadModel) naming the tensor.
DSparkWeights load_dspark_weights(const DSparkConfig& config, const std::string& dir);

// Bytes the draft's own weights take in memory (without K3's shared
// embedding and lm_head), from the config alone.
uint64_t dspark_weight_bytes(const DSparkConfig& config);

}  // namespace k3
