// Which model a state file belongs to.
//
// A saved state is only meaningful with the exact weights that produced it.
// Hashing 1.5 TB is out of the question, so the fingerprint combines three
// cheap XXH3-64 hashes: the bytes of config.json, the bytes of
// model.safetensors.index.json (0 when the checkpoint has none), and a probe
// of weight bytes that any fine-tune changes: the final norm followed by the
// first 64 KiB of lm_head. A trunk file is a copy of checkpoint bytes, so it
// does not enter the fingerprint: a state saved with or without --trunk, at
// any memory budget, continues on the same checkpoint.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

class Checkpoint;
struct ModelConfig;

struct ModelFingerprint {
  uint64_t config_hash = 0;
  uint64_t index_hash = 0;
  uint64_t weights_probe = 0;

  bool operator==(const ModelFingerprint&) const = default;
  std::string describe() const;  // "config 1a2b.., index 3c4d.., weights 5e6f.."
};

// Reads MODEL_DIR/config.json, the index and the probe tensors.
// Throws k3::Error(kBadModel / kIo) naming the file.
ModelFingerprint fingerprint_model(const ModelConfig& config, const Checkpoint& checkpoint);

}  // namespace k3
