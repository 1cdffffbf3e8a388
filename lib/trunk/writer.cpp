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

TrunkLayout pack_trunk(const Checkpoint& checkpoint, const std::vector<ExpectedTensor>& manifest,
                       const std::string& trunk_dir, const PackOptions& options) {
  TrunkLayout t = plan_trunk(manifest, checkpoint);
  if (::mkdir(trunk_dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(ExitCode::kIo, trunk_dir + ": cannot create directory: " + std::strerror(errno));
  const std::string bin = path_join(trunk_dir, "trunk.bin"), json = path_join(trunk_dir, "trunk.json");
  // A k3-pack killed midway (SIGKILL, power loss) left its temporaries; no
  // later run would use them, and a trunk.bin.tmp is as large as a trunk.
  for (const std::string& name : {bin, json}) {
    const StaleTemporaries st = remove_stale_temporaries(name);
    if (st.files && options.on_stale_removed) options.on_stale_removed(name, st.files, st.bytes);
  }
  {
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
  // The new trunk is written under temporary names beside any old one, which
  // stays usable until both new files are complete; then they are swapped in.
  const uint64_t fail_after = test_fail_after_bytes();
  check_output_path(json, OutputPolicy::kRegularFile);  // refused now, not after the work
  t.version = kTrunkFormatVersion;
  t.block_bytes = kTrunkBlockBytes;  // every section, raw or compressed, is hashed in blocks
  AtomicFileWriter out(bin);
  {
    if (!options.compress) out.resize(t.file_size);
    ShardFiles files(checkpoint);
    std::vector<uint8_t> buf(kChunk);
    TrunkBlockEncoder encoder;
    std::vector<uint8_t> stored;
    uint64_t done = 0, wpos = 0;  // wpos: where the next section is stored
    // Scans the bytes as read from the checkpoint, before any encoding.
    NonFiniteScan non_finite = trunk_float_scan(t);
    for (TrunkSection& s : t.sections) {
      s.stored_offset = options.compress ? wpos : s.offset;
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
          if (!in_tensor) return;
          const TrunkTensor& x = s.tensors[tensor];
          for (uint64_t b = 0; b < n; b += t.block_bytes) {
            const uint64_t m = std::min<uint64_t>(t.block_bytes, n - b);
            encoder.encode(p + b, m, x.dtype == DType::kBF16, &stored);
            if (fail_after && wpos + stored.size() > fail_after)
              throw Error(ExitCode::kIo, bin + ": write failed: No space left on device (K3_PACK_FAIL_AFTER)");
            out.write_at(wpos, stored.data(), stored.size());
            TrunkBlock k;
            k.stored_size = stored.size();
            k.xxh3 = XXH3_64bits(p + b, m);
            s.blocks.push_back(k);
            wpos += stored.size();
          }
          return;
        }
        if (in_tensor)
          for (uint64_t b = 0; b < n; b += t.block_bytes) {
            TrunkBlock k;
            k.xxh3 = XXH3_64bits(p + b, std::min<uint64_t>(t.block_bytes, n - b));
            s.blocks.push_back(k);
          }
        const uint64_t base = s.stored_offset + rel;
        // The file was extended to its full size, so skipped all-zero blocks
        // read back as zeros (and stay holes where they are aligned).
        uint64_t b = 0;
        while (b < n) {
          uint64_t m = std::min<uint64_t>(kDirectAlign, n - b);
          if (options.sparse && all_zero(p + b, m)) {
            b += m;
            continue;
          }
          uint64_t e = b + m;  // coalesce the run of non-zero blocks into one write
          while (e < n) {
            uint64_t m2 = std::min<uint64_t>(kDirectAlign, n - e);
            if (options.sparse && all_zero(p + e, m2)) break;
            e += m2;
          }
          if (fail_after && base + e > fail_after)
            throw Error(ExitCode::kIo, bin + ": write failed: No space left on device (K3_PACK_FAIL_AFTER)");
          out.write_at(base + b, p + b, e - b);
          b = e;
        }
      });
      s.xxh3 = XXH3_64bits_digest(st);
      // NaN/Inf weights make NaN logits: refuse them here, naming the tensor.
      const std::string bad = non_finite.summary();
      if (!bad.empty())
        throw Error(ExitCode::kBadModel, checkpoint.dir() + ": " + bad + " in section " + s.name +
                                             "; the checkpoint is damaged (check it with " +
                                             spelled(kVerifyCheckpointFull) +
                                             ", re-download the shard); no trunk was written");
      if (s.compressed) {
        s.stored_length = align_up(wpos - s.stored_offset);
        if (!place_trunk_blocks(s, t.block_bytes))
          throw Error(ExitCode::kInternal, "section " + s.name + ": blocks written do not match its tensors");
      } else {
        s.stored_length = s.length;
        if (!place_raw_blocks(s, t.block_bytes))
          throw Error(ExitCode::kInternal, "section " + s.name + ": blocks hashed do not match its tensors");
        if (options.compress) {  // a raw section inside a compressed trunk
          out.resize(s.stored_offset + s.length);
        }
      }
      wpos = s.stored_offset + s.stored_length;
    }
    if (options.compress) {
      t.file_size = wpos;
      out.resize(t.file_size);
    }
  }
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
