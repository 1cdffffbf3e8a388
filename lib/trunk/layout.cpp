#include "trunk/layout.h"

#include <sys/stat.h>

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "common/json_writer.h"
#include "trunk/codec.h"
#include "trunk/pack_command.h"

namespace k3 {

const TrunkSection* TrunkLayout::layer_section(int layer) const {
  for (const TrunkSection& s : sections)
    if (s.layer == layer) return &s;
  return nullptr;
}

const TrunkSection* TrunkLayout::section(const std::string& name) const {
  for (const TrunkSection& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

uint64_t TrunkLayout::layer_bytes() const {
  uint64_t n = 0;
  for (const TrunkSection& s : sections)
    if (s.layer >= 0) n += s.length;
  return n;
}

uint64_t TrunkLayout::layer_stored_bytes() const {
  uint64_t n = 0;
  for (const TrunkSection& s : sections)
    if (s.layer >= 0) n += s.stored_length;
  return n;
}

bool TrunkLayout::compressed() const {
  for (const TrunkSection& s : sections)
    if (s.compressed) return true;
  return false;
}

bool place_trunk_blocks(TrunkSection& s, uint64_t block_bytes) {
  if (block_bytes == 0) return false;
  size_t b = 0;
  uint64_t stored = s.stored_offset, decoded_end = s.offset;
  for (const TrunkTensor& t : s.tensors) {
    // Block lookups (blocks_covering) search the blocks as sorted by decoded
    // offset: tensors must come in ascending order, without overlap.
    if (t.offset < decoded_end) return false;
    decoded_end = t.offset + t.nbytes;
    for (uint64_t done = 0; done < t.nbytes; done += block_bytes) {
      if (b == s.blocks.size()) return false;
      TrunkBlock& k = s.blocks[b++];
      // Blocks fill the section's stored bytes in order; checked before the
      // sum so that hostile sizes cannot wrap it.
      if (k.stored_size > s.stored_offset + s.stored_length - stored) return false;
      k.offset = t.offset + done;
      k.size = std::min(block_bytes, t.nbytes - done);
      k.stored_offset = stored;
      stored += k.stored_size;
    }
  }
  return b == s.blocks.size();
}

bool place_raw_blocks(TrunkSection& s, uint64_t block_bytes) {
  if (block_bytes == 0 || s.compressed) return false;
  size_t b = 0;
  uint64_t decoded_end = s.offset;
  for (const TrunkTensor& t : s.tensors) {
    if (t.offset < decoded_end) return false;  // sorted, as for place_trunk_blocks
    decoded_end = t.offset + t.nbytes;
    for (uint64_t done = 0; done < t.nbytes; done += block_bytes) {
      if (b == s.blocks.size()) return false;
      TrunkBlock& k = s.blocks[b++];
      k.offset = t.offset + done;
      k.size = k.stored_size = std::min(block_bytes, t.nbytes - done);
      k.stored_offset = s.stored_offset + (k.offset - s.offset);  // within stored_length == length (parsed)
    }
  }
  return b == s.blocks.size();
}

namespace {
std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

void write_source(JsonWriter& w, const TrunkLayout& t) {
  w.key("source").begin_object();
  w.key("config_xxh3").value(hex64(t.source.config_hash));
  w.key("shards").begin_array();
  for (const SourceShard& sh : t.source.shards) {
    w.inline_next().begin_object();
    w.key("file").value(sh.file).key("size").value(static_cast<unsigned long long>(sh.size));
    if (t.version >= 2) {
      w.key("header_xxh3").value(hex64(sh.header_xxh3));
      w.key("mtime_ns").value(static_cast<long long>(sh.mtime_ns));
      w.key("inode").value(static_cast<unsigned long long>(sh.inode));
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// A compressed block is [stored bytes, xxh3 of the decoded bytes]; a raw
// block is stored as it decodes, so its xxh3 alone.
void write_blocks(JsonWriter& w, const TrunkSection& s) {
  w.key("blocks").begin_array();
  for (const TrunkBlock& b : s.blocks) {
    if (s.compressed)
      w.inline_next()
          .begin_array()
          .value(static_cast<unsigned long long>(b.stored_size))
          .value(hex64(b.xxh3))
          .end_array();
    else w.value(hex64(b.xxh3));
  }
  w.end_array();
}

void write_section(JsonWriter& w, const TrunkSection& s, int version) {
  w.begin_object();
  w.key("name").value(s.name).key("layer").value(s.layer);
  w.key("offset").value(static_cast<unsigned long long>(s.offset));
  w.key("length").value(static_cast<unsigned long long>(s.length)).key("xxh3").value(hex64(s.xxh3));
  if (version >= kTrunkStoredFieldsVersion) {
    w.key("stored_offset").value(static_cast<unsigned long long>(s.stored_offset));
    w.key("stored_length").value(static_cast<unsigned long long>(s.stored_length));
    w.key("compressed").value(s.compressed);
    if (s.compressed || version >= kTrunkBlockHashesVersion) write_blocks(w, s);
  }
  w.key("tensors").begin_array();
  for (const TrunkTensor& x : s.tensors) {
    w.inline_next().begin_object().key("name").value(x.name).key("dtype").value(dtype_name(x.dtype));
    w.key("shape").begin_array();
    for (uint64_t d : x.shape) w.value(static_cast<unsigned long long>(d));
    w.end_array();
    w.key("offset").value(static_cast<unsigned long long>(x.offset));
    w.key("nbytes").value(static_cast<unsigned long long>(x.nbytes));
    w.end_object();
  }
  w.end_array();
  w.end_object();
}
}  // namespace

std::string trunk_layout_to_json(const TrunkLayout& t) {
  JsonWriter w(2);
  w.begin_object();
  w.key("format").value("k3-trunk").key("version").value(t.version);
  w.key("file_size").value(static_cast<unsigned long long>(t.file_size));
  if (t.version >= kTrunkStoredFieldsVersion)
    w.key("block_bytes").value(static_cast<unsigned long long>(t.block_bytes));
  write_source(w, t);
  w.key("sections").begin_array();
  for (const TrunkSection& s : t.sections) write_section(w, s, t.version);
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

namespace {

using JsonElement = simdjson::simdjson_result<simdjson::dom::element>;

// Reads trunk.json's parts in the order they are checked; every refusal
// names the file and says to re-pack.
class LayoutParser {
 public:
  explicit LayoutParser(const std::string& origin) : origin_(origin) {}

  Error bad(const std::string& what) const {
    return Error(ExitCode::kBadModel, origin_ + ": " + what + " " + rerun_pack_hint());
  }
  uint64_t hex(JsonElement e, const char* what) const {
    std::string_view s;
    if (e.get_string().get(s) || s.size() != 16 ||
        s.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
      throw bad(std::string("bad ") + what);
    return std::stoull(std::string(s), nullptr, 16);
  }

  // format, version, file_size and block_bytes.
  void header(simdjson::dom::element root, TrunkLayout& t) const {
    std::string_view fmt;
    if (root["format"].get_string().get(fmt) || fmt != "k3-trunk") throw bad("not a k3 trunk description");
    int64_t version = 0;
    if (root["version"].get_int64().get(version)) throw bad("missing trunk format version");
    if (version < 1 || version > kTrunkFormatVersion)
      throw Error(ExitCode::kBadModel, origin_ + ": unsupported trunk format version " + std::to_string(version) +
                                           " (this k3 reads versions 1 to " + std::to_string(kTrunkFormatVersion) +
                                           "; re-run " + spelled(kPackTrunk) + " with this k3)");
    t.version = static_cast<int>(version);
    t.source.has_identity = t.version >= 2;
    if (root["file_size"].get_uint64().get(t.file_size)) throw bad("missing file_size");
    if (t.version >= kTrunkStoredFieldsVersion &&
        (root["block_bytes"].get_uint64().get(t.block_bytes) || t.block_bytes > (1ull << 30)))
      throw bad("missing or bad block_bytes");
    if (t.version >= kTrunkBlockHashesVersion && (t.block_bytes == 0 || t.block_bytes % 4096))
      throw bad("block_bytes " + std::to_string(t.block_bytes) + " is not a positive multiple of 4096");
  }

  // The checkpoint the trunk was packed from: config hash and shards.
  void source(simdjson::dom::element root, TrunkLayout& t) const {
    t.source.config_hash = hex(root["source"]["config_xxh3"], "source.config_xxh3");
    simdjson::dom::array shards;
    if (root["source"]["shards"].get_array().get(shards)) throw bad("missing source.shards");
    for (auto s : shards) {
      std::string_view f;
      SourceShard sh;
      if (s["file"].get_string().get(f) || s["size"].get_uint64().get(sh.size)) throw bad("bad source.shards entry");
      sh.file = std::string(f);
      if (t.version >= 2) {
        sh.header_xxh3 = hex(s["header_xxh3"], "source.shards header_xxh3");
        if (s["mtime_ns"].get_int64().get(sh.mtime_ns) || s["inode"].get_uint64().get(sh.inode))
          throw bad("source.shards entry '" + sh.file + "' lacks mtime_ns or inode");
      }
      t.source.shards.push_back(std::move(sh));
    }
  }

  TrunkSection section(simdjson::dom::element se, const TrunkLayout& t) const {
    TrunkSection s = section_extent(se, t);
    tensors(se, s);
    if (s.compressed) compressed_blocks(se, s, t.block_bytes);
    else if (t.version >= kTrunkBlockHashesVersion) raw_blocks(se, s, t.block_bytes);
    return s;
  }

 private:
  // A section's name, layer, hash and where it lies, decoded and stored.
  TrunkSection section_extent(simdjson::dom::element se, const TrunkLayout& t) const {
    TrunkSection s;
    std::string_view name;
    int64_t layer;
    if (se["name"].get_string().get(name) || se["layer"].get_int64().get(layer) ||
        se["offset"].get_uint64().get(s.offset) || se["length"].get_uint64().get(s.length))
      throw bad("bad section entry");
    s.name = std::string(name);
    s.layer = static_cast<int>(layer);
    s.xxh3 = hex(se["xxh3"], "section xxh3");
    s.stored_offset = s.offset;
    s.stored_length = s.length;
    if (t.version >= kTrunkStoredFieldsVersion) {
      if (se["stored_offset"].get_uint64().get(s.stored_offset) ||
          se["stored_length"].get_uint64().get(s.stored_length) || se["compressed"].get_bool().get(s.compressed))
        throw bad("section '" + s.name + "' lacks stored_offset, stored_length or compressed");
      if (!s.compressed && s.stored_length != s.length)
        throw bad("raw section '" + s.name + "' has a stored length other than its length");
    }
    if (s.offset % 4096 || s.length % 4096 || s.stored_offset % 4096 || s.stored_length % 4096 ||
        s.stored_offset > t.file_size || s.stored_length > t.file_size - s.stored_offset)
      throw bad("section '" + s.name + "' is misaligned or lies outside trunk.bin");
    if (s.offset > UINT64_MAX / 2 || s.length > UINT64_MAX / 2)
      throw bad("section '" + s.name + "' has an impossible offset or length");
    return s;
  }

  // The section's tensors: inside it, their shapes matching their sizes,
  // in ascending order without overlap (readers look them up so sorted).
  void tensors(simdjson::dom::element se, TrunkSection& s) const {
    simdjson::dom::array tensors;
    if (se["tensors"].get_array().get(tensors)) throw bad("section '" + s.name + "' has no tensors");
    uint64_t tensors_end = s.offset;  // where the previous tensor ends
    for (auto te : tensors) {
      TrunkTensor x = tensor(te, s);
      if (x.offset < tensors_end) {
        const TrunkTensor& prev = s.tensors.back();
        throw bad("tensor '" + x.name + "' at offset " + std::to_string(x.offset) + " and tensor '" + prev.name +
                  "' before it (offset " + std::to_string(prev.offset) + ", " + std::to_string(prev.nbytes) +
                  " bytes) overlap or are out of order in section '" + s.name + "'");
      }
      tensors_end = x.offset + x.nbytes;
      s.tensors.push_back(std::move(x));
    }
  }

  TrunkTensor tensor(simdjson::dom::element te, const TrunkSection& s) const {
    TrunkTensor x;
    std::string_view tn, dt;
    simdjson::dom::array shape;
    if (te["name"].get_string().get(tn) || te["dtype"].get_string().get(dt) || te["shape"].get_array().get(shape) ||
        te["offset"].get_uint64().get(x.offset) || te["nbytes"].get_uint64().get(x.nbytes))
      throw bad("bad tensor entry in section '" + s.name + "'");
    x.name = std::string(tn);
    if (!parse_dtype(std::string(dt), &x.dtype)) throw bad("unknown dtype for '" + x.name + "'");
    unsigned __int128 numel = 1;  // no wrap-around for absurd shapes
    for (auto d : shape) {
      uint64_t v;
      if (d.get_uint64().get(v)) throw bad("bad shape for '" + x.name + "'");
      x.shape.push_back(v);
      numel *= v;
      if (numel >> 64) throw bad("shape of '" + x.name + "' is too large");
    }
    if (numel * dtype_size(x.dtype) != x.nbytes || x.offset < s.offset || x.nbytes > s.length ||
        x.offset - s.offset > s.length - x.nbytes)
      throw bad("tensor '" + x.name + "' lies outside its section or disagrees with its shape");
    return x;
  }

  void compressed_blocks(simdjson::dom::element se, TrunkSection& s, uint64_t block_bytes) const {
    simdjson::dom::array blocks;
    if (se["blocks"].get_array().get(blocks)) throw bad("compressed section '" + s.name + "' has no blocks");
    for (auto be : blocks) {
      simdjson::dom::array pair;
      TrunkBlock k;
      if (be.get_array().get(pair) || pair.size() != 2 || pair.at(0).get_uint64().get(k.stored_size))
        throw bad("bad block entry in section '" + s.name + "'");
      k.xxh3 = hex(pair.at(1), "block xxh3");
      s.blocks.push_back(k);
    }
    if (!place_trunk_blocks(s, block_bytes))
      throw bad("the blocks of section '" + s.name + "' do not match its tensors or its stored length");
  }

  void raw_blocks(simdjson::dom::element se, TrunkSection& s, uint64_t block_bytes) const {
    simdjson::dom::array blocks;
    if (se["blocks"].get_array().get(blocks)) throw bad("section '" + s.name + "' has no blocks");
    for (auto be : blocks) {
      TrunkBlock k;
      k.xxh3 = hex(JsonElement(simdjson::dom::element(be)), "block xxh3");
      s.blocks.push_back(k);
    }
    if (!place_raw_blocks(s, block_bytes)) throw bad("the blocks of section '" + s.name + "' do not match its tensors");
  }

  const std::string& origin_;
};

}  // namespace

TrunkLayout parse_trunk_layout(const std::string& json, const std::string& origin) {
  const LayoutParser p(origin);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root)) throw p.bad("not valid JSON");
  TrunkLayout t;
  p.header(root, t);
  p.source(root, t);
  simdjson::dom::array sections;
  if (root["sections"].get_array().get(sections)) throw p.bad("missing sections");
  for (auto se : sections) t.sections.push_back(p.section(se, t));
  // The block decoder's buffers hold blocks of kTrunkBlockBytes, the one
  // size k3-pack cuts; another block_bytes describes blocks that are not
  // there (refused here, where k3-doctor reads trunk.json too, not midway
  // through a run).
  if (t.compressed() && t.block_bytes != kTrunkBlockBytes)
    throw p.bad("block_bytes is " + std::to_string(t.block_bytes) +
                ", but compressed sections are cut into blocks of " + std::to_string(kTrunkBlockBytes) + " bytes " +
                rerun_pack_hint(true));
  return t;
}

SourceFingerprint fingerprint_checkpoint(const Checkpoint& checkpoint) {
  SourceFingerprint f;
  std::string cfg = read_text_file(path_join(checkpoint.dir(), "config.json"));
  f.config_hash = XXH3_64bits(cfg.data(), cfg.size());
  for (const ShardInfo& s : checkpoint.shards())
    f.shards.push_back(SourceShard{s.file, s.file_size, s.header_xxh3, s.mtime_ns, s.inode});
  return f;
}

namespace {
std::string time_str(int64_t ns) {
  const time_t sec = static_cast<time_t>(ns / 1000000000);
  struct tm tm;
  char b[32];
  if (!gmtime_r(&sec, &tm) || !std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm)) return std::to_string(ns);
  return b;
}
}  // namespace

FingerprintComparison compare_fingerprint(const SourceFingerprint& trunk, const SourceFingerprint& model) {
  FingerprintComparison c;
  auto other = [&](std::string why) {
    c.diff = FingerprintDiff::kOtherModel;
    c.reason = std::move(why);
    c.changed_shards.clear();
    return c;
  };
  if (trunk.config_hash != model.config_hash) return other("it was packed from a model with a different config.json");
  for (const SourceShard& t : trunk.shards) {
    bool found = false;
    for (const SourceShard& m : model.shards) found = found || m.file == t.file;
    if (!found)
      return other("it was packed from a checkpoint with shard " + t.file + ", which this model does not list");
  }
  if (model.shards.size() != trunk.shards.size()) return other("the model's shard list differs from the one packed");
  auto model_shard = [&](const SourceShard& t) -> const SourceShard& {
    for (const SourceShard& x : model.shards)
      if (x.file == t.file) return x;
    return t;  // not reached: every name was found above
  };
  // A shard of another size holds other tensors or other offsets.
  for (const SourceShard& t : trunk.shards) {
    const SourceShard& m = model_shard(t);
    if (m.size != t.size)
      return other("shard " + t.file + " is " + std::to_string(m.size) + " bytes now but was " +
                   std::to_string(t.size) + " when the trunk was packed");
  }
  // Same files and sizes: now whether any shard changed since the pack. The
  // first difference found is the one reported; every changed shard is listed.
  for (const SourceShard& t : trunk.shards) {
    const SourceShard* m = &model_shard(t);
    std::string why;
    if (!trunk.has_identity)
      why =
          "the trunk.json is format version 1, which records only shard names and sizes, so a shard rewritten in "
          "place since the pack would go unnoticed";
    else if (m->header_xxh3 != t.header_xxh3)
      why = "shard " + t.file + "'s safetensors header differs from the one packed (the shard was replaced)";
    else if (m->mtime_ns != t.mtime_ns)
      why = "shard " + t.file + " was modified after the trunk was packed (modification time " + time_str(m->mtime_ns) +
            ", was " + time_str(t.mtime_ns) + "; same size and header, but its weights may have changed)";
    else if (m->inode != t.inode)
      why = "shard " + t.file + " is another file than the one packed (inode " + std::to_string(m->inode) + ", was " +
            std::to_string(t.inode) + "; copied or restored since the pack?)";
    if (why.empty()) continue;
    if (c.diff == FingerprintDiff::kSame) {
      c.diff = FingerprintDiff::kShardsChanged;
      c.reason = why;
    }
    c.changed_shards.push_back(t.file);
  }
  return c;
}

TrunkLayout read_trunk_layout(const std::string& trunk_dir) {
  const std::string json = path_join(trunk_dir, "trunk.json");
  if (!file_exists(json))
    throw Error(ExitCode::kBadModel, json + ": not found (is " + trunk_dir + " a packed trunk? create one with: " +
                                         spelled(kPackTrunk) + " MODEL_DIR " + trunk_dir + ")");
  return parse_trunk_layout(read_text_file(json), json);
}

TrunkLayout open_trunk_layout(const std::string& trunk_dir, const Checkpoint& checkpoint) {
  const std::string bin = path_join(trunk_dir, "trunk.bin");
  TrunkLayout t = read_trunk_layout(trunk_dir);
  const FingerprintComparison cmp = compare_fingerprint(t.source, fingerprint_checkpoint(checkpoint));
  if (cmp.diff == FingerprintDiff::kOtherModel)
    throw Error(ExitCode::kBadModel, "the trunk in " + trunk_dir + " does not belong to the model in " +
                                         checkpoint.dir() + ": " + cmp.reason + " (re-run " + spelled(kPackTrunk) +
                                         " " + checkpoint.dir() + " " + trunk_dir + ")");
  if (cmp.diff == FingerprintDiff::kShardsChanged)
    throw Error(ExitCode::kBadModel, "the trunk in " + trunk_dir + " may be stale: " + cmp.reason + ". Re-run " +
                                         spelled(kPackTrunk) + " " + checkpoint.dir() + " " + trunk_dir +
                                         ", or if the weights are unchanged, " + spelled(kRefreshTrunk) + " " +
                                         trunk_dir + " " + checkpoint.dir() +
                                         " re-checks the trunk tensors of the changed shards "
                                         "and records them");
  if (t.version < kTrunkBlockHashesVersion)
    throw Error(ExitCode::kBadModel,
                path_join(trunk_dir, "trunk.json") + ": trunk format version " + std::to_string(t.version) +
                    " has no per-block hashes, which this k3 checks as it reads each block (instead of hashing "
                    "the trunk before every run); upgrade it in place with: " +
                    spelled(kRefreshTrunk) + " " + trunk_dir + " " + checkpoint.dir() +
                    " (reads trunk.bin once), or rewrite it with: " + repack_command(t.compressed()) + " " +
                    checkpoint.dir() + " " + trunk_dir);
  struct stat st;
  if (::stat(bin.c_str(), &st) != 0) throw Error(ExitCode::kBadModel, bin + ": not found " + rerun_pack_hint());
  if (static_cast<uint64_t>(st.st_size) != t.file_size)
    throw Error(ExitCode::kBadModel, bin + ": is " + std::to_string(st.st_size) + " bytes but trunk.json says " +
                                         std::to_string(t.file_size) + " (truncated or replaced; re-run " +
                                         spelled(kPackTrunk) + ")");
  return t;
}

}  // namespace k3
