#include "trunk/writer.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>

#include "checkpoint/checkpoint.h"
#include "checkpoint/non_finite_scan.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "trunk/blocks.h"
#include "trunk/codec.h"
#include "trunk/pack_command.h"
#include "trunk/plan.h"
#include "trunk/source.h"
#include "trunk/table_check.h"

namespace k3 {

namespace {

// Feeds the decoded bytes of compressed section `s` (padding included) to
// `st` and to `scan` in order, reading its blocks from `f` a few MB at a
// time. Returns the first damaged block's description, or an empty string.
std::string hash_compressed_section(const File& f, const TrunkSection& s, XXH3_state_t* st, NonFiniteScan& scan,
                                    const std::function<void(uint64_t)>& advanced) {
  static const std::vector<uint8_t> zeros(1 << 16, 0);
  auto feed_zeros = [&](uint64_t n) {
    for (uint64_t k = 0; k < n; k += zeros.size())
      XXH3_64bits_update(st, zeros.data(), std::min<uint64_t>(zeros.size(), n - k));
    advanced(n);
  };
  TrunkBlockDecoder decoder;
  std::vector<uint8_t> stored, decoded;
  uint64_t pos = s.offset;
  for (size_t first = 0; first < s.blocks.size();) {
    // A run of blocks of at most kChunk stored bytes (at least one block).
    size_t last = first + 1;
    while (last < s.blocks.size() &&
           s.blocks[last].stored_offset + s.blocks[last].stored_size - s.blocks[first].stored_offset <= kChunk)
      ++last;
    const StoredSpan span = stored_span(s, BlockRange{first, last});
    stored.resize(span.length);
    f.pread_exact(stored.data(), span.length, span.offset);
    for (size_t i = first; i < last; ++i) {
      const TrunkBlock& b = s.blocks[i];
      if (b.offset > pos) feed_zeros(b.offset - pos);
      decoded.resize(b.size);
      const std::string err = decode_blocks(s, BlockRange{i, i + 1}, stored.data(), span.offset, span.length,
                                            decoded.data(), b.offset, b.size, decoder);
      if (!err.empty()) return err;
      XXH3_64bits_update(st, decoded.data(), b.size);
      scan.feed(b.offset, decoded.data(), b.size);
      advanced(b.size);
      pos = b.offset + b.size;
    }
    first = last;
  }
  if (s.offset + s.length > pos) feed_zeros(s.offset + s.length - pos);
  return std::string();
}

// The xxh3 of each block of a raw section, from the section's bytes fed in
// order in pieces of any size (padding between tensors belongs to no block).
class RawBlockHashes {
 public:
  explicit RawBlockHashes(const TrunkSection& s) : s_(s) { XXH3_64bits_reset(st_.get()); }
  void feed(uint64_t at, const uint8_t* p, uint64_t n) {
    const uint64_t end = at + n;
    while (at < end && next_ < s_.blocks.size()) {
      const TrunkBlock& b = s_.blocks[next_];
      if (at < b.offset + fed_) {  // padding before the block
        at = std::min(end, b.offset + fed_);
        continue;
      }
      const uint64_t take = std::min(end, b.offset + b.size) - at;
      XXH3_64bits_update(st_.get(), p + (n - (end - at)), take);
      fed_ += take;
      at += take;
      if (fed_ == b.size) {
        digests_.push_back(XXH3_64bits_digest(st_.get()));
        XXH3_64bits_reset(st_.get());
        fed_ = 0;
        ++next_;
      }
    }
  }
  // One digest per block once every byte was fed.
  const std::vector<uint64_t>& digests() const { return digests_; }
  // The first block whose bytes differ from its recorded hash, described; "" when none.
  std::string first_mismatch() const {
    for (size_t i = 0; i < s_.blocks.size(); ++i)
      if (i >= digests_.size() || digests_[i] != s_.blocks[i].xxh3)
        return "trunk.bin: section " + s_.name + " block " + std::to_string(i) + " (bytes " +
               std::to_string(s_.blocks[i].stored_offset) + " to " +
               std::to_string(s_.blocks[i].stored_offset + s_.blocks[i].size) +
               ") differs from its hash in trunk.json (damaged)";
    return "";
  }

 private:
  const TrunkSection& s_;
  Xxh3State st_;
  size_t next_ = 0;
  uint64_t fed_ = 0;  // bytes of block next_ hashed so far
  std::vector<uint64_t> digests_;
};

// The problem an old trunk.json poses to k3-forward, for --check.
std::string old_format_problem(const TrunkLayout& t, const std::string& trunk_dir, const Checkpoint& c) {
  if (t.version >= kTrunkBlockHashesVersion) return "";
  return "trunk.json: format version " + std::to_string(t.version) + " has no per-block hashes, so " +
         spelled(kStreamingRun) + " refuses it; upgrade it with " + spelled(kRefreshTrunk) + " " + trunk_dir + " " +
         c.dir() + " (reads trunk.bin once to hash its blocks)";
}

// The xxh3 of section `s` as gathered from the checkpoint (throws what
// reading the shards throws).
uint64_t source_section_hash(const TrunkSection& s, const Checkpoint& checkpoint, ShardFiles& files,
                             std::vector<uint8_t>& buf, const std::function<void(uint64_t)>& advanced) {
  Xxh3State hash;  // freed on every path, a failed read included
  XXH3_state_t* st = hash.get();
  XXH3_64bits_reset(st);
  stream_section(s, checkpoint, files, buf, [&](uint64_t, const uint8_t* p, uint64_t n) {
    XXH3_64bits_update(st, p, n);
    advanced(n);
  });
  return XXH3_64bits_digest(st);
}

// Section `s` as packed in trunk.bin (`size` bytes): its hash, decoded
// block by block for a compressed section, and the first damaged block.
struct PackedSection {
  bool in_file = false;  // false: the section lies past the end of trunk.bin
  uint64_t hash = 0;
  std::string block_err;
};
PackedSection hash_packed_section(const File& f, uint64_t size, const TrunkSection& s, std::vector<uint8_t>& buf,
                                  NonFiniteScan& non_finite, const std::function<void(uint64_t)>& advanced) {
  PackedSection r;
  r.in_file = s.stored_offset + s.stored_length <= size;
  if (!r.in_file) return r;
  Xxh3State hash;  // freed on every path, a failed read included
  XXH3_state_t* st = hash.get();
  XXH3_64bits_reset(st);
  if (s.compressed) {
    r.block_err = hash_compressed_section(f, s, st, non_finite, advanced);
  } else {
    RawBlockHashes blocks(s);
    for (uint64_t o = 0; o < s.length; o += kChunk) {
      uint64_t n = std::min<uint64_t>(kChunk, s.length - o);
      f.pread_exact(buf.data(), n, s.stored_offset + o);
      XXH3_64bits_update(st, buf.data(), n);
      blocks.feed(s.offset + o, buf.data(), n);
      non_finite.feed(s.offset + o, buf.data(), n);
      advanced(n);
    }
    r.block_err = blocks.first_mismatch();
  }
  r.hash = XXH3_64bits_digest(st);
  return r;
}

// The checks that need no byte of trunk.bin: whose model it is, its format,
// its tensor table against the manifest. False when the table is wrong (a
// re-pack is the remedy, so nothing more is checked).
bool check_trunk_description(const TrunkLayout& t, const std::string& trunk_dir, const Checkpoint& checkpoint,
                             const std::vector<ExpectedTensor>& manifest, TrunkCheck& r) {
  const FingerprintComparison cmp = compare_fingerprint(t.source, fingerprint_checkpoint(checkpoint));
  if (cmp.diff != FingerprintDiff::kSame) r.problems.push_back("fingerprint: " + cmp.reason);
  if (cmp.diff == FingerprintDiff::kShardsChanged) r.shards_changed = cmp.reason;
  const std::string old = old_format_problem(t, trunk_dir, checkpoint);
  if (!old.empty()) {  // older formats lack the blocks the table check compares
    r.problems.push_back(old);
    return true;
  }
  try {
    check_trunk_table(t, layout_trunk(manifest), path_join(trunk_dir, "trunk.json"),
                      "re-run " + repack_command(t.compressed()) + " " + checkpoint.dir() + " " + trunk_dir);
  } catch (const Error& e) {
    r.problems.push_back(e.what());
    r.shards_changed.clear();  // a re-pack, not a --refresh, is the remedy
    return false;
  }
  return true;
}

// The sections holding a tensor of a changed shard (every section when the
// trunk.json does not record the shards' identity).
std::vector<const TrunkSection*> sections_of_changed_shards(const TrunkLayout& t, const Checkpoint& checkpoint,
                                                            const FingerprintComparison& cmp) {
  std::vector<bool> changed(checkpoint.shards().size(), !t.source.has_identity);
  for (size_t i = 0; i < changed.size(); ++i)
    for (const std::string& f : cmp.changed_shards) changed[i] = changed[i] || checkpoint.shards()[i].file == f;
  std::vector<const TrunkSection*> todo;
  for (const TrunkSection& s : t.sections) {
    bool touched = false;
    for (const TrunkTensor& x : s.tensors) touched = touched || changed[checkpoint.at(x.name).shard];
    if (touched) todo.push_back(&s);
  }
  return todo;
}

// The upgrade to version 4: every raw section gets its block hashes, from
// trunk.bin's bytes, which must match the section's recorded hash
// (compressed sections have had block hashes since version 3).
void add_raw_block_hashes(TrunkLayout& t, const std::string& trunk_dir, std::vector<uint8_t>& buf,
                          const std::function<void(uint64_t)>& advanced, TrunkCheck& r) {
  const File f = File::open_read(path_join(trunk_dir, "trunk.bin"));
  for (TrunkSection& s : t.sections) {
    if (s.compressed) continue;
    uint64_t count = 0;
    for (const TrunkTensor& x : s.tensors) count += (x.nbytes + kTrunkBlockBytes - 1) / kTrunkBlockBytes;
    s.blocks.assign(count, TrunkBlock{});
    if (!place_raw_blocks(s, kTrunkBlockBytes))
      throw Error(ExitCode::kBadModel, path_join(trunk_dir, "trunk.json") + ": section " + s.name +
                                           "'s tensors overlap (damaged; re-run " + spelled(kPackTrunk) + ")");
    RawBlockHashes blocks(s);
    Xxh3State section;
    XXH3_64bits_reset(section.get());
    for (uint64_t o = 0; o < s.length; o += kChunk) {
      const uint64_t n = std::min<uint64_t>(kChunk, s.length - o);
      f.pread_exact(buf.data(), n, s.stored_offset + o);
      XXH3_64bits_update(section.get(), buf.data(), n);
      blocks.feed(s.offset + o, buf.data(), n);
      advanced(n);
    }
    r.bytes_read += s.length;
    if (XXH3_64bits_digest(section.get()) != s.xxh3) {
      r.problems.push_back("trunk.bin: section " + s.name + " differs from its hash in trunk.json (damaged; re-run " +
                           spelled(kPackTrunk) + ")");
      continue;
    }
    for (size_t i = 0; i < s.blocks.size(); ++i) s.blocks[i].xxh3 = blocks.digests().at(i);
  }
}

}  // namespace

TrunkCheck check_trunk(const std::string& trunk_dir, const Checkpoint& checkpoint,
                       const std::vector<ExpectedTensor>& manifest,
                       const std::function<void(uint64_t, uint64_t)>& progress) {
  const TrunkLayout t = read_trunk_layout(trunk_dir);
  TrunkCheck r;
  if (!check_trunk_description(t, trunk_dir, checkpoint, manifest, r)) return r;
  File f = File::open_read(path_join(trunk_dir, "trunk.bin"));
  const uint64_t size = f.size();
  uint64_t decoded_total = 0;
  for (const TrunkSection& s : t.sections) decoded_total += s.length;
  if (size != t.file_size)
    r.problems.push_back("trunk.bin: is " + std::to_string(size) + " bytes but trunk.json says " +
                         std::to_string(t.file_size));
  ShardFiles files(checkpoint);
  std::vector<uint8_t> buf(kChunk);
  uint64_t done = 0;
  const uint64_t total = 2 * decoded_total;
  const std::function<void(uint64_t)> advanced = [&](uint64_t n) {
    done += n;
    if (progress) progress(done, total);
  };
  NonFiniteScan non_finite = trunk_float_scan(t);
  for (const TrunkSection& s : t.sections) {
    const PackedSection packed = hash_packed_section(f, size, s, buf, non_finite, advanced);
    uint64_t h_src = 0;  // the same bytes gathered from the checkpoint
    std::string src_err;
    try {
      h_src = source_section_hash(s, checkpoint, files, buf, advanced);
    } catch (const Error& e) {
      src_err = e.what();
    }
    r.bytes_checked += s.length;
    if (!packed.in_file) r.problems.push_back(s.name + ": lies beyond the end of trunk.bin (truncated)");
    else if (!packed.block_err.empty()) r.problems.push_back(packed.block_err);
    else if (packed.hash != s.xxh3)
      r.problems.push_back(s.name + ": trunk.bin bytes differ from the hash recorded in trunk.json");
    if (!src_err.empty()) r.problems.push_back(s.name + ": cannot read the source tensors: " + src_err);
    else if (h_src != s.xxh3) r.problems.push_back(s.name + ": the checkpoint's tensors differ from what was packed");
  }
  for (const NonFiniteTensor& x : non_finite.found())
    r.problems.push_back("trunk.bin: tensor '" + x.name + "' holds " + std::to_string(x.count) +
                         " NaN or infinite values (first at element " + std::to_string(x.first_element) + ")");
  return r;
}

TrunkCheck refresh_trunk(const std::string& trunk_dir, const Checkpoint& checkpoint,
                         const std::function<void(uint64_t, uint64_t)>& progress) {
  TrunkLayout t = read_trunk_layout(trunk_dir);
  TrunkCheck r;
  const SourceFingerprint now = fingerprint_checkpoint(checkpoint);  // identity before any byte is read
  const FingerprintComparison cmp = compare_fingerprint(t.source, now);
  if (cmp.diff == FingerprintDiff::kOtherModel) {
    r.problems.push_back("fingerprint: " + cmp.reason + " (nothing to refresh: re-run " + spelled(kPackTrunk) + ")");
    return r;
  }
  const bool upgrade = t.version < kTrunkBlockHashesVersion;
  if (cmp.diff == FingerprintDiff::kSame && !upgrade) return r;
  if (cmp.diff != FingerprintDiff::kSame) r.shards_changed = cmp.reason;
  struct stat st;
  const std::string bin = path_join(trunk_dir, "trunk.bin");
  if (::stat(bin.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != t.file_size) {
    r.problems.push_back("trunk.bin: missing or not the size trunk.json records " + rerun_pack_hint());
    return r;
  }
  const std::vector<const TrunkSection*> todo = sections_of_changed_shards(t, checkpoint, cmp);
  uint64_t total = 0, done = 0;
  for (const TrunkSection* s : todo) total += s->length;
  if (upgrade)
    for (const TrunkSection& s : t.sections) total += s.compressed ? 0 : s.length;
  const std::function<void(uint64_t)> advanced = [&](uint64_t n) {
    done += n;
    if (progress) progress(done, total);
  };
  ShardFiles files(checkpoint);
  std::vector<uint8_t> buf(kChunk);
  for (const TrunkSection* s : todo) {
    const uint64_t h = source_section_hash(*s, checkpoint, files, buf, advanced);
    r.bytes_checked += s->length;
    if (h != s->xxh3)
      r.problems.push_back(s->name + ": the checkpoint's tensors differ from what was packed " + rerun_pack_hint());
  }
  if (!r.problems.empty()) return r;
  if (upgrade) {
    add_raw_block_hashes(t, trunk_dir, buf, advanced, r);
    if (!r.problems.empty()) return r;
    r.upgraded_from = t.version;
    t.block_bytes = kTrunkBlockBytes;
  }
  t.version = kTrunkFormatVersion;
  t.source = now;
  const std::string text = trunk_layout_to_json(t);
  write_file_atomic(path_join(trunk_dir, "trunk.json"), text.data(), text.size());
  r.refreshed = true;
  return r;
}

}  // namespace k3
