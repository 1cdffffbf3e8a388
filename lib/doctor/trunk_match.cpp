#include "doctor/trunk_match.h"

#include <sys/stat.h>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "pack/trunk_layout.h"

namespace k3::doctor {

TrunkMatch trunk_matches_checkpoint(const std::string& trunk_dir, const std::string& model_dir,
                                    std::string* reason) {
  if (model_dir.empty()) {
    *reason = "no --model given to compare it with";
    return TrunkMatch::kUnknown;
  }
  try {
    const std::string json_path = path_join(trunk_dir, "trunk.json");
    TrunkLayout layout = parse_trunk_layout(read_text_file(json_path), json_path);
    SourceFingerprint model = fingerprint_checkpoint(Checkpoint::open(model_dir));
    std::string diff = fingerprint_mismatch(layout.source, model);
    if (!diff.empty()) {
      *reason = diff;
      return TrunkMatch::kDiffers;
    }
    *reason = "its source fingerprint matches the checkpoint";
    return TrunkMatch::kMatches;
  } catch (const Error& e) {
    *reason = std::string("could not compare: ") + e.what();
    return TrunkMatch::kUnknown;
  }
}

TrunkInfo inspect_trunk(const std::string& trunk_dir, const std::string& model_dir) {
  TrunkInfo t;
  struct stat st;
  const std::string bin = path_join(trunk_dir, "trunk.bin");
  if (::stat(bin.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    t.has_bin = true;
    t.bin_bytes = static_cast<uint64_t>(st.st_size);
  }
  t.has_json = file_exists(path_join(trunk_dir, "trunk.json"));
  if (t.has_bin && t.has_json) t.match = trunk_matches_checkpoint(trunk_dir, model_dir, &t.match_reason);
  return t;
}

}  // namespace k3::doctor
