// The shard digests a download manifest vouches for, for the model
// fingerprint of state files (state/model_fingerprint.h): k3-fetch-verify
// records each finished file's XXH3-128, size and modification time in
// MODEL_DIR/.k3-manifest.json. A shard whose size and modification time are
// still the recorded ones takes the recorded digest (the rule `download`
// uses to skip finished files) instead of being read whole; any other shard,
// and every shard of a directory without a readable manifest, is read.
#pragma once

#include <string>

#include "state/model_fingerprint.h"

namespace k3 {

ShardDigests manifest_shard_digests(const std::string& model_dir);

}  // namespace k3
