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
  double cache_gb;  // routed-expert LRU arena
  std::string description;
};

inline const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = {
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
