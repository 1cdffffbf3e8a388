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

// Compares trunk.json's record of the checkpoint it was packed from with
// `model_dir`. k3-pack's trunk.json will record a source fingerprint; until
// its format is fixed this answers kUnknown with the reason.
TrunkMatch trunk_matches_checkpoint(const std::string& trunk_dir, const std::string& model_dir,
                                    std::string* reason);

}  // namespace k3::doctor
