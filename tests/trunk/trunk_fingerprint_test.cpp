// A trunk packed from a checkpoint notices the checkpoint changing under it:
// a shard rewritten in place with the same size, only touched, copied
// (another inode) or given another header is refused by open_trunk_layout
// naming the shard and the way out, and k3-pack --refresh's refresh_trunk
// re-hashes only the changed shards' trunk tensors, records the shards when
// they match (the trunk opens again) and refuses when they differ. A version
// 1 trunk.json is refused with advice and upgraded by a refresh.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "common/command_keys.h"
#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

struct Packed {
  fs::path dir, model, trunk;
  TrunkLayout layout;
  std::vector<ExpectedTensor> manifest;
  explicit Packed(const std::string& tag) {
    dir = fs::temp_directory_path() / ("k3-fp-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    model = dir / "model";
    trunk = dir / "trunk";
    fs::copy(kTiny, model, fs::copy_options::recursive);
    for (auto& e : fs::directory_iterator(model))
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    manifest = expected_tensors(load_model_config(model.string()));
    Checkpoint c = Checkpoint::open(model.string());
    layout = pack_trunk(c, manifest, trunk.string(), PackOptions{});
    // A rewrite must land on a later clock tick than the pack to be seen.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  ~Packed() { fs::remove_all(dir); }
  std::string open_error(ExitCode* code = nullptr) {
    Checkpoint c = Checkpoint::open(model.string());
    try {
      open_trunk_layout(trunk.string(), c);
    } catch (const Error& e) {
      if (code) *code = e.code();
      return e.what();
    }
    return "";
  }
  TrunkCheck refresh() {
    Checkpoint c = Checkpoint::open(model.string());
    return refresh_trunk(trunk.string(), c, nullptr);
  }
  // The shard holding `tensor` and the tensor's offset in it.
  std::pair<fs::path, uint64_t> where(const std::string& tensor) {
    Checkpoint c = Checkpoint::open(model.string());
    const TensorLocation& loc = c.at(tensor);
    return {c.shards()[loc.shard].path, loc.info->offset};
  }
};

// Rewrites one byte of `p` in place: same size, same header.
void rewrite_byte(const fs::path& p, uint64_t off) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(off));
  char c;
  f.read(&c, 1);
  c ^= 0x24;
  f.seekp(static_cast<std::streamoff>(off));
  f.write(&c, 1);
}

const char* kQ2 = "language_model.model.layers.2.self_attn.q_proj.weight";
}  // namespace

TEST(TrunkFingerprint, ShardRewrittenInPlaceWithTheSameSizeIsRefused) {
  Packed p("inplace");
  EXPECT_EQ(p.open_error(), "");
  auto [shard, off] = p.where(kQ2);
  const uint64_t size = fs::file_size(shard);
  rewrite_byte(shard, off + 7);
  ASSERT_EQ(fs::file_size(shard), size);
  ExitCode code{};
  const std::string msg = p.open_error(&code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(msg.find("may be stale"), std::string::npos) << msg;
  EXPECT_NE(msg.find(shard.filename().string() + " was modified after the trunk was packed"), std::string::npos) << msg;
  EXPECT_NE(msg.find(spelled(kRefreshTrunk) + " " + p.trunk.string() + " " + p.model.string()), std::string::npos)
      << msg;
  // The weights did change: the re-check finds the layer and keeps trunk.json.
  const std::string before = read_text_file((p.trunk / "trunk.json").string());
  TrunkCheck r = p.refresh();
  EXPECT_FALSE(r.refreshed);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("layer.2"), std::string::npos) << r.problems[0];
  EXPECT_EQ(read_text_file((p.trunk / "trunk.json").string()), before);
  EXPECT_NE(p.open_error(), "");
}

TEST(TrunkFingerprint, TouchedShardIsRefusedThenRefreshedByRehashingOnlyItsSections) {
  Packed p("touch");
  auto [shard, off] = p.where(kQ2);
  (void)off;
  fs::last_write_time(shard, fs::last_write_time(shard) + std::chrono::seconds(5));
  EXPECT_NE(p.open_error().find("was modified after the trunk was packed"), std::string::npos);
  TrunkCheck r = p.refresh();
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_TRUE(r.refreshed);
  EXPECT_NE(r.shards_changed.find(shard.filename().string()), std::string::npos) << r.shards_changed;
  // Only the sections holding a tensor of that shard were re-hashed.
  Checkpoint c = Checkpoint::open(p.model.string());
  uint64_t want = 0;
  for (const TrunkSection& s : p.layout.sections) {
    bool touched = false;
    for (const TrunkTensor& x : s.tensors) touched = touched || c.shards()[c.at(x.name).shard].path == shard.string();
    if (touched) want += s.length;
  }
  EXPECT_EQ(r.bytes_checked, want);
  EXPECT_LT(r.bytes_checked, p.layout.file_size);
  EXPECT_EQ(p.open_error(), "");
  // Nothing left to refresh.
  r = p.refresh();
  EXPECT_FALSE(r.refreshed);
  EXPECT_TRUE(r.problems.empty());
}

TEST(TrunkFingerprint, CopiedShardWithItsTimeKeptIsAnotherInode) {
  Packed p("inode");
  auto [shard, off] = p.where(kQ2);
  (void)off;
  const auto mtime = fs::last_write_time(shard);
  fs::copy_file(shard, shard.string() + ".copy");
  fs::rename(shard.string() + ".copy", shard);
  fs::last_write_time(shard, mtime);
  const std::string msg = p.open_error();
  EXPECT_NE(msg.find("is another file than the one packed"), std::string::npos) << msg;
  EXPECT_TRUE(p.refresh().refreshed);
  EXPECT_EQ(p.open_error(), "");
}

TEST(TrunkFingerprint, EachKindOfChangeNamesTheShard) {
  SourceFingerprint a;
  a.config_hash = 1;
  a.shards = {{"s1", 100, 0xaa, 5, 9}, {"s2", 200, 0xbb, 6, 10}};
  SourceFingerprint b = a;
  EXPECT_EQ(compare_fingerprint(a, b).diff, FingerprintDiff::kSame);
  b.shards[1].header_xxh3 = 0xbc;
  FingerprintComparison c = compare_fingerprint(a, b);
  EXPECT_EQ(c.diff, FingerprintDiff::kShardsChanged);
  EXPECT_NE(c.reason.find("shard s2's safetensors header differs"), std::string::npos) << c.reason;
  EXPECT_EQ(c.changed_shards, std::vector<std::string>{"s2"});
  b = a;
  b.shards[0].mtime_ns = 7;
  b.shards[1].inode = 11;
  c = compare_fingerprint(a, b);
  EXPECT_EQ(c.diff, FingerprintDiff::kShardsChanged);
  EXPECT_NE(c.reason.find("shard s1 was modified after the trunk was packed"), std::string::npos) << c.reason;
  EXPECT_EQ(c.changed_shards, (std::vector<std::string>{"s1", "s2"}));
  // A size difference is another checkpoint, whatever else changed first.
  b.shards[1].size = 201;
  c = compare_fingerprint(a, b);
  EXPECT_EQ(c.diff, FingerprintDiff::kOtherModel);
  EXPECT_NE(c.reason.find("shard s2 is 201 bytes now but was 200"), std::string::npos) << c.reason;
  b = a;
  b.config_hash = 2;
  EXPECT_EQ(compare_fingerprint(a, b).diff, FingerprintDiff::kOtherModel);
  b = a;
  b.shards.pop_back();
  EXPECT_EQ(compare_fingerprint(a, b).diff, FingerprintDiff::kOtherModel);
}

TEST(TrunkFingerprint, Version1TrunkJsonIsRefusedWithAdviceAndUpgradedByRefresh) {
  Packed p("v1");
  // What an older k3-pack wrote: version 1, shard names and sizes only.
  TrunkLayout old = p.layout;
  old.version = 1;
  const std::string v1 = trunk_layout_to_json(old);
  ASSERT_EQ(v1.find("header_xxh3"), std::string::npos);
  ASSERT_NE(v1.find("\"version\": 1"), std::string::npos);
  {
    std::ofstream f(p.trunk / "trunk.json", std::ios::trunc);
    f << v1;
  }
  ExitCode code{};
  const std::string msg = p.open_error(&code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(msg.find("format version 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find(spelled(kRefreshTrunk)), std::string::npos) << msg;
  TrunkCheck r = p.refresh();
  EXPECT_TRUE(r.refreshed);
  EXPECT_EQ(r.bytes_checked, p.layout.file_size);  // every section re-hashed
  EXPECT_EQ(p.open_error(), "");
  EXPECT_NE(read_text_file((p.trunk / "trunk.json").string()).find("\"version\": 4"), std::string::npos);
  // A version from the future is refused as unsupported.
  std::string v9 = v1;
  v9.replace(v9.find("\"version\": 1"), 12, "\"version\": 9");
  EXPECT_THROW(parse_trunk_layout(v9, "x"), Error);
}

TEST(TrunkFingerprint, AnotherModelIsNotRefreshed) {
  Packed p("other");
  {
    std::ofstream f(p.model / "config.json", std::ios::app);
    f << "\n";
  }
  TrunkCheck r = p.refresh();
  EXPECT_FALSE(r.refreshed);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("config.json"), std::string::npos) << r.problems[0];
}
