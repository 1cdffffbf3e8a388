// Memory presets for k3-forward: how many GB of trunk to pin and how many GB
// of routed-expert cache to keep, sized for the real K3. Shared by k3-forward
// (--preset, --list-presets) and k3-doctor (its recommendation).
#pragma once

#include <string>
#include <vector>

namespace k3 {

struct Preset {
  std::string name;
  double trunk_gb;  // trunk layers pinned in RAM (GB = 1e9 bytes)
  double cache_gb;  // routed-expert LRU arena (0: the floor, one layer's top-k)
  std::string description;
  // Row blocks (MB = 1e6 bytes) the streamed trunk passes through; 0: whole
  // layers through buffers the size of the largest one.
  double block_mb = 0;
  // Largest prefill batch the plan is made for (prompts run as consecutive
  // batches of at most this many tokens; the output does not depend on it).
  uint64_t max_batch = 256;
};

// The floor: nothing pinned, the smallest expert arena (one layer's top-k),
// the trunk in 32 MB row blocks and prefill batches of at most 32 tokens. K3
// at 4096 positions plans 1.36 GB, so it runs where 4 GB is all there is.
inline constexpr double kMinPresetBlockMb = 32;
inline constexpr uint64_t kMinPresetBatch = 32;

inline const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = {
      {"min", 0.0, 0.0, "4 GB machines: the memory floor, everything streams in row blocks", kMinPresetBlockMb,
       kMinPresetBatch},
      {"laptop", 3.0, 1.0, "8 GB machines: almost everything streams from NVMe"},
      {"desktop", 16.0, 10.0, "32 GB machines"},
      {"workstation", 60.0, 30.0, "96-128 GB machines"},
      {"server", 110.0, 13.0, "128+ GB: the whole trunk pinned"},
      {"max", 110.0, 109.0, "256 GB: trunk pinned and a large expert cache"},
  };
  return kPresets;
}

inline const Preset* find_preset(const std::string& name) {
  for (const Preset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace k3
