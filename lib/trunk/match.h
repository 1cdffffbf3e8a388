// Whether a trunk directory (k3-pack's output: trunk.bin + trunk.json)
// exists and belongs to a given checkpoint.
#pragma once

#include <cstdint>
#include <string>

#include "trunk/layout.h"

namespace k3 {

enum class TrunkMatch {
  kUnknown,  // no checkpoint to compare with (why in `match_reason`)
  kMatches,  // k3-forward --trunk would accept it
  kDiffers,  // packed from another checkpoint (config.json or the shard list differs)
  kStale,    // same model files, but a shard changed on disk since the pack (or a version 1 trunk.json)
  kDamaged,  // trunk.json unreadable, older than version 4, its tensor table not k3-pack's, or trunk.bin not the size
             // it records
};

struct TrunkInfo {
  bool has_bin = false;
  bool has_json = false;
  uint64_t bin_bytes = 0;
  uint64_t recorded_bin_bytes = 0;  // trunk.json's file_size (0 when unread)
  // From trunk.json when it parses: whether k3-pack --compress wrote it, and
  // its decoder-layer bytes decoded and as stored.
  bool compressed = false;
  uint64_t layer_bytes = 0, layer_stored_bytes = 0;
  TrunkMatch match = TrunkMatch::kUnknown;
  std::string match_reason;  // what matched, what differs, or why it could not be told
};

// The checks k3-forward --trunk makes before it reads a byte (the same as
// trunk/plan's open_packed_trunk), told apart so the report can say
// which one failed: trunk.json parses, its recorded source fingerprint
// (config.json hash, every shard's name and size) equals `model`'s, it has
// per-block hashes, trunk.bin has the recorded size, and its tensor table
// equals `expected` (check_trunk_table: the layout k3-pack writes for the
// model). `model` is nullptr when there is no checkpoint to compare with;
// `no_model_reason` then says why. `expected` is nullptr when the model's
// config did not load (the table is then not checked: kUnknown). A table
// error ends in the k3-pack command that rewrites the trunk from `model_dir`.
TrunkInfo inspect_trunk(const std::string& trunk_dir, const std::string& model_dir, const SourceFingerprint* model,
                        const TrunkLayout* expected, const std::string& no_model_reason);

}  // namespace k3
