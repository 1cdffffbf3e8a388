// Generated checkpoints the streaming tests share: a small model with K3's
// graph (KDA and MLA layers, latent MoE) whose matrices span several row
// blocks, and the config k3-synth writes for K3's real geometry.
#pragma once

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "lib/test_util.h"
#include "model/config.h"
#include "synth/synth_checkpoint.h"
#include "synth/synth_geometry.h"

namespace k3::test {

// Widths large enough that the smallest row blocks split every streamed
// matrix (down_proj rows are 512 BF16 columns = 1 KB), small enough to
// generate in well under a second.
inline SynthGeometry small_streaming_geometry(int layers, int experts) {
  SynthGeometry g;
  g.vocab_size = 2304;
  g.hidden_size = 256;
  g.intermediate_size = 512;
  g.num_hidden_layers = layers;
  g.full_attn_layers = SynthGeometry::k3_full_attn_layers(layers);
  g.kda_num_heads = 4;
  g.kda_head_dim = 64;
  g.mla_num_heads = 4;
  g.q_lora_rank = 64;
  g.kv_lora_rank = 32;
  g.num_experts = experts;
  g.num_experts_per_token = 4;
  g.moe_intermediate_size = 128;
  g.routed_expert_hidden_size = 128;
  g.num_shards = 3;
  return g;
}

// K3's real geometry: the config k3-synth writes for its k3 preset (SPEC
// section 1, the wrapper config.json), read back through the model's
// config reader; `scratch` names the temporary directory.
inline ModelConfig k3_synth_config(const std::string& scratch) {
  SynthGeometry g;
  EXPECT_TRUE(synth_preset("k3", &g));
  const std::filesystem::path dir = fresh_dir(scratch);
  std::ofstream(dir / "config.json") << synth_config_json(g);
  const ModelConfig c = load_model_config(dir.string());
  std::filesystem::remove_all(dir);
  return c;
}

}  // namespace k3::test
