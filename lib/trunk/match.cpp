#include "trunk/match.h"

#include <sys/stat.h>

#include "common/error.h"
#include "common/file.h"
#include "trunk/pack_command.h"
#include "trunk/table_check.h"

namespace k3 {

TrunkInfo inspect_trunk(const std::string& trunk_dir, const std::string& model_dir, const SourceFingerprint* model,
                        const TrunkLayout* expected, const std::string& no_model_reason) {
  TrunkInfo t;
  struct stat st;
  const std::string bin = path_join(trunk_dir, "trunk.bin");
  const std::string json = path_join(trunk_dir, "trunk.json");
  if (::stat(bin.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    t.has_bin = true;
    t.bin_bytes = static_cast<uint64_t>(st.st_size);
  }
  t.has_json = file_exists(json);
  if (!t.has_bin || !t.has_json) return t;

  TrunkLayout layout;
  try {
    layout = parse_trunk_layout(read_text_file(json), json);
  } catch (const Error& e) {
    t.match = TrunkMatch::kDamaged;
    t.match_reason = e.what();
    return t;
  }
  t.recorded_bin_bytes = layout.file_size;
  t.compressed = layout.compressed();
  t.layer_bytes = layout.layer_bytes();
  t.layer_stored_bytes = layout.layer_stored_bytes();
  // A trunk from another model is the more useful thing to say, so the
  // fingerprint is compared before the size.
  if (model) {
    const FingerprintComparison cmp = compare_fingerprint(layout.source, *model);
    if (cmp.diff != FingerprintDiff::kSame) {
      t.match = cmp.diff == FingerprintDiff::kOtherModel ? TrunkMatch::kDiffers : TrunkMatch::kStale;
      t.match_reason = cmp.reason;
      return t;
    }
  }
  if (layout.version < kTrunkBlockHashesVersion) {
    t.match = TrunkMatch::kDamaged;
    t.match_reason = "trunk.json is format version " + std::to_string(layout.version) +
                     ", without per-block hashes (upgrade it in place with " + spelled(kRefreshTrunk) +
                     " TRUNK_DIR MODEL_DIR)";
    return t;
  }
  if (t.bin_bytes != layout.file_size) {
    t.match = TrunkMatch::kDamaged;
    t.match_reason = "trunk.bin is " + std::to_string(t.bin_bytes) + " bytes but trunk.json says " +
                     std::to_string(layout.file_size) + " (truncated or replaced)";
    return t;
  }
  if (!model) {
    t.match = TrunkMatch::kUnknown;
    t.match_reason = no_model_reason;
    return t;
  }
  if (!expected) {
    t.match = TrunkMatch::kUnknown;
    t.match_reason = "its tensor table was not checked: the model's config.json did not load";
    return t;
  }
  // The check k3-forward makes when it opens the trunk (open_packed_trunk):
  // a table that is not the one k3-pack writes would read one tensor as
  // another, so the trunk is damaged however well its fingerprint matches.
  try {
    check_trunk_table(layout, *expected, json,
                      "re-run " + repack_command(layout.compressed()) + " " + model_dir + " " + trunk_dir);
  } catch (const Error& e) {
    t.match = TrunkMatch::kDamaged;
    t.match_reason = e.what();
    return t;
  }
  t.match = TrunkMatch::kMatches;
  t.match_reason =
      "its tensor table is the one " + spelled(kPackTrunk) +
      " writes for this model, its source fingerprint (config.json hash, " + std::to_string(model->shards.size()) +
      " shards' names, sizes, header digests, modification times and inodes) matches the checkpoint and trunk.bin has "
      "the recorded size";
  return t;
}

}  // namespace k3
