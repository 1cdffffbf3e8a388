// The tensors a config implies, and the check of a checkpoint against them.
// Shapes follow the checkpoint on disk (SPEC "Tensors"): conv weights are
// [H*D, 1, K], A_log is stored zero-padded to [D], MXFP4 experts are U8
// packed [out, in/2] plus U8 scales [out, in/32].
#include "model/tensor_manifest.h"

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/shape_format.h"

namespace k3 {

namespace {

using Shape = std::vector<uint64_t>;

class Builder {
 public:
  explicit Builder(const ModelConfig& c) : c_(c) {}

  void add(const std::string& name, DType dt, Shape shape, TensorGroup g, int layer = -1, int expert = -1) {
    out_.push_back(ExpectedTensor{name, dt, std::move(shape), g, layer, expert});
  }

  void layer(int i) {
    const uint64_t hidden = c_.hidden_size;
    const std::string p = c_.model_prefix + "layers." + std::to_string(i) + ".";
    auto trunk = [&](const std::string& suffix, DType dt, Shape shape) {
      add(p + suffix, dt, std::move(shape), TensorGroup::kLayerTrunk, i);
    };
    trunk("input_layernorm.weight", DType::kF32, {hidden});
    trunk("post_attention_layernorm.weight", DType::kF32, {hidden});
    trunk("self_attention_res_proj.weight", DType::kBF16, {1, hidden});
    trunk("self_attention_res_norm.weight", DType::kF32, {hidden});
    trunk("mlp_res_proj.weight", DType::kBF16, {1, hidden});
    trunk("mlp_res_norm.weight", DType::kF32, {hidden});

    if (c_.is_kda_layer(i)) {
      const uint64_t H = c_.kda_num_heads, D = c_.kda_head_dim, K = c_.kda_conv_kernel;
      for (const char* x : {"q", "k", "v"}) {
        trunk(std::string("self_attn.") + x + "_proj.weight", DType::kBF16, {H * D, hidden});
        trunk(std::string("self_attn.") + x + "_conv1d.weight", DType::kBF16, {H * D, 1, K});
      }
      trunk("self_attn.f_a_proj.weight", DType::kBF16, {D, hidden});
      trunk("self_attn.f_b_proj.weight", DType::kBF16, {H * D, D});
      trunk("self_attn.b_proj.weight", DType::kBF16, {H, hidden});
      trunk("self_attn.g_proj.weight", DType::kBF16, {H * D, hidden});
      trunk("self_attn.o_proj.weight", DType::kBF16, {hidden, H * D});
      trunk("self_attn.o_norm.weight", DType::kF32, {D});
      trunk("self_attn.A_log", DType::kF32, {D});  // zero-padded: first H values are real
      trunk("self_attn.dt_bias", DType::kF32, {H * D});
    } else {
      const uint64_t heads = c_.mla_num_heads, nope = c_.qk_nope_head_dim, rope = c_.qk_rope_head_dim;
      const uint64_t v = c_.v_head_dim, ql = c_.q_lora_rank, kvl = c_.kv_lora_rank;
      trunk("self_attn.q_a_proj.weight", DType::kBF16, {ql, hidden});
      trunk("self_attn.q_a_layernorm.weight", DType::kF32, {ql});
      trunk("self_attn.q_b_proj.weight", DType::kBF16, {heads * (nope + rope), ql});
      trunk("self_attn.kv_a_proj_with_mqa.weight", DType::kBF16, {kvl + rope, hidden});
      trunk("self_attn.kv_a_layernorm.weight", DType::kF32, {kvl});
      trunk("self_attn.kv_b_proj.weight", DType::kBF16, {heads * (nope + v), kvl});
      if (c_.mla_use_output_gate) trunk("self_attn.g_proj.weight", DType::kBF16, {heads * v, hidden});
      trunk("self_attn.o_proj.weight", DType::kBF16, {hidden, heads * v});
    }

    if (!c_.is_moe_layer(i)) {
      const uint64_t inter = c_.intermediate_size;
      trunk("mlp.gate_proj.weight", DType::kBF16, {inter, hidden});
      trunk("mlp.up_proj.weight", DType::kBF16, {inter, hidden});
      trunk("mlp.down_proj.weight", DType::kBF16, {hidden, inter});
      return;
    }
    const uint64_t E = c_.num_experts, latent = c_.routed_expert_hidden_size;
    const uint64_t shared = static_cast<uint64_t>(c_.moe_intermediate_size) * c_.num_shared_experts;
    const std::string m = "block_sparse_moe.";
    trunk(m + "gate.weight", DType::kBF16, {E, hidden});
    trunk(m + "gate.e_score_correction_bias", DType::kF32, {E});
    trunk(m + "routed_expert_down_proj.weight", DType::kBF16, {latent, hidden});
    trunk(m + "routed_expert_up_proj.weight", DType::kBF16, {hidden, latent});
    if (c_.latent_moe_use_norm) trunk(m + "routed_expert_norm.weight", DType::kF32, {latent});
    trunk(m + "shared_experts.gate_proj.weight", DType::kBF16, {shared, hidden});
    trunk(m + "shared_experts.up_proj.weight", DType::kBF16, {shared, hidden});
    trunk(m + "shared_experts.down_proj.weight", DType::kBF16, {hidden, shared});

    const uint64_t inter = c_.moe_intermediate_size;
    for (int e = 0; e < c_.num_experts; ++e) {
      const std::string ep = expert_tensor_prefix(c_, i, e);
      auto matrix = [&](const char* w, uint64_t rows, uint64_t cols) {
        if (c_.experts_mxfp4) {
          add(ep + w + ".weight_packed", DType::kU8, {rows, cols / 2}, TensorGroup::kRoutedExpert, i, e);
          add(ep + w + ".weight_scale", DType::kU8, {rows, cols / 32}, TensorGroup::kRoutedExpert, i, e);
        } else {
          add(ep + w + ".weight", DType::kBF16, {rows, cols}, TensorGroup::kRoutedExpert, i, e);
        }
      };
      matrix("w1", inter, latent);
      matrix("w3", inter, latent);
      matrix("w2", latent, inter);
    }
  }

  std::vector<ExpectedTensor> take() { return std::move(out_); }

 private:
  const ModelConfig& c_;
  std::vector<ExpectedTensor> out_;
};

}  // namespace

std::string expert_tensor_prefix(const ModelConfig& config, int layer, int expert) {
  return config.model_prefix + "layers." + std::to_string(layer) + ".block_sparse_moe.experts." +
         std::to_string(expert) + ".";
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
  Builder b(config);
  const uint64_t hidden = config.hidden_size, vocab = config.vocab_size;
  b.add(config.model_prefix + "embed_tokens.weight", DType::kBF16, {vocab, hidden}, TensorGroup::kEmbedding);
  for (int i = 0; i < config.num_hidden_layers; ++i) b.layer(i);
  b.add(config.model_prefix + "norm.weight", DType::kF32, {hidden}, TensorGroup::kHead);
  b.add(config.model_prefix + "output_attn_res_proj.weight", DType::kBF16, {1, hidden}, TensorGroup::kHead);
  b.add(config.model_prefix + "output_attn_res_norm.weight", DType::kF32, {hidden}, TensorGroup::kHead);
  b.add(config.lm_head_name, DType::kBF16, {vocab, hidden}, TensorGroup::kHead);
  return b.take();
}

void validate_checkpoint(const ModelConfig& config, const Checkpoint& checkpoint) {
  for (const ExpectedTensor& t : expected_tensors(config)) {
    const TensorLocation* loc = checkpoint.find(t.name);
    if (!loc)
      throw Error(ExitCode::kBadModel, checkpoint.dir() + ": tensor '" + t.name +
                                           "' that config.json implies is missing from the checkpoint");
    const TensorInfo& info = *loc->info;
    if (info.dtype != t.dtype || info.shape != t.shape)
      throw Error(ExitCode::kBadModel, checkpoint.shards()[loc->shard].path + ": tensor '" + t.name + "' is " +
                                           dtype_name(info.dtype) + " " + info.shape_str() +
                                           " but config.json implies " + dtype_name(t.dtype) + " " +
                                           shape_str(t.shape));
  }
}

}  // namespace k3
