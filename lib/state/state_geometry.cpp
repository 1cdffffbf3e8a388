#include "state/state_geometry.h"

#include "model/config.h"
#include "state/state_layout.h"

namespace k3 {

StateGeometry StateGeometry::from_config(const ModelConfig& c) {
  StateGeometry g;
  g.vocab_size = static_cast<uint32_t>(c.vocab_size);
  g.kda_heads = static_cast<uint32_t>(c.kda_num_heads);
  g.kda_head_dim = static_cast<uint32_t>(c.kda_head_dim);
  g.conv_kernel = static_cast<uint32_t>(c.kda_conv_kernel);
  g.kv_lora_rank = static_cast<uint32_t>(c.kv_lora_rank);
  g.qk_rope_head_dim = static_cast<uint32_t>(c.qk_rope_head_dim);
  for (LayerAttention a : c.layer_attention) g.layer_is_mla.push_back(a == LayerAttention::kMLA ? 1 : 0);
  return g;
}

uint32_t StateGeometry::num_mla_layers() const {
  uint32_t n = 0;
  for (uint8_t m : layer_is_mla) n += m ? 1 : 0;
  return n;
}

uint32_t StateGeometry::num_kda_layers() const { return num_layers() - num_mla_layers(); }

uint64_t StateGeometry::kda_state_floats() const { return uint64_t{kda_heads} * kda_head_dim * kda_head_dim; }

uint64_t StateGeometry::kda_conv_floats() const {
  return conv_kernel == 0 ? 0 : uint64_t{conv_kernel - 1} * kda_heads * kda_head_dim;
}

uint64_t StateGeometry::mla_floats_per_position() const { return uint64_t{kv_lora_rank} + qk_rope_head_dim; }

std::string StateGeometry::describe() const {
  return std::to_string(num_layers()) + " layers (" + std::to_string(num_kda_layers()) +
         " KDA: " + std::to_string(kda_heads) + " heads x " + std::to_string(kda_head_dim) + ", conv " +
         std::to_string(conv_kernel) + "; " + std::to_string(num_mla_layers()) + " MLA: latent " +
         std::to_string(kv_lora_rank) + "+" + std::to_string(qk_rope_head_dim) + "), vocab " +
         std::to_string(vocab_size);
}

uint64_t state_file_bytes(const StateGeometry& g, const StateFileContents& c) {
  using namespace state_layout;
  uint64_t n = kHeaderBytes;
  n += section_bytes(kModelPayloadBytes);
  n += section_bytes(geometry_payload_bytes(g));
  n += section_bytes(tokens_payload_bytes(c.positions));
  n += section_bytes(tokens_payload_bytes(c.pending_ids));
  if (c.has_sampling) n += section_bytes(kSamplingPayloadBytes);
  if (c.has_penalties) n += section_bytes(kPenaltiesPayloadBytes);
  if (c.has_logits) n += section_bytes(uint64_t{4} * g.vocab_size);
  n += g.num_kda_layers() * section_bytes(kda_payload_bytes(g));
  n += g.num_mla_layers() * section_bytes(mla_payload_bytes(g, c.positions));
  return n + kChecksumBytes;
}

}  // namespace k3
