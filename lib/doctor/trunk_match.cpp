#include "doctor/trunk_match.h"

#include <sys/stat.h>

#include "common/file.h"

namespace k3::doctor {

TrunkMatch trunk_matches_checkpoint(const std::string& trunk_dir, const std::string& model_dir,
                                    std::string* reason) {
  if (model_dir.empty()) {
    *reason = "no --model given to compare with";
    return TrunkMatch::kUnknown;
  }
  *reason = "trunk.json's source fingerprint is not compared yet";
  return TrunkMatch::kUnknown;
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
