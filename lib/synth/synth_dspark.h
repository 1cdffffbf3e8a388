// A synthetic DSpark draft checkpoint in the real layout (config.json + one
// model.safetensors with every tensor name, dtype and shape the draft
// loader checks, K3's embedding copy included), for timing a draft pass at
// true geometry without the 7.1 GB download (docs/synth.md).
//
// Norm vectors are 1.0; the other tensors are deterministic uniform BF16
// noise from the seed, or holes (sparse: zeros on read, no disk written).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace k3 {

struct SynthDSparkOptions {
  uint64_t seed = 1;
  bool sparse = false;  // every matrix a hole; the norms and the confidence head are written
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct SynthDSparkResult {
  size_t tensor_count = 0;
  uint64_t file_bytes = 0;     // model.safetensors' size
  uint64_t written_bytes = 0;  // tensor bytes written (holes excluded)
};

// Writes DIR/config.json (`config_json`, a DSpark config) and
// DIR/model.safetensors laid out for it. Throws Error(kBadModel) when the
// config is not a DSpark config.
SynthDSparkResult write_synthetic_dspark(const std::string& dir, const std::string& config_json,
                                         const SynthDSparkOptions& options);

// k3-synth --dspark: Kimi-K3-DSpark's geometry into DIR, with a progress
// meter and a summary line on stderr (`dry_run`: the sizes only). Returns 0.
int synth_dspark_main(const std::string& dir, uint64_t seed, bool sparse, bool dry_run);

}  // namespace k3
