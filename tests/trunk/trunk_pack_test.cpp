// k3-pack's library: every trunk tensor lands byte-exact at a 4096-aligned
// offset, layers are contiguous sections, hashes catch a changed byte in the
// trunk or in the source, and a trunk is refused for another model or when
// trunk.bin was truncated.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "checkpoint/checkpoint.h"
#include "common/command_keys.h"
#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"
#include "io/aligned_buffer.h"
#include "lib/test_util.h"
#include "lib/tiny_manifest.h"
#include "synth/synth_checkpoint.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;

using k3::test::code_of;
using k3::test::flip_byte;
using k3::test::tiny_manifest;

using k3::test::fresh_dir;
namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

fs::path copy_tiny(const fs::path& dst) {
  fs::copy(kTiny, dst, fs::copy_options::recursive);
  for (auto& e : fs::directory_iterator(dst)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dst;
}

}  // namespace

TEST(TrunkPack, PacksEveryTrunkTensorByteExact) {
  fs::path out = fresh_dir("pack-exact");
  Checkpoint c = Checkpoint::open(kTiny);
  auto manifest = tiny_manifest();
  TrunkLayout t = pack_trunk(c, manifest, out.string(), PackOptions{});
  ASSERT_TRUE(fs::exists(out / "trunk.bin"));
  ASSERT_TRUE(fs::exists(out / "trunk.json"));
  for (const auto& e : fs::directory_iterator(out))  // no temporary left behind
    EXPECT_TRUE(e.path().filename() == "trunk.bin" || e.path().filename() == "trunk.json") << e.path();
  EXPECT_EQ(fs::file_size(out / "trunk.bin"), t.file_size);

  // Sections: embedding, 13 layers, head, contiguous and in order.
  ASSERT_EQ(t.sections.size(), 15u);
  EXPECT_EQ(t.sections.front().name, "embedding");
  EXPECT_EQ(t.sections.back().name, "head");
  uint64_t pos = 0;
  size_t trunk_tensors = 0;
  for (const TrunkSection& s : t.sections) {
    EXPECT_EQ(s.offset, pos) << s.name;
    EXPECT_EQ(s.offset % 4096, 0u);
    EXPECT_EQ(s.length % 4096, 0u);
    pos += s.length;
    for (const TrunkTensor& x : s.tensors) {
      EXPECT_EQ(x.offset % 4096, 0u) << x.name;
      EXPECT_EQ(x.name.find(".experts."), std::string::npos) << "routed experts never go in the trunk";
      ++trunk_tensors;
    }
  }
  EXPECT_EQ(pos, t.file_size);
  size_t want = 0;
  for (const ExpectedTensor& e : manifest) want += e.group != TensorGroup::kRoutedExpert;
  EXPECT_EQ(trunk_tensors, want);

  // Bytes: each tensor equals its bytes in the shards.
  File bin = File::open_read((out / "trunk.bin").string());
  for (const TrunkSection& s : t.sections)
    for (const TrunkTensor& x : s.tensors) {
      const TensorLocation& loc = c.at(x.name);
      std::vector<uint8_t> a(x.nbytes), b(x.nbytes);
      bin.pread_exact(a.data(), a.size(), x.offset);
      File::open_read(c.shards()[loc.shard].path).pread_exact(b.data(), b.size(), loc.info->offset);
      ASSERT_EQ(a, b) << x.name;
    }

  // trunk.json round-trips.
  TrunkLayout back = parse_trunk_layout(read_text_file((out / "trunk.json").string()), "trunk.json");
  EXPECT_EQ(trunk_layout_to_json(back), trunk_layout_to_json(t));
  EXPECT_NO_THROW(open_trunk_layout(out.string(), c));
  TrunkCheck chk = check_trunk(out.string(), c, tiny_manifest(), nullptr);
  EXPECT_TRUE(chk.problems.empty()) << chk.problems.front();
  fs::remove_all(out);
}

TEST(TrunkPack, SparseAndDenseWritesAreByteIdentical) {
  fs::path a = fresh_dir("pack-sparse"), b = fresh_dir("pack-dense");
  Checkpoint c = Checkpoint::open(kTiny);
  PackOptions dense;
  dense.sparse = false;
  pack_trunk(c, tiny_manifest(), a.string(), PackOptions{});
  pack_trunk(c, tiny_manifest(), b.string(), dense);
  EXPECT_TRUE(read_text_file((a / "trunk.bin").string()) == read_text_file((b / "trunk.bin").string()));
  EXPECT_EQ(read_text_file((a / "trunk.json").string()), read_text_file((b / "trunk.json").string()));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(TrunkPack, CheckReportsTheLayerThatDiffers) {
  fs::path model = copy_tiny(fresh_dir("pack-chk") / "model");
  fs::path out = model.parent_path() / "trunk";
  Checkpoint c = Checkpoint::open(model.string());
  TrunkLayout t = pack_trunk(c, tiny_manifest(), out.string(), PackOptions{});
  // A byte of layer 5's trunk changes in trunk.bin.
  const TrunkSection* s5 = t.layer_section(5);
  ASSERT_NE(s5, nullptr);
  flip_byte(out / "trunk.bin", s5->tensors[0].offset + 3);
  TrunkCheck chk = check_trunk(out.string(), c, tiny_manifest(), nullptr);
  ASSERT_EQ(chk.problems.size(), 1u);
  EXPECT_NE(chk.problems[0].find("layer.5"), std::string::npos) << chk.problems[0];
  EXPECT_NE(chk.problems[0].find("trunk.bin"), std::string::npos) << chk.problems[0];
  flip_byte(out / "trunk.bin", s5->tensors[0].offset + 3);  // restore
  // A byte of layer 2's q_proj changes in the shard (same size, so the fingerprint still matches).
  const std::string q = "language_model.model.layers.2.self_attn.q_proj.weight";
  const TensorLocation& loc = c.at(q);
  flip_byte(c.shards()[loc.shard].path, loc.info->offset + 10);
  chk = check_trunk(out.string(), c, tiny_manifest(), nullptr);
  ASSERT_EQ(chk.problems.size(), 1u);
  EXPECT_NE(chk.problems[0].find("layer.2"), std::string::npos) << chk.problems[0];
  EXPECT_NE(chk.problems[0].find("checkpoint"), std::string::npos) << chk.problems[0];
  fs::remove_all(model.parent_path());
}

TEST(TrunkPack, RefusesTrunkOfAnotherModelOrTruncated) {
  fs::path dir = fresh_dir("pack-refuse");
  fs::path other = dir / "other";
  SynthGeometry g;
  synth_preset("tiny-like", &g);
  g.num_experts = 8;  // another model: different config
  write_synthetic_checkpoint(other.string(), g, SynthOptions{});
  Checkpoint tiny = Checkpoint::open(kTiny), oth = Checkpoint::open(other.string());
  pack_trunk(tiny, tiny_manifest(), (dir / "trunk").string(), PackOptions{});
  std::string msg;
  EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "trunk").string(), oth); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("does not belong"), std::string::npos) << msg;
  EXPECT_NE(msg.find("config"), std::string::npos) << msg;

  fs::resize_file(dir / "trunk" / "trunk.bin", fs::file_size(dir / "trunk" / "trunk.bin") - 4096);
  EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "trunk").string(), tiny); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  TrunkCheck chk = check_trunk((dir / "trunk").string(), tiny, tiny_manifest(), nullptr);
  EXPECT_FALSE(chk.problems.empty());

  EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "nothing").string(), tiny); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("create one with: " + spelled(kPackTrunk)), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(TrunkPack, RefusesMissingOrMisshapenTensorBeforeWriting) {
  fs::path out = fresh_dir("pack-shape");
  Checkpoint c = Checkpoint::open(kTiny);
  auto m = tiny_manifest();
  for (ExpectedTensor& e : m)
    if (e.name == "language_model.model.layers.3.self_attn.q_a_proj.weight") e.shape[0] += 1;
  std::string msg;
  EXPECT_EQ(code_of([&] { pack_trunk(c, m, (out / "t").string(), PackOptions{}); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("layers.3.self_attn.q_a_proj.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[49, 64]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[48, 64]"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(out / "t" / "trunk.bin"));
  m = tiny_manifest();
  m[3].name += ".nope";
  EXPECT_EQ(code_of([&] { pack_trunk(c, m, (out / "t").string(), PackOptions{}); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  fs::remove_all(out);
}

TEST(TrunkPack, GeneratedCheckpointWithLayersAcrossShards) {
  fs::path dir = fresh_dir("pack-gen");
  SynthGeometry g;
  synth_preset("tiny-like", &g);
  g.num_shards = 9;  // more shards than a layer's span: layers straddle shard boundaries
  write_synthetic_checkpoint((dir / "m").string(), g, SynthOptions{});
  Checkpoint c = Checkpoint::open((dir / "m").string());
  std::vector<ExpectedTensor> m;
  for (const SynthTensor& s : synth_tensors(g))
    if (!s.vision) m.push_back(s.t);
  TrunkLayout t = pack_trunk(c, m, (dir / "t").string(), PackOptions{});
  // At least one layer's trunk tensors come from two shards.
  bool straddles = false;
  for (const TrunkSection& s : t.sections) {
    std::set<uint32_t> shards;
    for (const TrunkTensor& x : s.tensors) shards.insert(c.at(x.name).shard);
    straddles |= shards.size() > 1;
  }
  EXPECT_TRUE(straddles);
  EXPECT_TRUE(check_trunk((dir / "t").string(), c, m, nullptr).problems.empty());
  fs::remove_all(dir);
}

namespace {
struct FileExtent {
  uint64_t size = 0, allocated = 0;
  uint64_t first_hole = 0;  // SEEK_HOLE from 0: == size when the file has no hole
};
FileExtent extent_of(const fs::path& p) {
  FileExtent e;
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  e.size = static_cast<uint64_t>(st.st_size);
  e.allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  int fd = ::open(p.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  off_t h = ::lseek(fd, 0, SEEK_HOLE);
  e.first_hole = h < 0 ? e.size : static_cast<uint64_t>(h);
  ::close(fd);
  return e;
}
}  // namespace

// A sparse generated checkpoint (big projections are holes) packs to the same
// bytes with or without holes; with them, the all-zero aligned blocks stay
// unallocated (SEEK_HOLE finds one, st_blocks is far below the size), and
// without them every block is written.
TEST(TrunkPack, ZeroBlocksBecomeHolesAndBytesMatchDense) {
  fs::path dir = fresh_dir("pack-holes");
  SynthGeometry g;
  synth_preset("tiny-like", &g);
  g.hidden_size = 512;  // projections of 64K+ elements: holes in the sparse checkpoint
  g.intermediate_size = 1024;
  g.kda_head_dim = 64;
  SynthOptions so;
  so.sparse = true;
  write_synthetic_checkpoint((dir / "m").string(), g, so);
  Checkpoint c = Checkpoint::open((dir / "m").string());
  std::vector<ExpectedTensor> m;
  for (const SynthTensor& s : synth_tensors(g))
    if (!s.vision) m.push_back(s.t);
  PackOptions dense;
  dense.sparse = false;
  TrunkLayout ts = pack_trunk(c, m, (dir / "sparse").string(), PackOptions{});
  TrunkLayout td = pack_trunk(c, m, (dir / "dense").string(), dense);
  EXPECT_EQ(trunk_layout_to_json(ts), trunk_layout_to_json(td));
  EXPECT_TRUE(read_text_file((dir / "sparse" / "trunk.bin").string()) ==
              read_text_file((dir / "dense" / "trunk.bin").string()));

  // A tensor that is a hole in the checkpoint is a hole in the sparse trunk.
  const std::string q = "language_model.model.layers.1.self_attn.q_proj.weight";
  uint64_t q_off = 0, q_bytes = 0;
  for (const TrunkSection& s : ts.sections)
    for (const TrunkTensor& x : s.tensors)
      if (x.name == q) q_off = x.offset, q_bytes = x.nbytes;
  ASSERT_GE(q_bytes, 2 * kDirectAlign);
  const FileExtent se = extent_of(dir / "sparse" / "trunk.bin"), de = extent_of(dir / "dense" / "trunk.bin");
  EXPECT_EQ(se.size, de.size);
  EXPECT_LT(se.first_hole, se.size);
  EXPECT_LT(se.allocated, se.size / 2);
  EXPECT_GE(de.allocated, de.size);
  int fd = ::open((dir / "sparse" / "trunk.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  // The first data at or after the tensor's start lies past its end.
  const off_t data = ::lseek(fd, static_cast<off_t>(q_off), SEEK_DATA);
  ::close(fd);
  EXPECT_TRUE(data < 0 || static_cast<uint64_t>(data) >= q_off + q_bytes - q_bytes % kDirectAlign)
      << "data at " << data << " inside the zero tensor [" << q_off << ", " << q_off + q_bytes << ")";
  EXPECT_TRUE(check_trunk((dir / "sparse").string(), c, m, nullptr).problems.empty());

  // The free-space check asks for what a sparse pack allocates, not the
  // apparent size, and never for less than it actually took.
  const uint64_t need_sparse = trunk_space_needed(ts, c, PackOptions{});
  EXPECT_EQ(trunk_space_needed(ts, c, dense), ts.file_size);
  EXPECT_LT(need_sparse, ts.file_size);
  EXPECT_GE(need_sparse, se.allocated);
  fs::remove_all(dir);
}

// Offsets and shapes near 2^64 in a damaged trunk.json are refused, not
// wrapped around into a section that seems to fit.
TEST(TrunkPack, TrunkJsonWithWrappingOffsetsOrShapesIsRefused) {
  TrunkLayout t = layout_trunk(tiny_manifest());
  for (TrunkSection& s : t.sections) {  // every version 4 section has its blocks
    uint64_t n = 0;
    for (const TrunkTensor& x : s.tensors) n += (x.nbytes + t.block_bytes - 1) / t.block_bytes;
    s.blocks.assign(n, TrunkBlock{});
    ASSERT_TRUE(place_raw_blocks(s, t.block_bytes));
  }
  TrunkLayout far = t;
  far.sections[1].offset = 18446744073709547520ull;  // 2^64 - 4096: offset + length wraps
  EXPECT_EQ(code_of([&] { parse_trunk_layout(trunk_layout_to_json(far), "trunk.json"); }), ExitCode::kBadModel);
  TrunkLayout big = t;
  big.sections[1].tensors[0].shape = {1ull << 40, 1ull << 40};  // numel * size wraps to 0
  big.sections[1].tensors[0].nbytes = 0;
  EXPECT_EQ(code_of([&] { parse_trunk_layout(trunk_layout_to_json(big), "trunk.json"); }), ExitCode::kBadModel);
  TrunkLayout tail = t;
  tail.sections[1].tensors[0].offset = 18446744073709551615ull - 10;
  EXPECT_EQ(code_of([&] { parse_trunk_layout(trunk_layout_to_json(tail), "trunk.json"); }), ExitCode::kBadModel);
  EXPECT_EQ(code_of([&] { parse_trunk_layout(trunk_layout_to_json(t), "trunk.json"); }), ExitCode::kOk);
}

// Found by trunk_json_fuzz: a missing hash field threw simdjson's own
// exception (an internal error) instead of a trunk.json error.
TEST(TrunkPack, TrunkJsonMissingAHashFieldIsABadModel) {
  std::string json = trunk_layout_to_json(layout_trunk(tiny_manifest()));
  const size_t at = json.find("\"config_xxh3\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 13, "\"config_xxh2\"");
  std::string msg;
  EXPECT_EQ(code_of([&] { parse_trunk_layout(json, "trunk.json"); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("source.config_xxh3"), std::string::npos) << msg;
}
