// The model identity the tools check state files against (k3-forward
// --state-in/--state-out, k3-serve's spilled conversations): the fingerprint
// of every weight, with each shard's digest taken from the download
// manifest while it vouches for the file (manifest_digests.h), else from the
// shard digest cache at its default place (state/shard_digest_cache.h), and
// only otherwise read whole (and then remembered in that cache), saying how
// far that read is through `progress`.
#pragma once

#include "common/progress_callback.h"
#include "state/continuation.h"

namespace k3 {

ModelIdentity state_model_identity(const ModelConfig& config, const Checkpoint& checkpoint,
                                   const ProgressCallback& progress = nullptr);

// For a process that writes and reads no state file (k3-serve without
// --cache-dir keeps conversations in RAM only): the geometry alone, so that
// starting it never reads the checkpoint's weights.
ModelIdentity in_memory_model_identity(const ModelConfig& config);

}  // namespace k3
