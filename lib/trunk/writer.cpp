#include "trunk/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "checkpoint/checkpoint.h"
#include "checkpoint/non_finite_scan.h"
#include "common/atomic_file_writer.h"
#include "common/byte_format.h"
#include "common/command_keys.h"
#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"
#include "io/aligned_buffer.h"
#include "trunk/blocks.h"
#include "trunk/codec.h"
#include "trunk/source.h"

namespace k3 {

namespace {

// A block is zero when its first 16 bytes are and it equals itself shifted
// by 16: two memcmp calls run at memory speed, where a byte loop would make
// packing a mostly-hole checkpoint CPU-bound.
bool all_zero(const uint8_t* p, uint64_t n) {
  static constexpr uint8_t kZeros[16] = {};
  if (n <= 16) return std::memcmp(p, kZeros, n) == 0;
  return std::memcmp(p, kZeros, 16) == 0 && std::memcmp(p, p + 16, n - 16) == 0;
}

// Test hook: K3_PACK_FAIL_AFTER=<bytes> fails the trunk.bin write with
// "No space left on device" past that offset, to exercise a full disk in the
// middle of a pack without filling one.
uint64_t test_fail_after_bytes() {
  const char* env = std::getenv("K3_PACK_FAIL_AFTER");
  return env && *env ? std::strtoull(env, nullptr, 10) : 0;
}

}  // namespace

// Disk space the packed trunk will take. Written densely it is the file
// size. Written sparse, only blocks holding a non-zero byte are allocated,
// and every such byte comes from an allocated block of a source shard, so
// the shards' allocated bytes (plus two blocks per tensor, for its unaligned
// first and last block) bound it too: a sparse checkpoint packs where its
// trunk's apparent size would not fit.

uint64_t trunk_space_needed(const TrunkLayout& t, const Checkpoint& checkpoint, const PackOptions& options) {
  if (!options.sparse) return t.file_size;
  uint64_t allocated = 0, tensors = 0;
  for (const ShardInfo& s : checkpoint.shards()) {
    struct stat st;
    if (::stat(s.path.c_str(), &st) != 0) return t.file_size;
    allocated += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  for (const TrunkSection& sec : t.sections) tensors += sec.tensors.size();
  return std::min(t.file_size, allocated + 2 * tensors * 4096);
}

namespace {

// Makes the trunk directory, removes a killed pack's temporaries there and
// refuses a disk without room for the trunk.
void prepare_trunk_dir(const std::string& trunk_dir, const TrunkLayout& t, const Checkpoint& checkpoint,
                       const PackOptions& options) {
  if (::mkdir(trunk_dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(ExitCode::kIo, trunk_dir + ": cannot create directory: " + std::strerror(errno));
  // A k3-pack killed midway (SIGKILL, power loss) left its temporaries; no
  // later run would use them, and a trunk.bin.tmp is as large as a trunk.
  for (const std::string& name : {path_join(trunk_dir, "trunk.bin"), path_join(trunk_dir, "trunk.json")}) {
    const StaleTemporaries st = remove_stale_temporaries(name);
    if (st.files && options.on_stale_removed) options.on_stale_removed(name, st.files, st.bytes);
  }
  // An old trunk here stays whole until the new one is complete, so its
  // blocks are not free space.
  struct statvfs vfs;
  if (::statvfs(trunk_dir.c_str(), &vfs) == 0) {
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    const uint64_t need = trunk_space_needed(t, checkpoint, options);
    if (avail < need + (64u << 20))
      throw Error(ExitCode::kResource, trunk_dir + ": the trunk needs " + format_bytes(need) + " but only " +
                                           format_bytes(avail) +
                                           " is free there; free space or pick another TRUNK_DIR");
  }
}

// Writes sections into trunk.bin as their bytes stream from the checkpoint:
// a compressed section block by block, one after another from `wpos`; a raw
// one at its offset (all-zero blocks skipped when sparse), its blocks hashed.
class SectionPacker {
 public:
  SectionPacker(AtomicFileWriter& out, const std::string& bin, const PackOptions& options, uint64_t block_bytes)
      : out_(out), bin_(bin), options_(options), block_bytes_(block_bytes) {}

  uint64_t wpos() const { return wpos_; }

  // Bytes of one tensor of a compressed section, cut into whole blocks.
  void compressed(TrunkSection& s, DType dtype, const uint8_t* p, uint64_t n) {
    for (uint64_t b = 0; b < n; b += block_bytes_) {
      const uint64_t m = std::min<uint64_t>(block_bytes_, n - b);
      encoder_.encode(p + b, m, dtype == DType::kBF16, &stored_);
      check_room(wpos_ + stored_.size());
      out_.write_at(wpos_, stored_.data(), stored_.size());
      TrunkBlock k;
      k.stored_size = stored_.size();
      k.xxh3 = XXH3_64bits(p + b, m);
      s.blocks.push_back(k);
      wpos_ += stored_.size();
    }
  }

  void hash_raw_blocks(TrunkSection& s, const uint8_t* p, uint64_t n) const {
    for (uint64_t b = 0; b < n; b += block_bytes_) {
      TrunkBlock k;
      k.xxh3 = XXH3_64bits(p + b, std::min<uint64_t>(block_bytes_, n - b));
      s.blocks.push_back(k);
    }
  }

  // Raw bytes at `base`. The file was extended to its full size, so skipped
  // all-zero blocks read back as zeros (and stay holes where aligned).
  void raw(uint64_t base, const uint8_t* p, uint64_t n) {
    uint64_t b = 0;
    while (b < n) {
      uint64_t m = std::min<uint64_t>(kDirectAlign, n - b);
      if (options_.sparse && all_zero(p + b, m)) {
        b += m;
        continue;
      }
      uint64_t e = b + m;  // coalesce the run of non-zero blocks into one write
      while (e < n) {
        uint64_t m2 = std::min<uint64_t>(kDirectAlign, n - e);
        if (options_.sparse && all_zero(p + e, m2)) break;
        e += m2;
      }
      check_room(base + e);
      out_.write_at(base + b, p + b, e - b);
      b = e;
    }
  }

  // A section's stored length and block placement once all its bytes are written.
  void close_section(TrunkSection& s) {
    if (s.compressed) {
      s.stored_length = align_up(wpos_ - s.stored_offset);
      if (!place_trunk_blocks(s, block_bytes_))
        throw Error(ExitCode::kInternal, "section " + s.name + ": blocks written do not match its tensors");
    } else {
      s.stored_length = s.length;
      if (!place_raw_blocks(s, block_bytes_))
        throw Error(ExitCode::kInternal, "section " + s.name + ": blocks hashed do not match its tensors");
      if (options_.compress) out_.resize(s.stored_offset + s.length);  // a raw section inside a compressed trunk
    }
    wpos_ = s.stored_offset + s.stored_length;
  }

 private:
  void check_room(uint64_t end) const {
    if (fail_after_ && end > fail_after_)
      throw Error(ExitCode::kIo, bin_ + ": write failed: No space left on device (K3_PACK_FAIL_AFTER)");
  }

  AtomicFileWriter& out_;
  const std::string& bin_;
  const PackOptions& options_;
  const uint64_t block_bytes_;
  const uint64_t fail_after_ = test_fail_after_bytes();
  TrunkBlockEncoder encoder_;
  std::vector<uint8_t> stored_;
  uint64_t wpos_ = 0;  // where the next compressed section is stored
};

// Streams every section from the checkpoint into `out`, hashing each and
// refusing NaN/Inf weights.
void write_sections(TrunkLayout& t, const Checkpoint& checkpoint, AtomicFileWriter& out, const std::string& bin,
                    const PackOptions& options) {
  if (!options.compress) out.resize(t.file_size);
  ShardFiles files(checkpoint);
  std::vector<uint8_t> buf(kChunk);
  SectionPacker packer(out, bin, options, t.block_bytes);
  uint64_t done = 0;
  // Scans the bytes as read from the checkpoint, before any encoding.
  NonFiniteScan non_finite = trunk_float_scan(t);
  for (TrunkSection& s : t.sections) {
    s.stored_offset = options.compress ? packer.wpos() : s.offset;
    s.compressed = options.compress && s.name != "embedding";
    Xxh3State hash;  // freed on every path, a failed write included
    XXH3_state_t* st = hash.get();
    XXH3_64bits_reset(st);
    size_t tensor = 0;  // the tensor the next chunk belongs to (chunks come in file order)
    stream_section(s, checkpoint, files, buf, [&](uint64_t rel, const uint8_t* p, uint64_t n) {
      XXH3_64bits_update(st, p, n);
      const uint64_t abs = s.offset + rel;
      non_finite.feed(abs, p, n);
      done += n;
      if (options.progress) options.progress(done, t.file_size);
      // Tensor bytes come in chunks that start a multiple of kChunk into
      // their tensor, and kChunk is a multiple of the block size, so a
      // chunk is cut into whole blocks, each hashed; padding belongs to no
      // block (a compressed section does not store it).
      while (tensor < s.tensors.size() && s.tensors[tensor].offset + s.tensors[tensor].nbytes <= abs) ++tensor;
      const bool in_tensor = tensor < s.tensors.size() && abs >= s.tensors[tensor].offset;
      if (s.compressed) {
        if (in_tensor) packer.compressed(s, s.tensors[tensor].dtype, p, n);
        return;
      }
      if (in_tensor) packer.hash_raw_blocks(s, p, n);
      packer.raw(s.stored_offset + rel, p, n);
    });
    s.xxh3 = XXH3_64bits_digest(st);
    // NaN/Inf weights make NaN logits: refuse them here, naming the tensor.
    const std::string bad = non_finite.summary();
    if (!bad.empty())
      throw Error(ExitCode::kBadModel, checkpoint.dir() + ": " + bad + " in section " + s.name +
                                           "; the checkpoint is damaged (check it with " +
                                           spelled(kVerifyCheckpointFull) +
                                           ", re-download the shard); no trunk was written");
    packer.close_section(s);
  }
  if (options.compress) {
    t.file_size = packer.wpos();
    out.resize(t.file_size);
  }
}

}  // namespace

TrunkLayout pack_trunk(const Checkpoint& checkpoint, const std::vector<ExpectedTensor>& manifest,
                       const std::string& trunk_dir, const PackOptions& options) {
  TrunkLayout t = plan_trunk(manifest, checkpoint);
  prepare_trunk_dir(trunk_dir, t, checkpoint, options);
  const std::string bin = path_join(trunk_dir, "trunk.bin"), json = path_join(trunk_dir, "trunk.json");
  // The new trunk is written under temporary names beside any old one, which
  // stays usable until both new files are complete; then they are swapped in.
  check_output_path(json, OutputPolicy::kRegularFile);  // refused now, not after the work
  t.version = kTrunkFormatVersion;
  t.block_bytes = kTrunkBlockBytes;  // every section, raw or compressed, is hashed in blocks
  AtomicFileWriter out(bin);
  write_sections(t, checkpoint, out, bin, options);
  out.commit_to_temp();
  const std::string text = trunk_layout_to_json(t);
  AtomicFileWriter json_out(json);
  json_out.write(text.data(), text.size());
  json_out.commit_to_temp();
  // The swap: without trunk.json the directory is no trunk, so a crash
  // between the renames never pairs the old trunk.json with the new trunk.bin.
  if (::unlink(json.c_str()) != 0 && errno != ENOENT)
    throw Error(ExitCode::kIo, json + ": cannot replace: " + std::strerror(errno));
  rename_over_regular(out.temp_path(), bin);
  rename_over_regular(json_out.temp_path(), json);
  return t;
}

}  // namespace k3
