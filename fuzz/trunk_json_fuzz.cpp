// trunk.json, as k3-forward, k3-pack --check/--refresh and k3-doctor read it,
// and the engine's open path behind the parser: the tensor table checked
// against the layout k3-pack writes for the model (check_trunk_table, here
// for the bundled tiny model), then the block lookups and decodes a table
// that passed drives.
//
// Two kinds of input. Text starting with '{' is a trunk.json as it is.
// Anything else is a list of edits of the tables k3-pack writes for the tiny
// model (byte 0 picks the raw or the compressed one; then 8 bytes per edit:
// what, section, tensor, and a value): offsets moved or aliased, names,
// shapes and dtypes swapped, tensors reordered, dropped or duplicated,
// sections moved, stored offsets and block sizes changed. The edited table
// goes through the JSON writer and the parser like a file on disk.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fuzz_input.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "trunk/blocks.h"
#include "trunk/codec.h"
#include "trunk/layout.h"
#include "trunk/plan.h"
#include "trunk/table_check.h"

namespace {

const k3::TrunkLayout& expected() {
  static const k3::TrunkLayout t = k3::layout_trunk(k3::expected_tensors(k3::load_model_config(K3_FUZZ_TINY)));
  return t;
}

// Cuts raw section `s` into blocks as k3-pack does (hashes left 0).
void raw_blocks(k3::TrunkSection& s, uint64_t block_bytes) {
  uint64_t n = 0;
  for (const k3::TrunkTensor& x : s.tensors) n += (x.nbytes + block_bytes - 1) / block_bytes;
  s.blocks.assign(n, k3::TrunkBlock{});
  if (!k3::place_raw_blocks(s, block_bytes)) std::abort();
}

// The table k3-pack writes for `t` (no hashes).
k3::TrunkLayout raw(k3::TrunkLayout t) {
  for (k3::TrunkSection& s : t.sections) raw_blocks(s, t.block_bytes);
  return t;
}

// The table k3-pack --compress would write for `t` with every block stored
// in `stored` bytes (a stand-in for the codec's sizes).
k3::TrunkLayout compressed(k3::TrunkLayout t, uint64_t stored) {
  t.block_bytes = k3::kTrunkBlockBytes;
  uint64_t at = 0;
  for (k3::TrunkSection& s : t.sections) {
    s.stored_offset = at;
    s.compressed = s.name != "embedding";
    if (s.compressed) {
      uint64_t sum = 0;
      for (const k3::TrunkTensor& x : s.tensors)
        for (uint64_t d = 0; d < x.nbytes; d += t.block_bytes) {
          k3::TrunkBlock b;
          b.stored_size =
              std::min(stored, std::min<uint64_t>(t.block_bytes, x.nbytes - d) + k3::kTrunkBlockHeaderBytes);
          b.xxh3 = sum;
          sum += b.stored_size;
          s.blocks.push_back(b);
        }
      s.stored_length = (sum + 4095) / 4096 * 4096;
      if (!k3::place_trunk_blocks(s, t.block_bytes)) std::abort();
    } else {
      raw_blocks(s, t.block_bytes);
    }
    at += s.stored_length;
  }
  t.file_size = at;
  return t;
}

void edit(k3::TrunkLayout& t, const uint8_t* e) {
  if (t.sections.empty()) return;
  k3::TrunkSection& s = t.sections[e[1] % t.sections.size()];
  if (s.tensors.empty()) return;
  k3::TrunkTensor& x = s.tensors[e[2] % s.tensors.size()];
  k3::TrunkSection& s2 = t.sections[e[3] % t.sections.size()];
  k3::TrunkTensor& y = s2.tensors.empty() ? x : s2.tensors[e[4] % s2.tensors.size()];
  int32_t small;  // a signed amount from the edit's last 4 bytes
  std::memcpy(&small, e + 4, 4);
  switch (e[0] % 14) {
    case 0: x.offset += small; break;
    case 1: x.offset = y.offset; break;
    case 2: std::swap(x.name, y.name); break;
    case 3: std::swap(x, y); break;
    case 4: std::reverse(x.shape.begin(), x.shape.end()); break;
    case 5:
      std::swap(x.dtype, y.dtype);
      std::swap(x.shape, y.shape);
      std::swap(x.nbytes, y.nbytes);
      break;
    case 6: s.offset += static_cast<int64_t>(small) * 4096; break;
    case 7: s.stored_offset += static_cast<int64_t>(small) * 4096; break;
    case 8: std::swap(s, s2); break;
    case 9:
      if (s.blocks.size() > 1) {
        const size_t i = static_cast<size_t>(e[4]) % (s.blocks.size() - 1);
        s.blocks[i].stored_size += small;
        s.blocks[i + 1].stored_size -= small;
      }
      break;
    case 10: s.tensors.push_back(y); break;
    case 11:
      if (s.tensors.size() > 1) s.tensors.erase(s.tensors.begin() + e[2] % s.tensors.size());
      break;
    case 12: x.offset = s.offset + s.length - x.nbytes; break;  // moved to the section's end
    case 13: t.file_size += small; break;
  }
}

// What the engine does with a table that passed: block lookups over every
// tensor and over row ranges, and decodes into targets of the size the
// lookups give (garbage stored bytes: each decode fails or fills its
// target, never writes past it).
void use(const k3::TrunkLayout& t) {
  k3::TrunkBlockDecoder decoder;
  for (const k3::TrunkSection& s : t.sections) {
    if (!s.compressed) continue;
    for (const k3::TrunkTensor& x : s.tensors) {
      const k3::BlockRange r = k3::tensor_blocks(s, x);
      const k3::StoredSpan span = k3::stored_span(s, r);
      std::vector<uint8_t> stored(span.length, 0), dst(x.nbytes);
      (void)k3::decode_blocks(s, r, stored.data(), span.offset, stored.size(), dst.data(), x.offset, dst.size(),
                              decoder);
      const k3::DecodedRows d = k3::decoded_rows(s, x.offset + x.nbytes / 3, x.offset + x.nbytes / 2 + 1);
      std::vector<uint8_t> rows(d.bytes);
      const k3::StoredSpan rs = k3::stored_span(s, d.blocks);
      std::vector<uint8_t> rstored(rs.length, 0);
      (void)k3::decode_blocks(s, d.blocks, rstored.data(), rs.offset, rstored.size(), rows.data(), d.base, rows.size(),
                              decoder);
    }
  }
}

void open_path(const std::string& json) {
  const k3::TrunkLayout t = k3::parse_trunk_layout(json, "trunk.json");
  (void)t.layer_bytes();
  (void)t.section("head");
  k3::parse_trunk_layout(k3::trunk_layout_to_json(t), "round trip");
  k3::check_trunk_table(t, expected(), "trunk.json", "re-run k3-pack");
  // Accepted: the decoded table is the model's, field by field.
  const k3::TrunkLayout& e = expected();
  if (t.sections.size() != e.sections.size()) std::abort();
  for (size_t i = 0; i < e.sections.size(); ++i) {
    const k3::TrunkSection &a = t.sections[i], &b = e.sections[i];
    if (a.name != b.name || a.offset != b.offset || a.length != b.length || a.tensors.size() != b.tensors.size())
      std::abort();
    for (size_t j = 0; j < b.tensors.size(); ++j)
      if (a.tensors[j].name != b.tensors[j].name || a.tensors[j].offset != b.tensors[j].offset ||
          a.tensors[j].nbytes != b.tensors[j].nbytes || a.tensors[j].shape != b.tensors[j].shape)
        std::abort();
  }
  use(t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  k3::fuzz::expect_clean([&] {
    if (size > 0 && data[0] == '{') {
      open_path(std::string(reinterpret_cast<const char*>(data), size));
      return;
    }
    k3::TrunkLayout t = size > 0 && data[0] % 2
                            ? compressed(expected(), k3::kTrunkBlockHeaderBytes + (data[0] >> 1) * 97)
                            : raw(expected());
    if (size < 9) {
      // No edit: a table k3-pack writes must be accepted.
      try {
        open_path(k3::trunk_layout_to_json(t));
      } catch (const k3::Error& e) {
        std::fprintf(stderr, "fuzz: an unedited table was refused: %s\n", e.what());
        std::abort();
      }
      return;
    }
    for (size_t at = 1; at + 8 <= size; at += 8) edit(t, data + at);
    open_path(k3::trunk_layout_to_json(t));
  });
  return 0;
}
