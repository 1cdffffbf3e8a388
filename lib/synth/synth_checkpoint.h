// Layer synth (leaf): synthetic checkpoints for tests and benchmarks.
//
// Writes a synthetic checkpoint in the exact layout of the real one: wrapper
// config.json, generation_config.json, tokenizer files, N weight shards plus
// a vision shard, and model.safetensors.index.json with metadata.total_size.
//
// Values are deterministic from the seed and each tensor's name (so they do
// not depend on the shard layout), drawn from a cheap PRNG and scaled so
// activations stay in a sane range: projections ~1/sqrt(fan_in), output
// projections smaller, norms ~1, A_log real for the first num_heads entries
// and zero-padded to head_dim, MXFP4 scale bytes near 2^-7..2^-3 so every
// decoded weight is finite.
//
// Sparse mode leaves the large matrices (every BF16 projection except the
// embedding and the routers, and all routed experts) as holes: the shard is
// extended to its full size but those bytes are never written, so a
// real-geometry checkpoint costs a few GB of disk while every norm, router,
// bias and A_log still holds real values.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/tensor_manifest.h"
#include "synth/synth_geometry.h"

namespace k3 {

enum class SynthInit : uint8_t {
  kUniform,   // center + noise of standard deviation `scale` (uniform or normal: SynthWeights)
  kALog,      // first `heads` entries in [0.5, 2.7], the rest zero
  kMxPacked,  // random MXFP4 codes
  kMxScale,   // E8M0 bytes `center` or `center + 1`
};

struct SynthTensor {
  ExpectedTensor t;  // name (with prefix), dtype, shape, group, layer, expert
  SynthInit init = SynthInit::kUniform;
  float center = 0, scale = 0;
  int heads = 0;  // kALog
  bool hole_when_sparse = false;
  bool vision = false;       // vision_tower.* / mm_projector.*: not part of the text model
  bool fills_total = false;  // sized by synth_layout to meet total_shard_bytes
  uint64_t nbytes() const;
};

// Every tensor of the checkpoint: the text model in manifest order
// (embedding, layers with trunk tensors then experts, head), then the vision
// tensors that a text engine ignores.
std::vector<SynthTensor> synth_tensors(const SynthGeometry& g);

// One shard file as it will be written.
struct SynthShard {
  std::string name;             // model-0000k-of-0000n.safetensors
  std::vector<size_t> tensors;  // indices into SynthLayout::tensors, in file order
  std::string header;           // 8-byte length + JSON padded to a multiple of 8
  uint64_t file_size = 0;
};

struct SynthLayout {
  std::vector<SynthTensor> tensors;
  std::vector<SynthShard> shards;
  uint64_t apparent_bytes = 0;  // sum of shard file sizes
  uint64_t total_size = 0;      // tensor bytes (metadata.total_size)
};

// Every tensor and every shard file with its header, as
// write_synthetic_checkpoint lays them out; the fill tensor is sized when
// the geometry sets total_shard_bytes (kUsage when that total is too small
// to hold the text model). Cheap: nothing is written.
SynthLayout synth_layout(const SynthGeometry& g);

// How the projection and norm values (SynthInit::kUniform tensors) are drawn,
// both with the tensor's center and standard deviation `scale`.
enum class SynthWeights : uint8_t {
  kUniform,  // uniform noise (the default; existing checkpoints keep their bytes)
  kNormal,   // Gaussian noise: the bell shape of trained weights, whose BF16
             // exponents repeat the way compression of a real trunk sees them
};

struct SynthOptions {
  uint64_t seed = 1;
  SynthWeights weights = SynthWeights::kUniform;
  bool sparse = false;
  // Every tensor is a hole: only config, tokenizer, index and shard headers
  // hold data. Enough for anything that reads only the config and headers
  // (memory plans, index load at full scale) at the cost of a few seconds.
  bool headers_only = false;
  std::string tokenizer_from;  // copy tiktoken.model + tokenizer_config.json from here
  // Called after each written chunk with (bytes done, bytes total).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct SynthResult {
  uint64_t apparent_bytes = 0;  // sum of shard file sizes
  uint64_t written_bytes = 0;   // tensor bytes actually written (holes excluded)
  uint64_t total_size = 0;      // metadata.total_size: text + vision tensor bytes
  size_t tensor_count = 0;
  size_t shard_count = 0;
};

// Creates `dir` if needed and writes the checkpoint. Each shard is written
// under a temporary name and renamed; the index is written last, so an
// interrupted run never leaves a directory that looks like a complete model.
// Throws k3::Error (kIo, kUsage).
SynthResult write_synthetic_checkpoint(const std::string& dir, const SynthGeometry& g, const SynthOptions& opt);

}  // namespace k3
