// The model fingerprint on copies of the bundled tiny checkpoint: stable for
// the same bytes, different when the config, the index or the weights
// change (every weight: fingerprint_every_weight_test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/file.h"
#include "model/config.h"
#include "state/model_fingerprint.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

fs::path copy_tiny(const std::string& tag) {
  fs::path dst = fs::temp_directory_path() / ("k3-fp-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::copy(kTiny, dst);
  for (auto& e : fs::directory_iterator(dst)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dst;
}

ModelFingerprint fp_of(const fs::path& dir) { return fingerprint_model(Checkpoint::open(dir.string())); }

void append(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::app) << s; }
}  // namespace

TEST(ModelFingerprint, StableAndSensitive) {
  const ModelFingerprint base = fp_of(kTiny);
  EXPECT_NE(base.config_hash, 0u);
  EXPECT_NE(base.index_hash, 0u);
  EXPECT_NE(base.weights_hash, 0u);
  fs::path copy = copy_tiny("a");
  EXPECT_EQ(fp_of(copy), base);  // a copy is the same model

  append(copy / "config.json", "\n");
  ModelFingerprint c = fp_of(copy);
  EXPECT_NE(c.config_hash, base.config_hash);
  EXPECT_EQ(c.weights_hash, base.weights_hash);
  fs::remove_all(copy);

  copy = copy_tiny("b");
  append(copy / "model.safetensors.index.json", " ");
  ModelFingerprint i = fp_of(copy);
  EXPECT_NE(i.index_hash, base.index_hash);
  EXPECT_EQ(i.config_hash, base.config_hash);
  fs::remove_all(copy);

  // Change one byte of the final norm in its shard: only the weights hash moves.
  copy = copy_tiny("c");
  {
    Checkpoint ck = Checkpoint::open(copy.string());
    const TensorLocation& loc = ck.at("language_model.model.norm.weight");
    std::fstream f(ck.shards()[loc.shard].path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(loc.info->offset));
    char b = 0;
    f.read(&b, 1);
    b ^= 1;
    f.seekp(static_cast<std::streamoff>(loc.info->offset));
    f.write(&b, 1);
  }
  ModelFingerprint w = fp_of(copy);
  EXPECT_NE(w.weights_hash, base.weights_hash);
  EXPECT_EQ(w.config_hash, base.config_hash);
  EXPECT_EQ(w.index_hash, base.index_hash);
  fs::remove_all(copy);
}
