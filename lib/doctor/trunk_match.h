// Whether a trunk directory (k3-pack's output: trunk.bin + trunk.json)
// exists and belongs to a given checkpoint.
#pragma once

#include <cstdint>
#include <string>

namespace k3::doctor {

enum class TrunkMatch { kUnknown, kMatches, kDiffers };

struct TrunkInfo {
  bool has_bin = false;
  bool has_json = false;
  uint64_t bin_bytes = 0;
  TrunkMatch match = TrunkMatch::kUnknown;
  std::string match_reason;  // why it differs, or why it could not be told
};

TrunkInfo inspect_trunk(const std::string& trunk_dir, const std::string& model_dir);

// Compares the source fingerprint k3-pack recorded in trunk.json (config
// hash, every shard's name and size) with the checkpoint in `model_dir`.
// kUnknown (with the reason) when either cannot be read.
TrunkMatch trunk_matches_checkpoint(const std::string& trunk_dir, const std::string& model_dir,
                                    std::string* reason);

}  // namespace k3::doctor
