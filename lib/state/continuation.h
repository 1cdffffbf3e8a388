// What a k3-forward run starts from and what it leaves behind when it uses
// state files (--state-in / --state-out), and how the sampler settings of a
// saved conversation combine with the flags of the run that continues it.
//
// A run evaluates `pending` ids of the state (if any) followed by its new
// input, then generates. The id generated last is emitted but not evaluated
// (evaluating it would cost a whole forward step that only a continuation
// needs), so it is saved as pending. A run that generates nothing saves the
// logits of its last position instead, so a continuation with no new input
// can still generate. Either way a continued run computes exactly what one
// run over the whole conversation computes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "state/save_point.h"
#include "state/state_file.h"

namespace k3 {

class Checkpoint;
class ShardDigestCache;
struct ModelConfig;

// Which model a state file must belong to.
struct ModelIdentity {
  ModelFingerprint fingerprint;
  StateGeometry geometry;
  // `known`: shard digests recorded earlier (model_fingerprint.h), then
  // `cache` (shard_digest_cache.h); the other shards are read whole.
  // `progress`: fingerprint_model's, while shards are read.
  static ModelIdentity of(const ModelConfig& config, const Checkpoint& checkpoint, const ShardDigests& known = nullptr,
                          ShardDigestCache* cache = nullptr, const ProgressCallback& progress = nullptr);
};

// Sampler flags given on the command line; unset ones keep the saved value
// (or the default when the state has none).
struct SamplingOverrides {
  std::optional<double> temperature, top_p, min_p;
  std::optional<int32_t> top_k;
  std::optional<uint64_t> seed;
  std::optional<double> repetition, frequency, presence;  // the penalties, kept in state files too
  std::optional<int32_t> last_n;
};
SamplingParams resolve_sampling(const std::optional<SamplingParams>& saved, const SamplingOverrides& flags);

// Reads `path` for this model (refusals: state_file.h). The sequence comes
// back sized for the engine.
ConversationState load_conversation(const std::string& path, const ModelIdentity& model);

// Writes `path` atomically. `sequence` is moved from: a real K3 state is
// hundreds of MB and is not needed after the run. `last_logits` is kept only
// when there is nothing pending.
void save_conversation(const std::string& path, const ModelIdentity& model, SequenceState&& sequence,
                       std::vector<int32_t> pending, const SamplingParams& sampling, std::vector<float> last_logits);

// Writes `path` atomically from a save point that stays as it is (no copy:
// a kept state that requests continue from while it is written). No sampler
// section; the row is kept only when nothing is pending.
void save_conversation(const std::string& path, const ModelIdentity& model, const SavePoint& point);

}  // namespace k3
