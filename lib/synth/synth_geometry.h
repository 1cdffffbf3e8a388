// The shape of a synthetic checkpoint: every size the generator writes into
// config.json and uses to lay out tensors. Named presets cover the tiny
// fixture's shape, a multi-GB benchmark shape with K3's graph scaled down,
// and K3's real geometry (model/k3_geometry.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/k3_geometry.h"

namespace k3 {

// The model's sizes (defaults: the tiny fixture's shape) plus how the
// generator spreads the tensors over files.
struct SynthGeometry : ModelGeometry {
  std::string name = "custom";
  // Files.
  int num_shards = 4;  // weight shards (plus one vision shard when vision_shard)
  // true: the vision tensors sit in a trailing shard of their own (the tiny
  // fixture's layout); false: they share the last of num_shards shards, and
  // the cuts are placed so that every shard holds about the same bytes (K3's
  // 96 files).
  bool vision_shard = true;
  // When non-zero, one vision tensor is sized so that the shard files add up
  // to exactly this many bytes (K3: kK3CheckpointBytes over 96 files).
  uint64_t total_shard_bytes = 0;
};

// "tiny-like", "bench", "k3". Returns false for an unknown name.
bool synth_preset(const std::string& name, SynthGeometry* out);
std::vector<std::string> synth_preset_names();

// Throws k3::Error(kUsage) naming the first field that cannot form a valid
// checkpoint (non-positive size, latent/moe_inter not multiples of 32, top-k
// larger than the expert count, vocab not above 256 specials, ...).
void validate_geometry(const SynthGeometry& g);

// config.json and generation_config.json (model/k3_geometry.h).
std::string synth_config_json(const SynthGeometry& g);
std::string synth_generation_config_json(const SynthGeometry& g);

}  // namespace k3
