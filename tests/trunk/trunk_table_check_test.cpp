// check_trunk_table: a trunk.json tensor table is accepted only when it is,
// field by field, the one k3-pack writes for the model; every other table
// is refused (kBadModel) naming trunk.json and the tensor or section.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "lib/test_util.h"
#include "lib/tiny_manifest.h"
#include "trunk/codec.h"
#include "trunk/plan.h"
#include "trunk/table_check.h"

using namespace k3;
using k3::test::code_of;
using k3::test::tiny_manifest;

namespace {

// The table k3-pack writes: every section in blocks.
TrunkLayout raw_table(TrunkLayout t) {
  for (TrunkSection& s : t.sections) {
    uint64_t n = 0;
    for (const TrunkTensor& x : s.tensors) n += (x.nbytes + kTrunkBlockBytes - 1) / kTrunkBlockBytes;
    s.blocks.assign(n, TrunkBlock{});
    EXPECT_TRUE(place_raw_blocks(s, t.block_bytes));
  }
  return t;
}

// The table k3-pack --compress writes: sections back to back from byte 0,
// each block stored in `stored` bytes.
TrunkLayout compressed_table(TrunkLayout t, uint64_t stored = 1000) {
  t.block_bytes = kTrunkBlockBytes;
  uint64_t at = 0;
  for (TrunkSection& s : t.sections) {
    s.stored_offset = at;
    s.compressed = s.name != "embedding";
    if (s.compressed) {
      uint64_t n = 0;
      for (const TrunkTensor& x : s.tensors) n += (x.nbytes + kTrunkBlockBytes - 1) / kTrunkBlockBytes;
      s.blocks.assign(n, TrunkBlock{});
      for (TrunkBlock& b : s.blocks) b.stored_size = stored;
      s.stored_length = (n * stored + 4095) / 4096 * 4096;
      EXPECT_TRUE(place_trunk_blocks(s, t.block_bytes));
      for (TrunkBlock& b : s.blocks) b.stored_size = std::min(stored, b.size + kTrunkBlockHeaderBytes);
      uint64_t sum = 0;
      for (const TrunkBlock& b : s.blocks) sum += b.stored_size;
      s.stored_length = (sum + 4095) / 4096 * 4096;
      EXPECT_TRUE(place_trunk_blocks(s, t.block_bytes));
    } else {
      s.stored_length = s.length;
      s.blocks = raw_table(t).sections[&s - &t.sections[0]].blocks;
    }
    at += s.stored_length;
  }
  t.file_size = at;
  return t;
}

// The message check_trunk_table throws for `t`, or "" when it accepts it.
std::string refusal(const TrunkLayout& t, const TrunkLayout& expected) {
  std::string msg;
  const ExitCode c = code_of([&] { check_trunk_table(t, expected, "/x/trunk.json", "re-run k3-pack M /x"); }, &msg);
  if (c == ExitCode::kOk) return "";
  EXPECT_EQ(c, ExitCode::kBadModel) << msg;
  EXPECT_EQ(msg.rfind("/x/trunk.json: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("re-run k3-pack M /x"), std::string::npos) << msg;
  return msg.empty() ? "?" : msg;
}

TrunkTensor& tensor(TrunkLayout& t, const std::string& section, size_t i) {
  for (TrunkSection& s : t.sections)
    if (s.name == section) return s.tensors.at(i);
  throw std::runtime_error("no section " + section);
}

}  // namespace

TEST(TrunkTableCheck, AcceptsWhatPackWrites) {
  const TrunkLayout expected = layout_trunk(tiny_manifest());
  EXPECT_EQ(refusal(raw_table(expected), expected), "");
  EXPECT_NE(refusal(expected, expected), "");  // no blocks: not what k3-pack writes
  EXPECT_EQ(refusal(compressed_table(expected), expected), "");
  EXPECT_EQ(refusal(compressed_table(expected, kTrunkBlockHeaderBytes), expected), "");
}

TEST(TrunkTableCheck, RefusesEachEditNamingTheTensor) {
  const TrunkLayout expected = layout_trunk(tiny_manifest());
  for (const bool z : {false, true}) {
    const TrunkLayout good = z ? compressed_table(expected) : raw_table(expected);
    struct Edit {
      std::string what, needle;
      std::function<void(TrunkLayout&)> apply;
    };
    const std::string x1 = tensor(const_cast<TrunkLayout&>(expected), "layer.2", 1).name;
    const std::vector<Edit> edits = {
        {"offset moved by 4", "'" + x1 + "' at offset", [](TrunkLayout& t) { tensor(t, "layer.2", 1).offset += 4; }},
        {"aliased to another tensor", "'" + x1 + "' at offset",
         [](TrunkLayout& t) { tensor(t, "layer.2", 1).offset = tensor(t, "layer.2", 0).offset; }},
        {"names swapped", "is '",
         [](TrunkLayout& t) { std::swap(tensor(t, "layer.2", 0).name, tensor(t, "layer.2", 1).name); }},
        {"shape transposed", "'" + x1 + "' is",
         [](TrunkLayout& t) {
           auto& s = tensor(t, "layer.2", 1).shape;
           std::reverse(s.begin(), s.end());
           if (s.size() < 2 || s.front() == s.back()) s.push_back(1);
         }},
        {"dtype changed", "'" + x1 + "' is",
         [](TrunkLayout& t) {
           DType& d = tensor(t, "layer.2", 1).dtype;
           d = d == DType::kF32 ? DType::kBF16 : DType::kF32;
         }},
        {"tensor dropped", "lists",
         [](TrunkLayout& t) {
           for (TrunkSection& s : t.sections)
             if (s.name == "layer.2") s.tensors.pop_back();
         }},
        {"section moved", "section layer.3 at offset", [](TrunkLayout& t) { t.sections[4].offset += 4096; }},
        {"sections swapped", "belongs", [](TrunkLayout& t) { std::swap(t.sections[1], t.sections[2]); }},
        {"section stored elsewhere", "stored at byte", [](TrunkLayout& t) { t.sections[3].stored_offset += 4096; }},
        {"file size", "file_size", [](TrunkLayout& t) { t.file_size += 4096; }},
        {"block size", "block_bytes", [](TrunkLayout& t) { t.block_bytes = t.block_bytes ? 4096 : kTrunkBlockBytes; }},
    };
    for (const Edit& e : edits) {
      TrunkLayout t = good;
      e.apply(t);
      const std::string msg = refusal(t, expected);
      EXPECT_NE(msg, "") << e.what << (z ? " (compressed)" : "");
      EXPECT_NE(msg.find(e.needle), std::string::npos) << e.what << ": " << msg;
    }
  }
}

TEST(TrunkTableCheck, RefusesWhatOnlyACompressedTableCanGetWrong) {
  const TrunkLayout expected = layout_trunk(tiny_manifest());
  const TrunkLayout good = compressed_table(expected);
  TrunkLayout t = good;
  t.sections[2].compressed = false;  // a raw layer in a compressed trunk
  t.sections[2].blocks.clear();
  t.sections[2].stored_length = t.sections[2].length;
  EXPECT_NE(refusal(t, expected).find("is raw"), std::string::npos);
  t = good;
  t.sections[2].blocks[0].stored_size = t.sections[2].blocks[0].size + kTrunkBlockHeaderBytes + 1;
  EXPECT_NE(refusal(t, expected).find("block 0 claims"), std::string::npos);
  t = good;
  t.sections[2].stored_length += 4096;  // room the blocks do not fill
  EXPECT_NE(refusal(t, expected).find("stored_length"), std::string::npos);
}
