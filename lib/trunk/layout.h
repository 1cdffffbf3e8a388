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
//
// Format version 3 (written by every pack) keeps that layout as the
// *decoded* one (offsets, lengths, tensor offsets and the section xxh3 are
// those of the uncompressed trunk, so binding and checking do not depend on
// compression) and adds where each section is stored: stored_offset and
// stored_length in trunk.bin (4096-aligned), and for a section packed with
// k3-pack --compress its blocks: each tensor cut into block_bytes pieces
// (the last one shorter), stored back to back in tensor order
// (trunk/codec.h), with the stored size and the xxh3 of the decoded bytes of
// each. Padding between tensors is not stored: it decodes as zeros.
// Versions 1 and 2 have no stored fields (every section is raw, stored where
// it decodes); an unknown version is refused by its number.
//
// Version 4 gives every section blocks: a raw section is cut the same way
// (each tensor into block_bytes pieces, stored where they decode) and
// trunk.json records the xxh3 of each, so a run verifies every block when it
// first reads it, whatever part of a section it reads (a row of the
// embedding, a row block of lm_head), with no hashing pass over the trunk
// before the first token. The engine refuses older trunks with the k3-pack
// command that rewrites them (open_trunk_layout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/dtype.h"
#include "checkpoint/safetensors.h"

namespace k3 {

// A tensor of a section: the record a safetensors header holds (name, dtype,
// shape, nbytes), its offset absolute in trunk.bin.
using TrunkTensor = TensorInfo;

// One block of a compressed section.
// One block of a section: of a compressed section, as stored by the codec;
// of a raw one (version 4), its bytes as they are, stored where they decode.
struct TrunkBlock {
  uint64_t offset = 0;         // decoded: absolute offset in the uncompressed layout
  uint64_t size = 0;           // decoded bytes
  uint64_t stored_offset = 0;  // absolute offset in trunk.bin
  uint64_t stored_size = 0;    // equal to size in a raw section
  uint64_t xxh3 = 0;           // of the decoded bytes
};

struct TrunkSection {
  std::string name;     // "embedding", "layer.7", "head"
  int layer = -1;       // decoder layer, -1 for embedding/head
  uint64_t offset = 0;  // 4096-aligned (decoded layout)
  uint64_t length = 0;  // 4096-aligned (includes padding)
  uint64_t xxh3 = 0;    // of the decoded bytes, padding included
  std::vector<TrunkTensor> tensors;
  // Where the section's bytes are in trunk.bin: equal to offset/length
  // before version 3; from version 3 a raw section stores its `length` bytes
  // there as they are, a compressed one its blocks.
  uint64_t stored_offset = 0;
  uint64_t stored_length = 0;
  bool compressed = false;
  std::vector<TrunkBlock> blocks;  // in tensor order (a raw section's from version 4)
};

// One source shard as it was when the trunk was packed. The header digest
// catches a shard replaced by one with other tensors or offsets; the
// modification time and inode catch one rewritten in place with the same
// size and header (its weights may have changed).
struct SourceShard {
  std::string file;
  uint64_t size = 0;
  uint64_t header_xxh3 = 0;  // version 2: xxh3-64 of the 8-byte length + JSON header
  int64_t mtime_ns = 0;      // version 2
  uint64_t inode = 0;        // version 2
};

struct SourceFingerprint {
  uint64_t config_hash = 0;  // xxh3-64 of config.json's bytes
  std::vector<SourceShard> shards;
  bool has_identity = true;  // false for a version 1 trunk.json (names and sizes only)
};

// Version 2 added each shard's header digest, modification time and inode;
// version 3 adds where each section is stored and its blocks when
// compressed. Version 1 files still parse (has_identity false) so they can be
// refused with advice, or re-checked and upgraded by k3-pack --refresh;
// version 2 files are read as version 3 with every section raw.
constexpr int kTrunkFormatVersion = 4;
// The first version with stored_offset/stored_length/compressed/blocks.
constexpr int kTrunkStoredFieldsVersion = 3;
// The first version whose raw sections have blocks (with their hashes).
constexpr int kTrunkBlockHashesVersion = 4;

struct TrunkLayout {
  int version = kTrunkFormatVersion;
  SourceFingerprint source;
  uint64_t file_size = 0;    // size of trunk.bin
  uint64_t block_bytes = 0;  // decoded bytes per block: version 3 when compressed (else 0), every version 4 trunk
  std::vector<TrunkSection> sections;

  const TrunkSection* layer_section(int layer) const;
  const TrunkSection* section(const std::string& name) const;
  uint64_t layer_bytes() const;         // sum of decoder-layer section lengths (decoded)
  uint64_t layer_stored_bytes() const;  // the same sections' bytes in trunk.bin
  bool compressed() const;              // some section is stored as blocks
};

// Fills in the decoded offset and size of each of s.blocks from its tensors
// and `block_bytes`, and lays their stored offsets back to back from
// s.stored_offset (stored sizes must be set). False when the number of
// blocks or their stored sizes do not fit the section, or its tensors are
// not in ascending order without overlap (so blocks are sorted).
bool place_trunk_blocks(TrunkSection& s, uint64_t block_bytes);
// The same for a raw section: each block stored where it decodes, its stored
// size its size (stored sizes need not be set).
bool place_raw_blocks(TrunkSection& s, uint64_t block_bytes);

std::string trunk_layout_to_json(const TrunkLayout& layout);
// Throws k3::Error(kBadModel) naming `origin` and what is malformed.
TrunkLayout parse_trunk_layout(const std::string& json, const std::string& origin);

class Checkpoint;
// Fingerprint of an opened checkpoint: config.json hash and every shard the
// index names (name, size, header digest, modification time, inode as
// Checkpoint::open saw them). Throws kBadModel when config.json is unreadable.
SourceFingerprint fingerprint_checkpoint(const Checkpoint& checkpoint);

enum class FingerprintDiff {
  kSame,
  // Same config.json, shard names and sizes, but a shard changed on disk
  // (header, modification time or inode) or the trunk predates version 2:
  // the trunk may still be right, which k3-pack --refresh can establish.
  kShardsChanged,
  // Another config.json, another set of shards or a shard of another size.
  kOtherModel,
};
struct FingerprintComparison {
  FingerprintDiff diff = FingerprintDiff::kSame;
  std::string reason;                       // one sentence naming the shard and what changed; empty when kSame
  std::vector<std::string> changed_shards;  // kShardsChanged: the shards to re-check (all for version 1)
};
FingerprintComparison compare_fingerprint(const SourceFingerprint& trunk, const SourceFingerprint& model);

// Parses TRUNK_DIR/trunk.json alone (kBadModel when missing or malformed).
TrunkLayout read_trunk_layout(const std::string& trunk_dir);

// Reads TRUNK_DIR/trunk.json and checks it belongs to `checkpoint`
// (fingerprint), that trunk.bin has the recorded size and that the format
// has per-block hashes (version 4). Throws k3::Error(kBadModel) saying what
// is wrong and the k3-pack command to run.
TrunkLayout open_trunk_layout(const std::string& trunk_dir, const Checkpoint& checkpoint);

}  // namespace k3
