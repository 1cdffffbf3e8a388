// The model identity the tools check state files against (k3-forward
// --state-in/--state-out, k3-serve's saved conversations): the fingerprint
// of every weight, with each shard's digest taken from the download
// manifest while it vouches for the file (manifest_digests.h), else from the
// shard digest cache at its default place (state/shard_digest_cache.h), and
// only otherwise read whole (and then remembered in that cache).
#pragma once

#include "state/continuation.h"

namespace k3 {

ModelIdentity state_model_identity(const ModelConfig& config, const Checkpoint& checkpoint);

}  // namespace k3
