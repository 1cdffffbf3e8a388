// Views of the weights one forward step reads. They point into buffers owned
// by a WeightSource (resident memory, a pinned trunk, a streamed layer buffer
// or an expert cache slot); the model never owns or copies weight bytes.
#pragma once

#include <cstdint>
#include <functional>

namespace k3 {

struct Bf16Matrix;

// The rows of a matrix that is not in memory all at once: a streaming source
// hands them over as consecutive row blocks covering [0, rows) in order, each
// valid during its call only. Only products go through blocks (an output row
// depends on its own weight row alone), so blocks never change a result.
class MatrixRows {
 public:
  using Block = std::function<void(int64_t first_row, const Bf16Matrix& rows)>;
  virtual ~MatrixRows() = default;
  virtual void for_each_block(const Block& on_block) const = 0;
};

struct Bf16Matrix {  // row-major [rows, cols], raw bf16 bits
  const uint16_t* data = nullptr;
  int64_t rows = 0, cols = 0;
  // Set (and data null) when the matrix streams in row blocks: only lin()
  // reads it then, block by block. Only matrices the binding marks as used
  // through lin() alone can be streamed this way (weight_binding.h).
  const MatrixRows* blocks = nullptr;
};

struct F32Vector {
  const float* data = nullptr;
  int64_t size = 0;
};

struct Mxfp4Matrix {  // logical [rows, cols]; packed [rows, cols/2], scales [rows, cols/32]
  const uint8_t* packed = nullptr;
  const uint8_t* scales = nullptr;
  int64_t rows = 0, cols = 0;
};

// A routed-expert matrix is MXFP4 in K3, BF16 when the config has no
// quantization_config.
struct ExpertMatrix {
  bool is_mxfp4 = true;
  Mxfp4Matrix mx;
  Bf16Matrix bf;
};

struct ExpertWeights {
  ExpertMatrix w1;  // gate [moe_inter, latent]
  ExpertMatrix w3;  // up   [moe_inter, latent]
  ExpertMatrix w2;  // down [latent, moe_inter]
};

struct KdaWeights {
  Bf16Matrix q_proj, k_proj, v_proj;  // [H*D, hidden]
  Bf16Matrix q_conv, k_conv, v_conv;  // [H*D, 1, K] viewed as [H*D, K]
  Bf16Matrix f_a_proj;                // [D, hidden]
  Bf16Matrix f_b_proj;                // [H*D, D]
  Bf16Matrix b_proj;                  // [H, hidden]
  Bf16Matrix g_proj;                  // [H*D, hidden]
  Bf16Matrix o_proj;                  // [hidden, H*D]
  F32Vector o_norm;                   // [D]
  F32Vector A_log;                    // [D] zero-padded; first H values real
  F32Vector dt_bias;                  // [H*D]
};

struct MlaWeights {
  Bf16Matrix q_a_proj;            // [q_lora, hidden]
  F32Vector q_a_layernorm;        // [q_lora]
  Bf16Matrix q_b_proj;            // [heads*(nope+rope), q_lora]
  Bf16Matrix kv_a_proj_with_mqa;  // [kv_lora + rope, hidden]
  F32Vector kv_a_layernorm;       // [kv_lora]
  Bf16Matrix kv_b_proj;           // [heads*(nope+v), kv_lora]
  Bf16Matrix g_proj;              // [heads*v, hidden]
  Bf16Matrix o_proj;              // [hidden, heads*v]
};

struct DenseMlpWeights {
  Bf16Matrix gate_proj, up_proj;  // [inter, hidden]
  Bf16Matrix down_proj;           // [hidden, inter]
};

struct MoeTrunkWeights {   // everything of a MoE layer except the routed experts
  Bf16Matrix router;       // gate.weight [num_experts, hidden]
  F32Vector router_bias;   // gate.e_score_correction_bias [num_experts]
  Bf16Matrix latent_down;  // routed_expert_down_proj [latent, hidden]
  Bf16Matrix latent_up;    // routed_expert_up_proj [hidden, latent]
  F32Vector latent_norm;   // routed_expert_norm [latent]
  DenseMlpWeights shared;  // shared_experts, width moe_inter*num_shared
};

struct LayerWeights {
  F32Vector input_layernorm, post_attention_layernorm;
  Bf16Matrix self_attention_res_proj, mlp_res_proj;  // [1, hidden]
  F32Vector self_attention_res_norm, mlp_res_norm;
  KdaWeights kda;       // set when the layer is KDA
  MlaWeights mla;       // set when the layer is MLA
  DenseMlpWeights mlp;  // set when the layer is dense
  MoeTrunkWeights moe;  // set when the layer is MoE
};

struct HeadWeights {
  F32Vector norm;                   // final norm [hidden]
  Bf16Matrix output_attn_res_proj;  // [1, hidden]
  F32Vector output_attn_res_norm;   // [hidden]
  Bf16Matrix lm_head;               // [vocab, hidden]
};

}  // namespace k3
