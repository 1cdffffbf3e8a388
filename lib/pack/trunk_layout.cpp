#include "pack/trunk_layout.h"

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"

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
  uint64_t stored = s.stored_offset;
  for (const TrunkTensor& t : s.tensors)
    for (uint64_t done = 0; done < t.nbytes; done += block_bytes) {
      if (b == s.blocks.size()) return false;
      TrunkBlock& k = s.blocks[b++];
      if (k.stored_size > s.stored_length) return false;
      k.offset = t.offset + done;
      k.size = std::min(block_bytes, t.nbytes - done);
      k.stored_offset = stored;
      stored += k.stored_size;
    }
  return b == s.blocks.size() && stored <= s.stored_offset + s.stored_length;
}

namespace {
std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}
std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}
}  // namespace

std::string trunk_layout_to_json(const TrunkLayout& t) {
  std::string o = "{\n  \"format\": \"k3-trunk\",\n  \"version\": " + std::to_string(t.version) +
                  ",\n  \"file_size\": " + std::to_string(t.file_size) +
                  (t.version >= 2 ? ",\n  \"block_bytes\": " + std::to_string(t.block_bytes) : std::string()) +
                  ",\n  \"source\": {\n    \"config_xxh3\": \"" +
                  hex64(t.source.config_hash) + "\",\n    \"shards\": [";
  for (size_t i = 0; i < t.source.shards.size(); ++i)
    o += std::string(i ? "," : "") + "\n      {\"file\": " + quoted(t.source.shards[i].first) +
         ", \"size\": " + std::to_string(t.source.shards[i].second) + "}";
  o += "\n    ]\n  },\n  \"sections\": [";
  for (size_t i = 0; i < t.sections.size(); ++i) {
    const TrunkSection& s = t.sections[i];
    o += std::string(i ? "," : "") + "\n    {\"name\": " + quoted(s.name) + ", \"layer\": " + std::to_string(s.layer) +
         ", \"offset\": " + std::to_string(s.offset) + ", \"length\": " + std::to_string(s.length) +
         ", \"xxh3\": \"" + hex64(s.xxh3) + "\",";
    if (t.version >= 2) {
      o += "\n     \"stored_offset\": " + std::to_string(s.stored_offset) +
           ", \"stored_length\": " + std::to_string(s.stored_length) + ", \"compressed\": " +
           (s.compressed ? "true" : "false") + ",";
      if (s.compressed) {
        // [stored bytes, xxh3 of the decoded bytes], four to a line.
        o += "\n     \"blocks\": [";
        for (size_t b = 0; b < s.blocks.size(); ++b)
          o += std::string(b ? "," : "") + (b % 4 == 0 ? "\n       " : " ") + "[" +
               std::to_string(s.blocks[b].stored_size) + ", \"" + hex64(s.blocks[b].xxh3) + "\"]";
        o += "],";
      }
    }
    o += "\n     \"tensors\": [";
    for (size_t j = 0; j < s.tensors.size(); ++j) {
      const TrunkTensor& x = s.tensors[j];
      o += std::string(j ? "," : "") + "\n       {\"name\": " + quoted(x.name) + ", \"dtype\": \"" +
           dtype_name(x.dtype) + "\", \"shape\": [";
      for (size_t d = 0; d < x.shape.size(); ++d) o += (d ? ", " : "") + std::to_string(x.shape[d]);
      o += "], \"offset\": " + std::to_string(x.offset) + ", \"nbytes\": " + std::to_string(x.nbytes) + "}";
    }
    o += "]}";
  }
  o += "\n  ]\n}\n";
  return o;
}

TrunkLayout parse_trunk_layout(const std::string& json, const std::string& origin) {
  auto bad = [&](const std::string& what) -> Error {
    return Error(ExitCode::kBadModel, origin + ": " + what + " (re-run k3-pack)");
  };
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root)) throw bad("not valid JSON");
  std::string_view fmt;
  if (root["format"].get_string().get(fmt) || fmt != "k3-trunk") throw bad("not a k3 trunk description");
  TrunkLayout t;
  int64_t version = 0;
  if (root["version"].get_int64().get(version) || version < 1 || version > 2)
    throw Error(ExitCode::kBadModel, origin + ": unsupported trunk format version " + std::to_string(version) +
                                         " (this k3 reads versions 1 and 2; re-run k3-pack with this k3)");
  t.version = static_cast<int>(version);
  if (root["file_size"].get_uint64().get(t.file_size)) throw bad("missing file_size");
  if (t.version >= 2 && (root["block_bytes"].get_uint64().get(t.block_bytes) || t.block_bytes == 0 ||
                         t.block_bytes > (1ull << 30)))
    throw bad("missing or bad block_bytes");
  auto parse_hex = [&](simdjson::dom::element e, const char* what) {
    std::string_view s;
    if (e.get_string().get(s) || s.size() != 16) throw bad(std::string("bad ") + what);
    return std::stoull(std::string(s), nullptr, 16);
  };
  t.source.config_hash = parse_hex(root["source"]["config_xxh3"], "source.config_xxh3");
  simdjson::dom::array shards, sections;
  if (root["source"]["shards"].get_array().get(shards)) throw bad("missing source.shards");
  for (auto s : shards) {
    std::string_view f;
    uint64_t size;
    if (s["file"].get_string().get(f) || s["size"].get_uint64().get(size)) throw bad("bad source.shards entry");
    t.source.shards.emplace_back(std::string(f), size);
  }
  if (root["sections"].get_array().get(sections)) throw bad("missing sections");
  for (auto se : sections) {
    TrunkSection s;
    std::string_view name;
    int64_t layer;
    if (se["name"].get_string().get(name) || se["layer"].get_int64().get(layer) ||
        se["offset"].get_uint64().get(s.offset) || se["length"].get_uint64().get(s.length))
      throw bad("bad section entry");
    s.name = std::string(name);
    s.layer = static_cast<int>(layer);
    s.xxh3 = parse_hex(se["xxh3"], "section xxh3");
    s.stored_offset = s.offset;
    s.stored_length = s.length;
    if (t.version >= 2) {
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
    simdjson::dom::array tensors;
    if (se["tensors"].get_array().get(tensors)) throw bad("section '" + s.name + "' has no tensors");
    for (auto te : tensors) {
      TrunkTensor x;
      std::string_view tn, dt;
      simdjson::dom::array shape;
      if (te["name"].get_string().get(tn) || te["dtype"].get_string().get(dt) ||
          te["shape"].get_array().get(shape) || te["offset"].get_uint64().get(x.offset) ||
          te["nbytes"].get_uint64().get(x.nbytes))
        throw bad("bad tensor entry in section '" + s.name + "'");
      x.name = std::string(tn);
      if (!parse_dtype(std::string(dt), &x.dtype)) throw bad("unknown dtype for '" + x.name + "'");
      uint64_t numel = 1;
      for (auto d : shape) {
        uint64_t v;
        if (d.get_uint64().get(v)) throw bad("bad shape for '" + x.name + "'");
        x.shape.push_back(v);
        numel *= v;
      }
      if (numel * dtype_size(x.dtype) != x.nbytes || x.offset < s.offset ||
          x.offset + x.nbytes > s.offset + s.length)
        throw bad("tensor '" + x.name + "' lies outside its section or disagrees with its shape");
      s.tensors.push_back(std::move(x));
    }
    if (s.compressed) {
      simdjson::dom::array blocks;
      if (se["blocks"].get_array().get(blocks)) throw bad("compressed section '" + s.name + "' has no blocks");
      for (auto be : blocks) {
        simdjson::dom::array pair;
        TrunkBlock k;
        if (be.get_array().get(pair) || pair.size() != 2 || pair.at(0).get_uint64().get(k.stored_size))
          throw bad("bad block entry in section '" + s.name + "'");
        k.xxh3 = parse_hex(pair.at(1), "block xxh3");
        s.blocks.push_back(k);
      }
      if (!place_trunk_blocks(s, t.block_bytes))
        throw bad("the blocks of section '" + s.name + "' do not match its tensors or its stored length");
    }
    t.sections.push_back(std::move(s));
  }
  return t;
}

SourceFingerprint fingerprint_checkpoint(const Checkpoint& checkpoint) {
  SourceFingerprint f;
  std::string cfg = read_text_file(path_join(checkpoint.dir(), "config.json"));
  f.config_hash = XXH3_64bits(cfg.data(), cfg.size());
  for (const ShardInfo& s : checkpoint.shards()) f.shards.emplace_back(s.file, s.file_size);
  return f;
}

std::string fingerprint_mismatch(const SourceFingerprint& trunk, const SourceFingerprint& model) {
  if (trunk.config_hash != model.config_hash)
    return "it was packed from a model with a different config.json";
  for (const auto& [file, size] : trunk.shards) {
    bool found = false;
    for (const auto& [mf, ms] : model.shards) {
      if (mf != file) continue;
      found = true;
      if (ms != size)
        return "shard " + file + " is " + std::to_string(ms) + " bytes now but was " + std::to_string(size) +
               " when the trunk was packed";
    }
    if (!found) return "it was packed from a checkpoint with shard " + file + ", which this model does not list";
  }
  if (model.shards.size() != trunk.shards.size()) return "the model's shard list differs from the one packed";
  return std::string();
}

}  // namespace k3
