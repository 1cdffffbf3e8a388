// The trunk writer, k3-pack's core.
//
// k3-pack's work: gather every trunk tensor from the shards into trunk.bin
// (format in trunk/layout.h, placement in trunk/plan.h)
// and verify a packed trunk.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/tensor_manifest.h"
#include "trunk/layout.h"
#include "trunk/plan.h"

namespace k3 {

class Checkpoint;

struct PackOptions {
  // (bytes done, bytes total), called often.
  std::function<void(uint64_t, uint64_t)> progress;
  // Leave 4096-byte blocks that are entirely zero as holes (as
  // `cp --sparse=always`); the bytes read back are identical either way.
  bool sparse = true;
  // Store the decoder-layer and head sections as
  // compressed blocks (trunk/codec.h); the embedding, read a row at a time,
  // stays raw.
  bool compress = false;
  // Called when stale temporaries of an earlier, killed run were removed
  // (the output they were for, how many, the disk bytes they held).
  std::function<void(const std::string&, uint64_t, uint64_t)> on_stale_removed;
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
  // Set when the only difference from the checkpoint is shards changed on
  // disk (FingerprintDiff::kShardsChanged): the reason, for a --refresh hint.
  std::string shards_changed;
  bool refreshed = false;   // refresh_trunk wrote a new trunk.json
  int upgraded_from = 0;    // refresh_trunk: the format version it upgraded (0: none)
  uint64_t bytes_read = 0;  // refresh_trunk: trunk.bin bytes read to hash the blocks of an upgraded trunk
};
// Checks trunk.json's tensor table against the layout k3-pack writes for
// `manifest` (check_trunk_table, what k3-forward checks when it opens the
// trunk): a table that differs is the one problem reported, naming
// trunk.json and the entry, and no byte is read (a table that is not
// k3-pack's says nothing trustworthy about where bytes are). Else re-hashes
// every section of trunk.bin (a compressed one decoded block by block, each
// block checked against its own hash) and of the same tensors read from the
// checkpoint, and compares both with trunk.json.
TrunkCheck check_trunk(const std::string& trunk_dir, const Checkpoint& checkpoint,
                       const std::vector<ExpectedTensor>& manifest,
                       const std::function<void(uint64_t, uint64_t)>& progress);

// The fast re-check after shards changed on disk (touched, copied, restored,
// or rewritten with the same trunk tensors): re-hashes, from the checkpoint,
// only the sections holding a tensor of a changed shard (every section for a
// version 1 trunk.json) and compares them with trunk.json's hashes. When all
// match, trunk.json is rewritten (the current version) with the shards as they are now;
// trunk.bin itself is not read (k3-forward verifies each block the first
// time it reads it). Another model (config.json or shard names) is a problem.
// Also the upgrade of a trunk.json older than version 4: trunk.bin's raw
// sections are read once, each checked against its recorded hash, and their
// block hashes recorded (no repack).
TrunkCheck refresh_trunk(const std::string& trunk_dir, const Checkpoint& checkpoint,
                         const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace k3
