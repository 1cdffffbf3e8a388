#include "pack/trunk_packer.h"

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
#include "checkpoint/trunk_blocks.h"
#include "checkpoint/trunk_codec.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "common/progress_meter.h"
#include "io/aligned_buffer.h"

namespace k3 {

namespace {

// An xxh3 streaming state that is freed however its scope is left.
class Xxh3State {
 public:
  Xxh3State() : st_(XXH3_createState()) {}
  ~Xxh3State() { XXH3_freeState(st_); }
  Xxh3State(const Xxh3State&) = delete;
  Xxh3State& operator=(const Xxh3State&) = delete;
  XXH3_state_t* get() const { return st_; }

 private:
  XXH3_state_t* st_;
};

constexpr uint64_t kChunk = 16u << 20;

// Opened shard files, by index into Checkpoint::shards().
class ShardFiles {
 public:
  explicit ShardFiles(const Checkpoint& c) : c_(c), files_(c.shards().size()) {}
  const File& at(uint32_t i) {
    if (!files_[i]) files_[i] = std::make_unique<File>(File::open_read(c_.shards()[i].path));
    return *files_[i];
  }

 private:
  const Checkpoint& c_;
  std::vector<std::unique_ptr<File>> files_;
};

// Produces the bytes of `section` in file order (tensors from the shards,
// zero padding between them) in chunks: sink(section-relative offset, data, n).
void stream_section(const TrunkSection& s, const Checkpoint& c, ShardFiles& files, std::vector<uint8_t>& buf,
                    const std::function<void(uint64_t, const uint8_t*, uint64_t)>& sink) {
  static const std::vector<uint8_t> zeros(1 << 16, 0);
  uint64_t pos = s.offset;
  auto pad_to = [&](uint64_t end) {
    while (pos < end) {
      uint64_t n = std::min<uint64_t>(zeros.size(), end - pos);
      sink(pos - s.offset, zeros.data(), n);
      pos += n;
    }
  };
  for (const TrunkTensor& t : s.tensors) {
    pad_to(t.offset);
    const TensorLocation& loc = c.at(t.name);
    const File& f = files.at(loc.shard);
    for (uint64_t done = 0; done < t.nbytes; done += kChunk) {
      uint64_t n = std::min<uint64_t>(kChunk, t.nbytes - done);
      f.pread_exact(buf.data(), n, loc.info->offset + done);
      sink(pos - s.offset, buf.data(), n);
      pos += n;
    }
  }
  pad_to(s.offset + s.length);
}

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

// The floating-point trunk tensors, for a NaN/Inf scan of trunk.bin's bytes.
NonFiniteScan trunk_float_scan(const TrunkLayout& t) {
  std::vector<NonFiniteScan::Span> spans;
  for (const TrunkSection& s : t.sections)
    for (const TrunkTensor& x : s.tensors) spans.push_back({x.name, x.dtype, x.offset, x.nbytes});
  return NonFiniteScan(std::move(spans));
}

// Feeds the decoded bytes of compressed section `s` (padding included) to
// `st` and to `scan` in order, reading its blocks from `f` a few MB at a
// time. Returns the first damaged block's description, or an empty string.
std::string hash_compressed_section(const File& f, const TrunkSection& s, XXH3_state_t* st, NonFiniteScan& scan,
                                    const std::function<void(uint64_t)>& advanced) {
  static const std::vector<uint8_t> zeros(1 << 16, 0);
  auto feed_zeros = [&](uint64_t n) {
    for (uint64_t k = 0; k < n; k += zeros.size()) XXH3_64bits_update(st, zeros.data(), std::min<uint64_t>(zeros.size(), n - k));
    advanced(n);
  };
  TrunkBlockDecoder decoder;
  std::vector<uint8_t> stored, decoded;
  uint64_t pos = s.offset;
  for (size_t first = 0; first < s.blocks.size();) {
    // A run of blocks of at most kChunk stored bytes (at least one block).
    size_t last = first + 1;
    while (last < s.blocks.size() && s.blocks[last].stored_offset + s.blocks[last].stored_size -
                                             s.blocks[first].stored_offset <= kChunk)
      ++last;
    const StoredSpan span = stored_span(s, BlockRange{first, last});
    stored.resize(span.length);
    f.pread_exact(stored.data(), span.length, span.offset);
    for (size_t i = first; i < last; ++i) {
      const TrunkBlock& b = s.blocks[i];
      if (b.offset > pos) feed_zeros(b.offset - pos);
      decoded.resize(b.size);
      const std::string err = decode_blocks(s, BlockRange{i, i + 1}, stored.data(), span.offset, decoded.data(), b.offset, decoder);
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
                                             format_bytes(avail) + " is free there; free space or pick another TRUNK_DIR");
    }
  }
  // The new trunk is written under temporary names beside any old one, which
  // stays usable until both new files are complete; then they are swapped in.
  const uint64_t fail_after = test_fail_after_bytes();
  check_output_path(json, OutputPolicy::kRegularFile);  // refused now, not after the work
  t.version = kTrunkFormatVersion;
  if (options.compress) t.block_bytes = kTrunkBlockBytes;
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
        if (s.compressed) {
          // Tensor bytes come in chunks that start a multiple of kChunk into
          // their tensor, and kChunk is a multiple of the block size, so a
          // chunk is cut into whole blocks; padding is not stored.
          while (tensor < s.tensors.size() && s.tensors[tensor].offset + s.tensors[tensor].nbytes <= abs) ++tensor;
          if (tensor == s.tensors.size() || abs < s.tensors[tensor].offset) return;
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
                                             "; the checkpoint is damaged (check it with k3-fetch-verify verify --full, "
                                             "re-download the shard); no trunk was written");
      if (s.compressed) {
        s.stored_length = align_up(wpos - s.stored_offset);
        if (!place_trunk_blocks(s, t.block_bytes))
          throw Error(ExitCode::kInternal, "section " + s.name + ": blocks written do not match its tensors");
      } else {
        s.stored_length = s.length;
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

TrunkCheck check_trunk(const std::string& trunk_dir, const Checkpoint& checkpoint,
                       const std::function<void(uint64_t, uint64_t)>& progress) {
  const std::string bin = path_join(trunk_dir, "trunk.bin");
  TrunkLayout t = read_trunk_layout(trunk_dir);
  TrunkCheck r;
  const FingerprintComparison cmp = compare_fingerprint(t.source, fingerprint_checkpoint(checkpoint));
  if (cmp.diff != FingerprintDiff::kSame) r.problems.push_back("fingerprint: " + cmp.reason);
  if (cmp.diff == FingerprintDiff::kShardsChanged) r.shards_changed = cmp.reason;
  File f = File::open_read(bin);
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
  NonFiniteScan non_finite = trunk_float_scan(t);
  for (const TrunkSection& s : t.sections) {
    // The packed bytes (decoded, block by block, for a compressed section).
    uint64_t h_bin = 0;
    bool bin_ok = s.stored_offset + s.stored_length <= size;
    std::string block_err;
    if (bin_ok) {
      Xxh3State hash;  // freed on every path, a failed write included
      XXH3_state_t* st = hash.get();
      XXH3_64bits_reset(st);
      if (s.compressed)
        block_err = hash_compressed_section(f, s, st, non_finite, [&](uint64_t n) {
          done += n;
          if (progress) progress(done, total);
        });
      else
        for (uint64_t o = 0; o < s.length; o += kChunk) {
          uint64_t n = std::min<uint64_t>(kChunk, s.length - o);
          f.pread_exact(buf.data(), n, s.stored_offset + o);
          XXH3_64bits_update(st, buf.data(), n);
          non_finite.feed(s.offset + o, buf.data(), n);
          done += n;
          if (progress) progress(done, total);
        }
      h_bin = XXH3_64bits_digest(st);
    }
    // The same bytes gathered from the checkpoint.
    uint64_t h_src = 0;
    std::string src_err;
    try {
      Xxh3State hash;  // freed on every path, a failed write included
      XXH3_state_t* st = hash.get();
      XXH3_64bits_reset(st);
      stream_section(s, checkpoint, files, buf, [&](uint64_t, const uint8_t* p, uint64_t n) {
        XXH3_64bits_update(st, p, n);
        done += n;
        if (progress) progress(done, total);
      });
      h_src = XXH3_64bits_digest(st);
    } catch (const Error& e) {
      src_err = e.what();
    }
    r.bytes_checked += s.length;
    if (!bin_ok)
      r.problems.push_back(s.name + ": lies beyond the end of trunk.bin (truncated)");
    else if (!block_err.empty())
      r.problems.push_back(block_err);
    else if (h_bin != s.xxh3)
      r.problems.push_back(s.name + ": trunk.bin bytes differ from the hash recorded in trunk.json");
    if (!src_err.empty())
      r.problems.push_back(s.name + ": cannot read the source tensors: " + src_err);
    else if (h_src != s.xxh3)
      r.problems.push_back(s.name + ": the checkpoint's tensors differ from what was packed");
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
    r.problems.push_back("fingerprint: " + cmp.reason + " (nothing to refresh: re-run k3-pack)");
    return r;
  }
  if (cmp.diff == FingerprintDiff::kSame) return r;
  r.shards_changed = cmp.reason;
  struct stat st;
  const std::string bin = path_join(trunk_dir, "trunk.bin");
  if (::stat(bin.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != t.file_size) {
    r.problems.push_back("trunk.bin: missing or not the size trunk.json records (re-run k3-pack)");
    return r;
  }
  std::vector<bool> changed(checkpoint.shards().size(), !t.source.has_identity);
  for (size_t i = 0; i < changed.size(); ++i)
    for (const std::string& f : cmp.changed_shards) changed[i] = changed[i] || checkpoint.shards()[i].file == f;
  std::vector<const TrunkSection*> todo;
  uint64_t total = 0;
  for (const TrunkSection& s : t.sections) {
    bool touched = false;
    for (const TrunkTensor& x : s.tensors) touched = touched || changed[checkpoint.at(x.name).shard];
    if (!touched) continue;
    todo.push_back(&s);
    total += s.length;
  }
  ShardFiles files(checkpoint);
  std::vector<uint8_t> buf(kChunk);
  uint64_t done = 0;
  for (const TrunkSection* s : todo) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    try {
      stream_section(*s, checkpoint, files, buf, [&](uint64_t, const uint8_t* p, uint64_t n) {
        XXH3_64bits_update(st, p, n);
        done += n;
        if (progress) progress(done, total);
      });
    } catch (...) {
      XXH3_freeState(st);
      throw;
    }
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    r.bytes_checked += s->length;
    if (h != s->xxh3) r.problems.push_back(s->name + ": the checkpoint's tensors differ from what was packed (re-run k3-pack)");
  }
  if (!r.problems.empty()) return r;
  t.version = kTrunkFormatVersion;
  t.source = now;
  const std::string text = trunk_layout_to_json(t);
  write_file_atomic(path_join(trunk_dir, "trunk.json"), text.data(), text.size());
  r.refreshed = true;
  return r;
}

}  // namespace k3
