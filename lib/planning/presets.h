// Memory presets for k3-forward: how many GB of trunk to pin and how many GB
// of routed-expert cache to keep, sized for the real K3 and named for the
// machine each one fits. Shared by k3-forward (--preset, --list-presets,
// --preset auto) and k3-doctor (its recommendation).
//
// Each preset is sized so that its forecast peak RSS at K3's geometry
// (--list-presets: 4096 positions, its largest prefill batch, a packed trunk)
// stays under the 90% rule (plan_fits) of what a typical machine of its class
// has available with the OS and a desktop session running: a "32 GB"
// machine shows about 31 GB of MemTotal and 26-28 GB of MemAvailable, so the
// desktop preset must forecast at most 90% of 26 GB. preset_fit_test checks
// every preset against its class from the memory plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

// A typical machine of a memory class (GB = 1e9 bytes, as the plan prints).
struct MachineClass {
  const char* label;    // "32 GB"
  double mem_total_gb;  // what /proc/meminfo reports as MemTotal (firmware and kernel take the rest)
  double available_gb;  // MemAvailable with the OS and a session running: the low end of the usual range
  uint64_t available_bytes() const { return static_cast<uint64_t>(available_gb * 1e9); }
};

struct Preset {
  std::string name;
  double trunk_gb;  // trunk layers pinned in RAM (GB = 1e9 bytes)
  double cache_gb;  // routed-expert cache arena (0: the floor, one layer's top-k)
  std::string description;
  MachineClass machine;  // the machine it is sized for
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
// laptop streams in row blocks too: two whole-layer buffers (2 x 1.27 GB at
// K3's geometry) would leave an 8 GB machine almost nothing to pin.
inline constexpr double kLaptopPresetBlockMb = 64;

// `--preset auto`: the largest preset that fits this machine now
// (planning/preset_plan.h choose_preset).
inline constexpr const char* kAutoPreset = "auto";

// In ascending order of memory (choose_preset relies on it).
inline const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = {
      {"min",
       0.0,
       0.0,
       "the memory floor: everything streams in 32 MB row blocks",
       {"4 GB", 3.8, 2.5},
       kMinPresetBlockMb,
       kMinPresetBatch},
      {"laptop",
       1.3,
       1.0,
       "one layer pinned, the rest streams in 64 MB row blocks",
       {"8 GB", 7.7, 5.0},
       kLaptopPresetBlockMb},
      {"desktop", 16.0, 2.0, "a seventh of the trunk pinned", {"32 GB", 31.0, 26.0}},
      {"workstation", 40.0, 4.0, "a third of the trunk pinned", {"64 GB", 62.0, 56.0}},
      {"server", 92.0, 4.0, "four fifths of the trunk pinned", {"128 GB", 125.0, 118.0}},
      {"max", 110.0, 95.0, "the whole trunk pinned and a 95 GB expert cache", {"256 GB", 251.0, 240.0}},
  };
  return kPresets;
}

inline const Preset* find_preset(const std::string& name) {
  for (const Preset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace k3
