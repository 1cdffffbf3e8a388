#include "cli/state_identity.h"

#include "checkpoint/checkpoint.h"
#include "cli/manifest_digests.h"
#include "state/shard_digest_cache.h"
#include "state/state_geometry.h"

namespace k3 {

ModelIdentity state_model_identity(const ModelConfig& config, const Checkpoint& checkpoint,
                                   const ProgressCallback& progress) {
  ShardDigestCache cache(default_shard_digest_cache_path());
  return ModelIdentity::of(config, checkpoint, manifest_shard_digests(checkpoint.dir()), &cache, progress);
}

ModelIdentity in_memory_model_identity(const ModelConfig& config) {
  return {ModelFingerprint{}, StateGeometry::from_config(config)};
}

}  // namespace k3
