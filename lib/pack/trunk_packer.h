// k3-pack's work: gather every trunk tensor from the shards into trunk.bin
// (layout in pack/trunk_layout.h), verify a packed trunk, and open one for
// the streaming engine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/tensor_manifest.h"
#include "pack/trunk_layout.h"

namespace k3 {

class Checkpoint;

// Lays out every non-routed-expert tensor of `manifest` after checking that
// the checkpoint holds each one with the expected dtype and shape (kBadModel
// naming the tensor, the expected and the found). Hashes are not filled in.
TrunkLayout plan_trunk(const std::vector<ExpectedTensor>& manifest, const Checkpoint& checkpoint);

// The same layout from the manifest's dtypes and shapes alone, for plans made
// without the weights (no fingerprint, no hashes).
TrunkLayout layout_trunk(const std::vector<ExpectedTensor>& manifest);

struct PackOptions {
  // (bytes done, bytes total), called often.
  std::function<void(uint64_t, uint64_t)> progress;
  // Leave 4096-byte blocks that are entirely zero as holes (as
  // `cp --sparse=always`); the bytes read back are identical either way.
  bool sparse = true;
  // Write a version 2 trunk: decoder-layer and head sections stored as
  // compressed blocks (trunk_codec.h); the embedding, read a row at a time,
  // stays raw.
  bool compress = false;
};

// Bytes of disk the packed trunk will occupy: its size when written densely;
// when sparse, at most the bytes the source shards have allocated (a zero
// source block can only become a hole), so a sparse checkpoint is not refused
// for its trunk's apparent size.
uint64_t trunk_space_needed(const TrunkLayout& layout, const Checkpoint& checkpoint, const PackOptions& options);

// Writes TRUNK_DIR/trunk.bin and trunk.json. Refuses with kResource when the
// file system lacks the space. trunk.bin is written under a temporary name
// and renamed, and trunk.json (which makes the trunk usable) is written
// last, so an interrupted run never leaves a trunk that looks valid.
TrunkLayout pack_trunk(const Checkpoint& checkpoint, const std::vector<ExpectedTensor>& manifest,
                       const std::string& trunk_dir, const PackOptions& options);

struct TrunkCheck {
  std::vector<std::string> problems;  // one line per section that differs
  uint64_t bytes_checked = 0;         // decoded bytes, trunk and checkpoint sides each
};
// Re-hashes every section of trunk.bin (a compressed one decoded block by
// block, each block checked against its own hash) and of the same tensors
// read from the checkpoint, and compares both with trunk.json.
TrunkCheck check_trunk(const std::string& trunk_dir, const Checkpoint& checkpoint,
                       const std::function<void(uint64_t, uint64_t)>& progress);

// Parses TRUNK_DIR/trunk.json alone (kBadModel when missing or malformed).
TrunkLayout read_trunk_layout(const std::string& trunk_dir);

// Reads TRUNK_DIR/trunk.json and checks it belongs to `checkpoint`
// (fingerprint) and that trunk.bin has the recorded size. Throws
// k3::Error(kBadModel) saying what is wrong and to re-run k3-pack.
TrunkLayout open_trunk_layout(const std::string& trunk_dir, const Checkpoint& checkpoint);

}  // namespace k3
