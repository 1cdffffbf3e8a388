// trunk.json: where every trunk tensor sits in trunk.bin.
//
// trunk.bin holds every tensor the engine reads except the routed experts,
// in sections: the embedding, one section per decoder layer (all of the
// layer's attention, norm, router, shared-expert and latent projections
// contiguous, so one aligned read fetches a layer), then the head (final
// norm, output AttnRes, lm_head). Sections and tensors start at 4096-byte
// offsets for O_DIRECT; all offsets are 64-bit. Each section carries an
// xxh3-64 of its bytes (padding included), and the file records a
// fingerprint of the checkpoint it came from so a trunk is never used with
// another model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/dtype.h"

namespace k3 {

struct TrunkTensor {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<uint64_t> shape;
  uint64_t offset = 0;  // absolute offset in trunk.bin
  uint64_t nbytes = 0;
};

struct TrunkSection {
  std::string name;  // "embedding", "layer.7", "head"
  int layer = -1;    // decoder layer, -1 for embedding/head
  uint64_t offset = 0;  // 4096-aligned
  uint64_t length = 0;  // 4096-aligned (includes padding)
  uint64_t xxh3 = 0;
  std::vector<TrunkTensor> tensors;
};

struct SourceFingerprint {
  uint64_t config_hash = 0;  // xxh3-64 of config.json's bytes
  std::vector<std::pair<std::string, uint64_t>> shards;  // file name, size in bytes
};

struct TrunkLayout {
  int version = 1;
  SourceFingerprint source;
  uint64_t file_size = 0;  // size of trunk.bin
  std::vector<TrunkSection> sections;

  const TrunkSection* layer_section(int layer) const;
  const TrunkSection* section(const std::string& name) const;
  uint64_t layer_bytes() const;  // sum of decoder-layer section lengths
};

std::string trunk_layout_to_json(const TrunkLayout& layout);
// Throws k3::Error(kBadModel) naming `origin` and what is malformed.
TrunkLayout parse_trunk_layout(const std::string& json, const std::string& origin);

class Checkpoint;
// Fingerprint of an opened checkpoint: config.json hash and every shard the
// index names (name and size). Throws kBadModel when config.json is unreadable.
SourceFingerprint fingerprint_checkpoint(const Checkpoint& checkpoint);

// Empty when `trunk` was packed from a model with this fingerprint, else one
// sentence saying what differs (config, a shard missing, a shard's size).
std::string fingerprint_mismatch(const SourceFingerprint& trunk, const SourceFingerprint& model);

// Parses TRUNK_DIR/trunk.json alone (kBadModel when missing or malformed).
TrunkLayout read_trunk_layout(const std::string& trunk_dir);

// Reads TRUNK_DIR/trunk.json and checks it belongs to `checkpoint`
// (fingerprint) and that trunk.bin has the recorded size. Throws
// k3::Error(kBadModel) saying what is wrong and to re-run k3-pack.
TrunkLayout open_trunk_layout(const std::string& trunk_dir, const Checkpoint& checkpoint);

}  // namespace k3
