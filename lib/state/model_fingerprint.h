// Which model a state file belongs to.
//
// A saved state is only meaningful with the exact weights that produced it,
// so the fingerprint covers every byte of them: XXH3-64 hashes of the bytes
// of config.json and of model.safetensors.index.json (0 when the checkpoint
// has none), and a weights hash over every shard the index names: its file
// name, size and the XXH3-128 of its whole content (header and tensors).
// Any weight that changes changes it; a copy of the checkpoint elsewhere has
// the same one. A trunk file is a copy of checkpoint bytes, so it does not
// enter the fingerprint: a state saved with or without --trunk, at any memory
// budget, continues on the same checkpoint.
//
// Reading every shard costs a pass over the checkpoint (at K3 size, minutes
// from NVMe). A digest recorded earlier may stand in for that read: the
// download manifest's XXH3-128 of a shard, which k3-fetch-verify computed
// while the file arrived and vouches for while the file's size and
// modification time are those it recorded (the rule `download` uses to skip
// finished files). The caller supplies such digests (ShardDigests). A shard
// no manifest vouches for is looked up in the shard digest cache
// (shard_digest_cache.h), which remembers the digest of every shard read,
// keyed by the file's identity, so an unchanged checkpoint is read once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/progress_callback.h"

namespace k3 {

class Checkpoint;

struct ModelFingerprint {
  uint64_t config_hash = 0;
  uint64_t index_hash = 0;
  uint64_t weights_hash = 0;  // every shard's name, size and content

  bool operator==(const ModelFingerprint&) const = default;
  std::string describe() const;  // "config 1a2b.., index 3c4d.., weights 5e6f.."
};

// A known XXH3-128 (32 lowercase hex digits, canonical form) of the whole
// file at `path`, or "" when none is known and the file must be read.
using ShardDigests = std::function<std::string(const std::string& path)>;

// The XXH3-128 of the whole file at `path` in that form, read in large
// pieces. Throws k3::Error(kIo) naming the file.
std::string shard_content_digest(const std::string& path);

class ShardDigestCache;

// Reads MODEL_DIR/config.json, the index and every shard (or takes a shard's
// digest from `known`, else from `cache`). The digests of shards read are
// put in `cache` (when the file's identity did not change while it was
// read) and the cache is saved; a cache that cannot be saved only costs the
// next run a read. `progress`, when given, hears kFingerprintStep with the
// bytes read of those to read, a few times a second, while shards are read.
// Throws k3::Error(kBadModel / kIo) naming the file.
inline constexpr const char* kFingerprintStep = "fingerprinting the checkpoint";
ModelFingerprint fingerprint_model(const Checkpoint& checkpoint, const ShardDigests& known = nullptr,
                                   ShardDigestCache* cache = nullptr, const ProgressCallback& progress = nullptr);

// Bytes shard_content_digest has read in this process: what a fingerprint
// cost, for the tests that show a cached digest saves the read.
uint64_t shard_digest_bytes_read();

}  // namespace k3
