// The weights of a DSpark draft, read from DIR/model.safetensors into memory
// (BF16 matrices as stored; norm vectors widened to FP32 once).
//
// K3's embedding and lm_head are not loaded: the draft uses the target's own
// (the checkpoint's embed_tokens copy is only checked for its shape), so a
// draft pass reads them through the target's WeightSource.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "draft/draft_row_stream.h"
#include "draft/dspark_config.h"
#include "model/weights.h"

namespace k3 {

struct DraftLayerWeights {
  std::vector<float> input_layernorm, post_attention_layernorm;  // [hidden]
  Bf16Matrix q_a_proj;                                           // [q_lora, hidden]
  std::vector<float> q_a_layernorm;                              // [q_lora]
  Bf16Matrix q_b_proj;                                           // [heads*(nope+rope), q_lora]
  Bf16Matrix kv_a_proj_with_mqa;                                 // [kv_lora + rope, hidden]
  std::vector<float> kv_a_layernorm;                             // [kv_lora]
  Bf16Matrix kv_b_proj;                                          // [heads*(nope+v), kv_lora]
  Bf16Matrix o_proj;                                             // [hidden, heads*v]
  Bf16Matrix gate_proj, up_proj;                                 // [inter, hidden]
  Bf16Matrix down_proj;                                          // [hidden, inter]
};

struct DSparkWeights {
  Bf16Matrix context_proj;          // [hidden, taps*hidden]
  std::vector<float> context_norm;  // [hidden]
  std::vector<DraftLayerWeights> layers;
  std::vector<float> final_norm;    // [hidden]
  Bf16Matrix markov_w1, markov_w2;  // [vocab, markov_rank]
  std::vector<float> confidence_w;  // [hidden + markov_rank] (empty without the head)
  float confidence_b = 0;
  uint64_t bytes = 0;  // BF16 bytes held (the plan counts them)
  // Streamed (load_dspark_weights with a block size): the matrices used
  // only through lin() read per use through `stream`'s one buffer.
  std::shared_ptr<DraftStreamFile> stream;
  std::vector<std::unique_ptr<DraftRowStream>> row_streams;  // the matrices' `blocks` point at these
  uint64_t streamed_bytes = 0;                               // bytes of the streamed matrices (one full read)

  DSparkWeights() = default;
  DSparkWeights(const DSparkWeights&) = delete;
  DSparkWeights& operator=(const DSparkWeights&) = delete;
  DSparkWeights(DSparkWeights&&) = default;
  DSparkWeights& operator=(DSparkWeights&&) = default;

  std::vector<std::vector<uint16_t>> storage;  // the matrices point into these
};

// Reads every tensor the draft pass uses, checking names, dtypes (BF16) and
// shapes against the config. Throws Error(kBadModel) naming the tensor.
// `stream_block_bytes` > 0: the matrices used only through lin()
// (context_proj, q_a/q_b/kv_a/o_proj and the MLP of every layer) stay on disk
// and stream in blocks of whole rows through one buffer of that many bytes
// (at least one row of the widest); the rest is read into memory as above.
DSparkWeights load_dspark_weights(const DSparkConfig& config, const std::string& dir, uint64_t stream_block_bytes = 0);

// Bytes the draft's own weights take in memory (without K3's shared
// embedding and lm_head), from the config alone.
uint64_t dspark_weight_bytes(const DSparkConfig& config);
// Of those, the bytes of the matrices that stream on small presets (read
// again for every draft pass and every fusion of committed positions).
uint64_t dspark_streamed_weight_bytes(const DSparkConfig& config);

}  // namespace k3
