#include "cli/state_identity.h"

#include "checkpoint/checkpoint.h"
#include "cli/manifest_digests.h"
#include "state/shard_digest_cache.h"

namespace k3 {

ModelIdentity state_model_identity(const ModelConfig& config, const Checkpoint& checkpoint) {
  ShardDigestCache cache(default_shard_digest_cache_path());
  return ModelIdentity::of(config, checkpoint, manifest_shard_digests(checkpoint.dir()), &cache);
}

}  // namespace k3
