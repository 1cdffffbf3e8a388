#include "state/continuation.h"

#include <sys/stat.h>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "model/config.h"

namespace k3 {

ModelIdentity ModelIdentity::of(const ModelConfig& config, const Checkpoint& checkpoint, const ShardDigests& known,
                                ShardDigestCache* cache, const ProgressCallback& progress) {
  return {fingerprint_model(checkpoint, known, cache, progress), StateGeometry::from_config(config)};
}

SamplingParams resolve_sampling(const std::optional<SamplingParams>& saved, const SamplingOverrides& f) {
  SamplingParams p = saved.value_or(SamplingParams{});
  if (f.temperature) p.temperature = *f.temperature;
  if (f.top_k) p.top_k = *f.top_k;
  if (f.top_p) p.top_p = *f.top_p;
  if (f.min_p) p.min_p = *f.min_p;
  if (f.seed) p.seed = *f.seed;
  if (f.repetition) p.penalties.repetition = *f.repetition;
  if (f.frequency) p.penalties.frequency = *f.frequency;
  if (f.presence) p.penalties.presence = *f.presence;
  if (f.last_n) p.penalties.last_n = *f.last_n;
  validate_sampling_params(p);
  return p;
}

ConversationState load_conversation(const std::string& path, const ModelIdentity& model) {
  return read_state_file(path, model.fingerprint, model.geometry);
}

void save_conversation(const std::string& path, const ModelIdentity& model, SequenceState&& sequence,
                       std::vector<int32_t> pending, const SamplingParams& sampling, std::vector<float> last_logits) {
  ConversationState s;
  s.model = model.fingerprint;
  s.geometry = model.geometry;
  s.sequence = std::move(sequence);
  s.pending = std::move(pending);
  // Greedy runs without penalties store no sampler section: a continuation
  // is greedy unless its own flags say otherwise.
  if (!sampling.greedy() || sampling.penalties.active()) s.sampling = sampling;
  if (s.pending.empty() && s.sequence.positions > 0) s.last_logits = std::move(last_logits);
  write_state_file(path, s);
}

void save_conversation(const std::string& path, const ModelIdentity& model, const SavePoint& point) {
  static const std::optional<SamplingParams> kGreedy;
  static const std::vector<float> kNoRow;
  const bool row = point.pending.empty() && point.state.positions > 0;
  write_state_file(path, ConversationStateRef{model.fingerprint, model.geometry, point.state, point.pending, kGreedy,
                                              row ? point.row : kNoRow});
}

}  // namespace k3
