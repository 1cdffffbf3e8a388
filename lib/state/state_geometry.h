// The shape of a sequence state, from the model config, and the size of a
// state file for a given context length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

struct ModelConfig;

struct StateGeometry {
  uint32_t vocab_size = 0;
  uint32_t kda_heads = 0, kda_head_dim = 0, conv_kernel = 0;  // KDA layers
  uint32_t kv_lora_rank = 0, qk_rope_head_dim = 0;            // MLA layers
  std::vector<uint8_t> layer_is_mla;                          // per decoder layer: 0 KDA, 1 MLA

  static StateGeometry from_config(const ModelConfig& config);

  uint32_t num_layers() const { return static_cast<uint32_t>(layer_is_mla.size()); }
  uint32_t num_kda_layers() const;
  uint32_t num_mla_layers() const;
  uint64_t kda_state_floats() const;         // H * D * D per KDA layer
  uint64_t kda_conv_floats() const;          // (K-1) * H * D for each of q, k, v
  uint64_t mla_floats_per_position() const;  // kv_lora_rank + qk_rope_head_dim

  // "13 layers (9 KDA: 6 heads x 16, conv 4; 4 MLA: latent 32+8), vocab 8448"
  std::string describe() const;

  bool operator==(const StateGeometry&) const = default;
};

// What a state file holds besides the per-layer state.
struct StateFileContents {
  uint64_t positions = 0;      // evaluated tokens (history and MLA cache length)
  uint64_t pending_ids = 0;    // ids emitted but not evaluated yet
  bool has_sampling = false;   // the sampler settings to continue with
  bool has_logits = false;     // the logits of the last evaluated position
  bool has_penalties = false;  // repetition/frequency/presence penalties to continue with
};

// Exact size in bytes of the state file write_state_file() produces
// (docs/state-format.md gives the layout this adds up).
uint64_t state_file_bytes(const StateGeometry& geometry, const StateFileContents& contents);

}  // namespace k3
