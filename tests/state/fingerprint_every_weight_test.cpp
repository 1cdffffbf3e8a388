// The state files' model fingerprint covers every weight: one byte changed
// anywhere in any shard (a layer weight, a routed expert, the embedding,
// even a shard's header padding) changes it, where it used to cover only the
// config, the index, the final norm and 64 KiB of lm_head (a state saved on
// one fine-tune continued on another with exit 0). A copy elsewhere keeps
// it; the download manifest's digests stand in for reading a shard only
// while its size and modification time are the recorded ones.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "cli/manifest_digests.h"
#include "fetch/fetch_manifest.h"
#include "lib/test_util.h"
#include "state/model_fingerprint.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

fs::path copy_tiny(const std::string& tag) {
  const fs::path dst = test::fresh_dir("fp-every-" + tag);
  for (const auto& e : fs::directory_iterator(kTiny)) fs::copy_file(e.path(), dst / e.path().filename());
  for (auto& e : fs::directory_iterator(dst)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dst;
}

ModelFingerprint fp_of(const fs::path& dir, const ShardDigests& known = nullptr) {
  return fingerprint_model(Checkpoint::open(dir.string()), known);
}

// The tensors to damage: one of each kind, far from the old probe (final norm + lm_head's first 64 KiB).
std::vector<std::string> victims(const Checkpoint& ck) {
  std::vector<std::string> names;
  for (const char* part : {"layers.0.", "layers.1.", "experts.", "embed_tokens", "lm_head"}) {
    for (const auto& [name, loc] : ck.tensors())
      if (name.find(part) != std::string::npos && loc.info->nbytes > 0) {
        names.push_back(name);
        break;
      }
  }
  return names;
}

// Writes a manifest as k3-fetch-verify leaves it: every file complete with
// its xxh3-128, size and modification time now.
void write_manifest(const fs::path& dir) {
  FetchManifest m;
  m.repo = "moonshotai/Kimi-K3";
  m.revision = "main";
  m.commit = std::string(40, 'a');
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    ManifestFile f;
    f.path = e.path().filename().string();
    f.size = fs::file_size(e.path());
    f.lfs = true;
    f.sha256 = std::string(64, '0');
    f.xxh3_128 = shard_content_digest(e.path().string());
    f.complete = true;
    struct stat st {};
    ::stat(e.path().c_str(), &st);
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    m.upsert(f);
  }
  write_fetch_manifest(fetch_manifest_path(dir.string()), m);
}
}  // namespace

TEST(FingerprintEveryWeight, OneByteAnywhereChangesIt) {
  const ModelFingerprint base = fp_of(kTiny);
  const Checkpoint tiny = Checkpoint::open(kTiny);
  const std::vector<std::string> names = victims(tiny);
  ASSERT_GE(names.size(), 4u);
  for (const std::string& name : names) {
    const fs::path copy = copy_tiny("t");
    const Checkpoint ck = Checkpoint::open(copy.string());
    const TensorLocation& loc = ck.at(name);
    // The last byte of the tensor: the old probe never read it.
    test::flip_byte(ck.shards()[loc.shard].path, loc.info->offset + loc.info->nbytes - 1);
    const ModelFingerprint fp = fp_of(copy);
    EXPECT_NE(fp.weights_hash, base.weights_hash) << name;
    EXPECT_EQ(fp.config_hash, base.config_hash) << name;
    EXPECT_EQ(fp.index_hash, base.index_hash) << name;
    fs::remove_all(copy);
  }
}

TEST(FingerprintEveryWeight, ACopyIsTheSameModel) {
  const fs::path copy = copy_tiny("copy");
  EXPECT_EQ(fp_of(copy), fp_of(kTiny));
  fs::remove_all(copy);
}

TEST(FingerprintEveryWeight, ManifestDigestsStandInOnlyWhileTheFileIsUnchanged) {
  const fs::path copy = copy_tiny("manifest");
  const ModelFingerprint base = fp_of(kTiny);
  write_manifest(copy);
  int asked = 0, vouched = 0;
  const ShardDigests from_manifest = manifest_shard_digests(copy.string());
  ASSERT_TRUE(from_manifest);
  const ShardDigests counting = [&](const std::string& p) {
    ++asked;
    std::string d = from_manifest(p);
    vouched += !d.empty();
    return d;
  };
  EXPECT_EQ(fp_of(copy, counting), base);  // the recorded digests give the same fingerprint as reading
  EXPECT_EQ(asked, 5);
  EXPECT_EQ(vouched, 5);

  // A shard rewritten after the download: its modification time no longer
  // matches, so it is read, and the change shows.
  const Checkpoint ck = Checkpoint::open(copy.string());
  const std::string name = victims(ck)[0];
  const TensorLocation& loc = ck.at(name);
  ::usleep(20000);
  test::flip_byte(ck.shards()[loc.shard].path, loc.info->offset);
  vouched = 0;
  EXPECT_NE(fp_of(copy, counting).weights_hash, base.weights_hash);
  EXPECT_EQ(vouched, 4);
  fs::remove_all(copy);
}

TEST(FingerprintEveryWeight, AnUnreadableManifestMeansReadingEveryShard) {
  const fs::path copy = copy_tiny("bad-manifest");
  std::ofstream(fetch_manifest_path(copy.string())) << "{not json";
  const ShardDigests d = manifest_shard_digests(copy.string());
  EXPECT_FALSE(d);
  EXPECT_EQ(fp_of(copy, d), fp_of(kTiny));
  fs::remove_all(copy);
}
