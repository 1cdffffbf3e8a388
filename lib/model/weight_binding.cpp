#include "model/weight_binding.h"

#include "model/tensor_manifest.h"

namespace k3 {

namespace {

struct Binder {
  const TensorLookup& lookup;
  std::string prefix;
  const RowMatrixLookup* row_lookup = nullptr;

  Bf16Matrix bf16(const std::string& name, int64_t rows, int64_t cols) const {
    return Bf16Matrix{static_cast<const uint16_t*>(lookup(prefix + name)), rows, cols};
  }
  // A matrix the forward pass reads through lin() alone.
  Bf16Matrix rows(const std::string& name, int64_t rows, int64_t cols) const {
    return row_lookup ? (*row_lookup)(prefix + name, rows, cols) : bf16(name, rows, cols);
  }
  F32Vector f32(const std::string& name, int64_t size) const {
    return F32Vector{static_cast<const float*>(lookup(prefix + name)), size};
  }
};

DenseMlpWeights bind_mlp(const Binder& b, const std::string& p, int64_t hidden, int64_t inter) {
  DenseMlpWeights w;
  w.gate_proj = b.rows(p + "gate_proj.weight", inter, hidden);
  w.up_proj = b.rows(p + "up_proj.weight", inter, hidden);
  w.down_proj = b.rows(p + "down_proj.weight", hidden, inter);
  return w;
}

}  // namespace

// Matrices are bound in the order the forward pass uses them: a streaming
// source reads them in this order (layer_row_matrices).
LayerWeights bind_layer_weights(const ModelConfig& c, int i, const TensorLookup& lookup,
                                const RowMatrixLookup* row_lookup) {
  const Binder b{lookup, c.model_prefix + "layers." + std::to_string(i) + ".", row_lookup};
  const int64_t hidden = c.hidden_size;
  LayerWeights w;
  w.input_layernorm = b.f32("input_layernorm.weight", hidden);
  w.post_attention_layernorm = b.f32("post_attention_layernorm.weight", hidden);
  w.self_attention_res_proj = b.bf16("self_attention_res_proj.weight", 1, hidden);
  w.self_attention_res_norm = b.f32("self_attention_res_norm.weight", hidden);
  w.mlp_res_proj = b.bf16("mlp_res_proj.weight", 1, hidden);
  w.mlp_res_norm = b.f32("mlp_res_norm.weight", hidden);

  if (c.is_kda_layer(i)) {
    const int64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
    KdaWeights& k = w.kda;
    k.q_proj = b.rows("self_attn.q_proj.weight", H * D, hidden);
    k.k_proj = b.rows("self_attn.k_proj.weight", H * D, hidden);
    k.v_proj = b.rows("self_attn.v_proj.weight", H * D, hidden);
    k.q_conv = b.bf16("self_attn.q_conv1d.weight", H * D, K);
    k.k_conv = b.bf16("self_attn.k_conv1d.weight", H * D, K);
    k.v_conv = b.bf16("self_attn.v_conv1d.weight", H * D, K);
    k.f_a_proj = b.rows("self_attn.f_a_proj.weight", D, hidden);
    k.f_b_proj = b.rows("self_attn.f_b_proj.weight", H * D, D);
    k.b_proj = b.rows("self_attn.b_proj.weight", H, hidden);
    k.g_proj = b.rows("self_attn.g_proj.weight", H * D, hidden);
    k.o_proj = b.rows("self_attn.o_proj.weight", hidden, H * D);
    k.o_norm = b.f32("self_attn.o_norm.weight", D);
    k.A_log = b.f32("self_attn.A_log", D);
    k.dt_bias = b.f32("self_attn.dt_bias", H * D);
  } else {
    const int64_t heads = c.mla_num_heads, nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim;
    const int64_t v = c.v_head_dim, ql = c.q_lora_rank, kvl = c.kv_lora_rank;
    MlaWeights& m = w.mla;
    m.q_a_proj = b.rows("self_attn.q_a_proj.weight", ql, hidden);
    m.q_a_layernorm = b.f32("self_attn.q_a_layernorm.weight", ql);
    m.q_b_proj = b.rows("self_attn.q_b_proj.weight", heads * (nope + rope), ql);
    m.kv_a_proj_with_mqa = b.rows("self_attn.kv_a_proj_with_mqa.weight", kvl + rope, hidden);
    m.kv_a_layernorm = b.f32("self_attn.kv_a_layernorm.weight", kvl);
    m.kv_b_proj = b.bf16("self_attn.kv_b_proj.weight", heads * (nope + v), kvl);
    if (c.mla_use_output_gate) m.g_proj = b.rows("self_attn.g_proj.weight", heads * v, hidden);
    m.o_proj = b.rows("self_attn.o_proj.weight", hidden, heads * v);
  }

  if (!c.is_moe_layer(i)) {
    w.mlp = bind_mlp(b, "mlp.", hidden, c.intermediate_size);
  } else {
    const int64_t E = c.num_experts, latent = c.routed_expert_hidden_size;
    MoeTrunkWeights& m = w.moe;
    m.router = b.rows("block_sparse_moe.gate.weight", E, hidden);
    m.router_bias = b.f32("block_sparse_moe.gate.e_score_correction_bias", E);
    m.latent_down = b.rows("block_sparse_moe.routed_expert_down_proj.weight", latent, hidden);
    m.shared = bind_mlp(b, "block_sparse_moe.shared_experts.", hidden,
                        static_cast<int64_t>(c.moe_intermediate_size) * c.num_shared_experts);
    if (c.latent_moe_use_norm) m.latent_norm = b.f32("block_sparse_moe.routed_expert_norm.weight", latent);
    m.latent_up = b.rows("block_sparse_moe.routed_expert_up_proj.weight", hidden, latent);
  }
  return w;
}

ExpertWeights bind_expert_weights(const ModelConfig& c, int layer, int expert, const TensorLookup& lookup) {
  const std::string p = expert_tensor_prefix(c, layer, expert);
  const int64_t inter = c.moe_intermediate_size, latent = c.routed_expert_hidden_size;
  auto matrix = [&](const char* name, int64_t rows, int64_t cols) {
    ExpertMatrix m;
    m.is_mxfp4 = c.experts_mxfp4;
    if (m.is_mxfp4) {
      m.mx.packed = static_cast<const uint8_t*>(lookup(p + name + ".weight_packed"));
      m.mx.scales = static_cast<const uint8_t*>(lookup(p + name + ".weight_scale"));
      m.mx.rows = rows;
      m.mx.cols = cols;
    } else {
      m.bf = Bf16Matrix{static_cast<const uint16_t*>(lookup(p + name + ".weight")), rows, cols};
    }
    return m;
  };
  ExpertWeights w;
  w.w1 = matrix("w1", inter, latent);
  w.w3 = matrix("w3", inter, latent);
  w.w2 = matrix("w2", latent, inter);
  return w;
}

HeadWeights bind_head_weights(const ModelConfig& c, const TensorLookup& lookup) {
  const int64_t hidden = c.hidden_size;
  HeadWeights h;
  h.norm = F32Vector{static_cast<const float*>(lookup(c.model_prefix + "norm.weight")), hidden};
  h.output_attn_res_proj =
      Bf16Matrix{static_cast<const uint16_t*>(lookup(c.model_prefix + "output_attn_res_proj.weight")), 1, hidden};
  h.output_attn_res_norm =
      F32Vector{static_cast<const float*>(lookup(c.model_prefix + "output_attn_res_norm.weight")), hidden};
  h.lm_head = Bf16Matrix{static_cast<const uint16_t*>(lookup(c.lm_head_name)), c.vocab_size, hidden};
  return h;
}

}  // namespace k3

namespace k3 {

std::vector<RowMatrix> layer_row_matrices(const ModelConfig& c, int layer) {
  static const char kAny = 0;  // binding needs an address; nothing is read from it
  std::vector<RowMatrix> out;
  const TensorLookup any = [](const std::string&) -> const void* { return &kAny; };
  const RowMatrixLookup record = [&out](const std::string& name, int64_t rows, int64_t cols) {
    out.push_back(RowMatrix{name, rows, cols});
    return Bf16Matrix{};
  };
  bind_layer_weights(c, layer, any, &record);
  return out;
}

}  // namespace k3
