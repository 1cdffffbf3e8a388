#include "draft/dspark_weights.h"

#include <algorithm>

#include "checkpoint/safetensors.h"
#include "common/error.h"
#include "common/file.h"
#include "kernels/bf16.h"

namespace k3 {

namespace {

class Reader {
 public:
  Reader(const std::string& path, DSparkWeights& w)
      : path_(path), header_(read_safetensors_header(path)), file_(File::open_read(path)), w_(w) {}

  const TensorInfo& find(const std::string& name, std::vector<uint64_t> shape) const {
    auto it = header_.tensors.find(name);
    if (it == header_.tensors.end())
      throw Error(ExitCode::kBadModel, path_ + ": tensor '" + name + "' is missing (not a Kimi-K3-DSpark checkpoint?)");
    const TensorInfo& t = it->second;
    if (t.dtype != DType::kBF16)
      throw Error(ExitCode::kBadModel, path_ + ": tensor '" + name + "' is " + dtype_name(t.dtype) + ", expected BF16");
    if (t.shape != shape) {
      TensorInfo want;
      want.shape = shape;
      throw Error(ExitCode::kBadModel, path_ + ": tensor '" + name + "' has shape " + t.shape_str() +
                                           ", the config implies " + want.shape_str());
    }
    return t;
  }
  bool has(const std::string& name) const { return header_.tensors.count(name) != 0; }

  // A matrix used only through lin(): streamed when the weights stream.
  Bf16Matrix streamable(const std::string& name, uint64_t rows, uint64_t cols) {
    if (!w_.stream) return matrix(name, rows, cols);
    const TensorInfo& t = find(name, {rows, cols});
    w_.streamed_bytes += t.nbytes;
    auto& rs = w_.row_streams.emplace_back(
        std::make_unique<DraftRowStream>(w_.stream, t.offset, static_cast<int64_t>(rows), static_cast<int64_t>(cols)));
    return Bf16Matrix{nullptr, static_cast<int64_t>(rows), static_cast<int64_t>(cols), rs.get()};
  }
  Bf16Matrix matrix(const std::string& name, uint64_t rows, uint64_t cols) {
    const TensorInfo& t = find(name, {rows, cols});
    std::vector<uint16_t>& buf = w_.storage.emplace_back(rows * cols);
    file_.pread_exact(buf.data(), t.nbytes, t.offset);
    w_.bytes += t.nbytes;
    return Bf16Matrix{buf.data(), static_cast<int64_t>(rows), static_cast<int64_t>(cols), nullptr};
  }
  std::vector<float> vector(const std::string& name, uint64_t n, std::vector<uint64_t> shape = {}) {
    const TensorInfo& t = find(name, shape.empty() ? std::vector<uint64_t>{n} : shape);
    std::vector<uint16_t> raw(n);
    file_.pread_exact(raw.data(), t.nbytes, t.offset);
    w_.bytes += t.nbytes;
    std::vector<float> out(n);
    for (uint64_t i = 0; i < n; ++i) out[i] = kernels::bf16_to_f32(raw[i]);
    return out;
  }

 private:
  std::string path_;
  SafetensorsHeader header_;
  File file_;
  DSparkWeights& w_;
};

}  // namespace

DSparkWeights load_dspark_weights(const DSparkConfig& c, const std::string& dir, uint64_t stream_block_bytes) {
  const std::string path = dir + "/model.safetensors";
  if (!file_exists(path))
    throw Error(ExitCode::kBadModel,
                path + ": missing; a Kimi-K3-DSpark checkpoint is config.json + model.safetensors");
  DSparkWeights w;
  if (stream_block_bytes > 0) {
    // At least one row of the widest streamed matrix (context_proj's, or the MLP's down_proj).
    const uint64_t widest = 2 * static_cast<uint64_t>(std::max({c.hidden_size * c.num_taps(), c.intermediate_size,
                                                                c.num_heads * c.v_head_dim, c.q_lora_rank}));
    // One block, or all the streamed matrices when they take less (as the memory plan counts it).
    w.stream = std::make_shared<DraftStreamFile>(
        path, std::max(std::min(stream_block_bytes, dspark_streamed_weight_bytes(c)), widest));
  }
  w.storage.reserve(4 + 12 * static_cast<size_t>(c.num_hidden_layers));  // matrices keep pointers into it
  Reader r(path, w);
  const uint64_t H = c.hidden_size, heads = c.num_heads, I = c.intermediate_size, V = c.vocab_size;
  const uint64_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, rope = c.qk_rope_head_dim;
  // The embedding copy equals K3's table; only its shape is checked.
  if (r.has("embed_tokens.weight")) r.find("embed_tokens.weight", {V, H});
  w.context_proj = r.streamable("context_proj.weight", H, H * static_cast<uint64_t>(c.num_taps()));
  w.context_norm = r.vector("context_norm.weight", H);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    DraftLayerWeights& L = w.layers.emplace_back();
    L.input_layernorm = r.vector(p + "input_layernorm.weight", H);
    L.q_a_proj = r.streamable(p + "self_attn.q_a_proj.weight", ql, H);
    L.q_a_layernorm = r.vector(p + "self_attn.q_a_layernorm.weight", ql);
    L.q_b_proj = r.streamable(p + "self_attn.q_b_proj.weight", heads * c.qk_head_dim(), ql);
    L.kv_a_proj_with_mqa = r.streamable(p + "self_attn.kv_a_proj_with_mqa.weight", kvl + rope, H);
    L.kv_a_layernorm = r.vector(p + "self_attn.kv_a_layernorm.weight", kvl);
    L.kv_b_proj = r.matrix(p + "self_attn.kv_b_proj.weight", heads * (c.qk_nope_head_dim + c.v_head_dim), kvl);
    L.o_proj = r.streamable(p + "self_attn.o_proj.weight", H, heads * c.v_head_dim);
    L.post_attention_layernorm = r.vector(p + "post_attention_layernorm.weight", H);
    L.gate_proj = r.streamable(p + "mlp.gate_proj.weight", I, H);
    L.up_proj = r.streamable(p + "mlp.up_proj.weight", I, H);
    L.down_proj = r.streamable(p + "mlp.down_proj.weight", H, I);
  }
  w.final_norm = r.vector("final_norm.weight", H);
  w.markov_w1 = r.matrix("markov_head.markov_w1.weight", V, c.markov_rank);
  w.markov_w2 = r.matrix("markov_head.markov_w2.weight", V, c.markov_rank);
  if (c.confidence_head) {
    const uint64_t width = H + static_cast<uint64_t>(c.markov_rank);
    w.confidence_w = r.vector("confidence_head.proj.weight", width, {1, width});
    w.confidence_b = r.vector("confidence_head.proj.bias", 1)[0];
  }
  return w;
}

uint64_t dspark_streamed_weight_bytes(const DSparkConfig& c) {
  const uint64_t H = c.hidden_size, heads = c.num_heads, I = c.intermediate_size;
  const uint64_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, rope = c.qk_rope_head_dim;
  const uint64_t per_layer =
      ql * H + heads * c.qk_head_dim() * ql + (kvl + rope) * H + H * heads * c.v_head_dim + 3 * I * H;
  return 2 * (H * H * c.num_taps() + per_layer * c.num_hidden_layers);
}

uint64_t dspark_weight_bytes(const DSparkConfig& c) {
  const uint64_t H = c.hidden_size, heads = c.num_heads, I = c.intermediate_size, V = c.vocab_size;
  const uint64_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, rope = c.qk_rope_head_dim;
  const uint64_t per_layer = 2 * H + ql * H + ql + heads * c.qk_head_dim() * ql + (kvl + rope) * H + kvl +
                             heads * (c.qk_nope_head_dim + c.v_head_dim) * kvl + H * heads * c.v_head_dim + 3 * I * H;
  uint64_t params = H * H * c.num_taps() + H + per_layer * c.num_hidden_layers + H + 2 * V * c.markov_rank;
  if (c.confidence_head) params += H + c.markov_rank + 1;
  return 2 * params;
}

}  // namespace k3
