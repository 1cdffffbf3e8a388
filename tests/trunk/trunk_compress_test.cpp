// k3-pack --compress: a version 3 trunk whose decoded layout, section hashes
// and fingerprint are those of the uncompressed trunk; every tensor decodes
// byte-exact (memcmp against the checkpoint); Gaussian weights shrink by
// more than a quarter; --check and the engine's block decoding refuse a
// damaged block and name it; a trunk.json of an unknown version or whose
// blocks do not fit is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/command_keys.h"
#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"
#include "lib/test_util.h"
#include "lib/tiny_manifest.h"
#include "synth/synth_checkpoint.h"
#include "trunk/blocks.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;

using k3::test::code_of;
using k3::test::flip_byte;
using k3::test::manifest_of;
using k3::test::tiny_manifest;

using k3::test::fresh_dir;
namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

PackOptions compressed() {
  PackOptions o;
  o.compress = true;
  return o;
}

// The decoded bytes of section `s` of the trunk in `dir`.
std::vector<uint8_t> decode_section(const fs::path& dir, const TrunkSection& s, std::string* err) {
  File f = File::open_read((dir / "trunk.bin").string());
  std::vector<uint8_t> stored(s.stored_length), out(s.length, 0xEE);
  f.pread_exact(stored.data(), stored.size(), s.stored_offset);
  if (!s.compressed) return stored;
  zero_section_gaps(s, out.data());
  TrunkBlockDecoder dec;
  *err = decode_blocks(s, BlockRange{0, s.blocks.size()}, stored.data(), s.stored_offset, stored.size(), out.data(),
                       s.offset, out.size(), dec);
  return out;
}

std::vector<uint8_t> tensor_bytes(const Checkpoint& c, const std::string& name) {
  const TensorLocation& loc = c.at(name);
  std::vector<uint8_t> b(loc.info->nbytes);
  File::open_read(c.shards()[loc.shard].path).pread_exact(b.data(), b.size(), loc.info->offset);
  return b;
}

}  // namespace

TEST(TrunkCompress, DecodesByteExactWithTheUncompressedLayoutAndHashes) {
  fs::path dir = fresh_dir("compress-exact");
  Checkpoint c = Checkpoint::open(kTiny);
  TrunkLayout raw = pack_trunk(c, tiny_manifest(), (dir / "raw").string(), PackOptions{});
  TrunkLayout z = pack_trunk(c, tiny_manifest(), (dir / "z").string(), compressed());
  // One format for both: version 4, stored fields beside the decoded ones,
  // every section in blocks with their hashes.
  EXPECT_EQ(raw.version, 4);
  EXPECT_EQ(z.version, 4);
  for (const TrunkSection& s : raw.sections) EXPECT_FALSE(s.blocks.empty()) << s.name;
  EXPECT_FALSE(raw.compressed());
  EXPECT_TRUE(z.compressed());
  EXPECT_LT(z.file_size, raw.file_size);
  EXPECT_EQ(z.file_size, fs::file_size(dir / "z" / "trunk.bin"));
  ASSERT_EQ(z.sections.size(), raw.sections.size());
  // What trunk.json says is what pack_trunk returned.
  TrunkLayout parsed = open_trunk_layout((dir / "z").string(), c);
  ASSERT_EQ(parsed.sections.size(), z.sections.size());
  for (size_t i = 0; i < z.sections.size(); ++i) {
    const TrunkSection &a = raw.sections[i], &b = z.sections[i], &p = parsed.sections[i];
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.length, b.length);
    EXPECT_EQ(a.xxh3, b.xxh3) << a.name;  // the decoded section is the uncompressed one
    EXPECT_EQ(b.compressed, b.name != "embedding");
    EXPECT_EQ(b.stored_offset % 4096, 0u);
    ASSERT_EQ(p.blocks.size(), b.blocks.size());
    for (size_t k = 0; k < b.blocks.size(); ++k) {
      EXPECT_EQ(p.blocks[k].offset, b.blocks[k].offset);
      EXPECT_EQ(p.blocks[k].size, b.blocks[k].size);
      EXPECT_EQ(p.blocks[k].stored_offset, b.blocks[k].stored_offset);
      EXPECT_EQ(p.blocks[k].xxh3, b.blocks[k].xxh3);
    }
    std::string err;
    const std::vector<uint8_t> dec = decode_section(dir / "z", p, &err);
    ASSERT_EQ(err, "") << b.name;
    for (const TrunkTensor& t : b.tensors) {
      const std::vector<uint8_t> want = tensor_bytes(c, t.name);
      ASSERT_EQ(want.size(), t.nbytes);
      EXPECT_EQ(std::memcmp(dec.data() + (t.offset - b.offset), want.data(), t.nbytes), 0) << t.name;
    }
  }
  // The whole decoded trunk equals the uncompressed trunk.bin byte for byte.
  std::string raw_bin = read_text_file((dir / "raw" / "trunk.bin").string()), err;
  for (const TrunkSection& s : parsed.sections) {
    const std::vector<uint8_t> dec = decode_section(dir / "z", s, &err);
    EXPECT_EQ(std::memcmp(dec.data(), raw_bin.data() + s.offset, s.length), 0) << s.name;
  }
  EXPECT_TRUE(check_trunk((dir / "z").string(), c, tiny_manifest(), nullptr).problems.empty());
  fs::remove_all(dir);
}

TEST(TrunkCompress, NormalWeightsLoseMoreThanAQuarter) {
  fs::path dir = fresh_dir("compress-normal");
  SynthGeometry g;
  synth_preset("tiny-like", &g);
  g.hidden_size = 256;  // matrices of several blocks
  g.total_shard_bytes = 0;
  SynthOptions so;
  so.weights = SynthWeights::kNormal;
  write_synthetic_checkpoint((dir / "m").string(), g, so);
  Checkpoint c = Checkpoint::open((dir / "m").string());
  TrunkLayout z = pack_trunk(c, manifest_of(g), (dir / "z").string(), compressed());
  uint64_t tensor_bytes = 0, stored = 0;
  for (const TrunkSection& s : z.sections)
    for (const TrunkBlock& b : s.blocks) {
      if (!s.compressed) continue;  // the embedding's blocks are stored as they are
      tensor_bytes += b.size;
      stored += b.stored_size;
    }
  ASSERT_GT(tensor_bytes, 4u << 20);
  EXPECT_LT(stored, tensor_bytes * 0.75) << stored << " of " << tensor_bytes;
  EXPECT_LT(z.layer_stored_bytes(), z.layer_bytes() * 0.75);
  EXPECT_TRUE(check_trunk((dir / "z").string(), c, manifest_of(g), nullptr).problems.empty());
  fs::remove_all(dir);
}

TEST(TrunkCompress, DamagedBlockIsRefusedAndNamed) {
  fs::path dir = fresh_dir("compress-damage");
  Checkpoint c = Checkpoint::open(kTiny);
  TrunkLayout z = pack_trunk(c, tiny_manifest(), (dir / "z").string(), compressed());
  const TrunkSection* s3 = z.layer_section(3);
  ASSERT_NE(s3, nullptr);
  ASSERT_GE(s3->blocks.size(), 3u);
  const TrunkBlock& b = s3->blocks[2];
  flip_byte(dir / "z" / "trunk.bin", b.stored_offset + b.stored_size / 2);
  std::string err;
  decode_section(dir / "z", *s3, &err);
  EXPECT_NE(err.find("layer.3 block 2"), std::string::npos) << err;
  TrunkCheck chk = check_trunk((dir / "z").string(), c, tiny_manifest(), nullptr);
  ASSERT_EQ(chk.problems.size(), 1u);
  EXPECT_NE(chk.problems[0].find("layer.3 block 2"), std::string::npos) << chk.problems[0];
  fs::remove_all(dir);
}

TEST(TrunkCompress, RefusesUnknownVersionBadBlocksAnotherModelAndTruncation) {
  fs::path dir = fresh_dir("compress-refuse");
  Checkpoint c = Checkpoint::open(kTiny);
  pack_trunk(c, tiny_manifest(), (dir / "z").string(), compressed());
  const std::string json = read_text_file((dir / "z" / "trunk.json").string());
  std::string msg;
  // A future version is refused by its number.
  std::string v5 = json;
  v5.replace(v5.find("\"version\": 4"), 12, "\"version\": 5");
  EXPECT_EQ(code_of([&] { parse_trunk_layout(v5, "trunk.json"); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("version 5"), std::string::npos) << msg;
  // One block too few, or a stored size that overruns its section (of the
  // first compressed section).
  std::string fewer = json;
  const size_t first_block = fewer.find("\"blocks\": [", fewer.find("\"compressed\": true")) + 11;
  fewer.erase(first_block, fewer.find(']', first_block) + 2 - first_block);
  EXPECT_EQ(code_of([&] { parse_trunk_layout(fewer, "trunk.json"); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("blocks"), std::string::npos) << msg;
  std::string big = json;
  const size_t size_at = big.find('[', first_block) + 1;
  big.replace(size_at, big.find(',', size_at) - size_at, "99999999");
  EXPECT_EQ(code_of([&] { parse_trunk_layout(big, "trunk.json"); }, &msg), ExitCode::kBadModel);
  // Fingerprint: the compressed trunk belongs to its model, not to another.
  SynthGeometry g;
  synth_preset("tiny-like", &g);
  g.num_experts = 8;
  write_synthetic_checkpoint((dir / "other").string(), g, SynthOptions{});
  Checkpoint other = Checkpoint::open((dir / "other").string());
  EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "z").string(), c); }), ExitCode::kOk);
  EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "z").string(), other); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("does not belong"), std::string::npos) << msg;
  // Truncated.
  fs::resize_file(dir / "z" / "trunk.bin", fs::file_size(dir / "z" / "trunk.bin") - 4096);
  EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "z").string(), c); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_FALSE(check_trunk((dir / "z").string(), c, tiny_manifest(), nullptr).problems.empty());
  fs::remove_all(dir);
}

// Versions 1 and 2 carry no stored fields: every section is raw and stored
// where it decodes. No version before 4 has block hashes for raw sections:
// the engine refuses such a trunk naming k3-pack --refresh, k3-pack --check
// reports it, and k3-pack --refresh upgrades it to exactly the trunk.json a
// fresh pack writes.
TEST(TrunkCompress, OlderVersionsAreRefusedThenUpgradedByRefresh) {
  fs::path dir = fresh_dir("compress-older");
  Checkpoint c = Checkpoint::open(kTiny);
  TrunkLayout t = pack_trunk(c, tiny_manifest(), (dir / "raw").string(), PackOptions{});
  const std::string fresh = read_text_file((dir / "raw" / "trunk.json").string());
  for (int v : {1, 2, 3}) {
    TrunkLayout old = t;
    old.version = v;
    if (v < 3) old.block_bytes = 0;
    const std::string json = trunk_layout_to_json(old);
    EXPECT_EQ(json.find("stored_offset") == std::string::npos, v < 3) << v;
    EXPECT_EQ(json.find("block_bytes") == std::string::npos, v < 3) << v;
    EXPECT_EQ(json.find("blocks\""), std::string::npos) << v;
    EXPECT_EQ(json.find("header_xxh3") == std::string::npos, v == 1);
    TrunkLayout back = parse_trunk_layout(json, "trunk.json");
    EXPECT_EQ(back.version, v);
    EXPECT_EQ(back.source.has_identity, v >= 2);
    ASSERT_EQ(back.sections.size(), t.sections.size());
    for (const TrunkSection& s : back.sections) {
      EXPECT_FALSE(s.compressed) << s.name;
      EXPECT_EQ(s.stored_offset, s.offset) << s.name;
      EXPECT_EQ(s.stored_length, s.length) << s.name;
    }
    std::ofstream((dir / "raw" / "trunk.json").string(), std::ios::trunc) << json;
    std::string msg;
    EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "raw").string(), c); }, &msg), ExitCode::kBadModel) << msg;
    const std::string cmd = spelled(kRefreshTrunk) + " " + (dir / "raw").string() + " " + std::string(kTiny);
    if (v >= 2) {  // version 1 is first said to be stale
      EXPECT_NE(msg.find(cmd), std::string::npos) << msg;
    }
    const TrunkCheck check = check_trunk((dir / "raw").string(), c, tiny_manifest(), nullptr);
    ASSERT_FALSE(check.problems.empty()) << v;
    EXPECT_NE(check.problems.front().find(v == 1 ? "fingerprint" : "no per-block hashes"), std::string::npos)
        << check.problems.front();
    const TrunkCheck r = refresh_trunk((dir / "raw").string(), c, nullptr);
    EXPECT_TRUE(r.problems.empty()) << r.problems.front();
    EXPECT_TRUE(r.refreshed);
    EXPECT_EQ(r.upgraded_from, v);
    EXPECT_EQ(r.bytes_read, t.file_size);
    EXPECT_EQ(read_text_file((dir / "raw" / "trunk.json").string()), fresh) << v;
    EXPECT_EQ(code_of([&] { open_trunk_layout((dir / "raw").string(), c); }), ExitCode::kOk);
  }
  // A damaged byte in an old trunk: refresh refuses to record its blocks.
  TrunkLayout old = t;
  old.version = 3;
  std::ofstream((dir / "raw" / "trunk.json").string(), std::ios::trunc) << trunk_layout_to_json(old);
  flip_byte(dir / "raw" / "trunk.bin", t.sections[2].tensors[0].offset + 10);
  const TrunkCheck r = refresh_trunk((dir / "raw").string(), c, nullptr);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("section " + t.sections[2].name + " differs"), std::string::npos) << r.problems[0];
  EXPECT_FALSE(r.refreshed);
  fs::remove_all(dir);
}

// k3-pack --refresh on a compressed trunk: the section hashes are of the
// decoded bytes, so the checkpoint's bytes re-hashed match them and the
// blocks are kept as they are. A NaN in a layer weight is found with
// --compress too (the scan sees the bytes before encoding) and leaves the
// old trunk in place.
TEST(TrunkCompress, RefreshAndNonFiniteScanWorkWhenCompressing) {
  fs::path dir = fresh_dir("compress-refresh");
  fs::copy(kTiny, dir / "model", fs::copy_options::recursive);
  const std::string model = (dir / "model").string(), trunk = (dir / "z").string();
  TrunkLayout packed;
  {
    Checkpoint c = Checkpoint::open(model);
    packed = pack_trunk(c, tiny_manifest(), trunk, compressed());
  }
  const std::string json_before = read_text_file(trunk + "/trunk.json");
  {
    const Checkpoint before = Checkpoint::open(model);
    for (const ShardInfo& s : before.shards())
      fs::last_write_time(s.path, fs::last_write_time(s.path) - std::chrono::hours(1));
  }
  Checkpoint c = Checkpoint::open(model);
  std::string msg;
  EXPECT_EQ(code_of([&] { open_trunk_layout(trunk, c); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find(spelled(kRefreshTrunk)), std::string::npos) << msg;  // k3-pack --refresh in the tools
  TrunkCheck r = refresh_trunk(trunk, c, nullptr);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_TRUE(r.refreshed);
  TrunkLayout after = open_trunk_layout(trunk, c);
  EXPECT_EQ(after.version, kTrunkFormatVersion);
  ASSERT_TRUE(after.compressed());
  ASSERT_EQ(after.sections.size(), packed.sections.size());
  for (size_t i = 0; i < after.sections.size(); ++i) {
    const TrunkSection &a = after.sections[i], &b = packed.sections[i];
    EXPECT_EQ(a.xxh3, b.xxh3);
    EXPECT_EQ(a.stored_offset, b.stored_offset);
    ASSERT_EQ(a.blocks.size(), b.blocks.size());
    for (size_t k = 0; k < a.blocks.size(); ++k) EXPECT_EQ(a.blocks[k].xxh3, b.blocks[k].xxh3);
  }
  EXPECT_NE(read_text_file(trunk + "/trunk.json"), json_before);
  EXPECT_TRUE(check_trunk(trunk, c, tiny_manifest(), nullptr).problems.empty());
  // A NaN planted in the first BF16 tensor of layer 0 (0x7FC0).
  const std::vector<TrunkTensor>& layer0 = after.layer_section(0)->tensors;
  const auto bf16 =
      std::find_if(layer0.begin(), layer0.end(), [](const TrunkTensor& t) { return t.dtype == DType::kBF16; });
  ASSERT_NE(bf16, layer0.end());
  const TrunkTensor& x = *bf16;
  const TensorLocation& loc = c.at(x.name);
  {
    std::fstream f(c.shards()[loc.shard].path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(loc.info->offset + 2));
    const char nan[2] = {static_cast<char>(0xC0), 0x7F};
    f.write(nan, 2);
  }
  const std::string json_refreshed = read_text_file(trunk + "/trunk.json");
  const auto bin_size = fs::file_size(trunk + "/trunk.bin");
  Checkpoint damaged = Checkpoint::open(model);
  EXPECT_EQ(code_of([&] { pack_trunk(damaged, tiny_manifest(), trunk, compressed()); }, &msg), ExitCode::kBadModel);
  EXPECT_NE(msg.find(x.name), std::string::npos) << msg;
  // The old trunk survives, and no temporary is left beside it.
  EXPECT_EQ(read_text_file(trunk + "/trunk.json"), json_refreshed);
  EXPECT_EQ(fs::file_size(trunk + "/trunk.bin"), bin_size);
  EXPECT_EQ(std::distance(fs::directory_iterator(trunk), fs::directory_iterator{}), 2);
  fs::remove_all(dir);
}
