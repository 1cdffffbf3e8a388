// k3-synth --dspark's writer: at the tiny draft's geometry it lays out the
// same tensors (names, dtypes, shapes) as the fixture's third-party
// model.safetensors, the draft loader accepts it, norms are 1.0, the bytes
// are a function of the seed, and sparse leaves the matrices as holes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "checkpoint/safetensors.h"
#include "common/error.h"
#include "common/file.h"
#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"
#include "lib/test_util.h"
#include "synth/synth_dspark.h"

namespace k3 {
namespace {

const std::string kDraft = std::string(K3_TEST_DATA) + "/k3-tiny-dspark";

TEST(SynthDSpark, SameLayoutAsTheFixtureAndLoads) {
  const auto dir = test::fresh_dir("synth-dspark");
  const std::string config = read_text_file(kDraft + "/config.json");
  const SynthDSparkResult r = write_synthetic_dspark(dir.string(), config, {});
  const SafetensorsHeader ours = read_safetensors_header((dir / "model.safetensors").string());
  const SafetensorsHeader theirs = read_safetensors_header(kDraft + "/model.safetensors");
  ASSERT_EQ(ours.tensors.size(), theirs.tensors.size());
  EXPECT_EQ(r.tensor_count, theirs.tensors.size());
  for (const auto& [name, t] : theirs.tensors) {
    auto it = ours.tensors.find(name);
    ASSERT_NE(it, ours.tensors.end()) << name;
    EXPECT_EQ(it->second.dtype, t.dtype) << name;
    EXPECT_EQ(it->second.shape, t.shape) << name;
  }
  EXPECT_EQ(read_text_file((dir / "config.json").string()), config);
  const DSparkConfig c = load_dspark_config(dir.string());
  const DSparkWeights w = load_dspark_weights(c, dir.string());
  EXPECT_EQ(w.bytes, dspark_weight_bytes(c));
  for (float v : w.final_norm) EXPECT_EQ(v, 1.0f);
  for (float v : w.layers[4].input_layernorm) EXPECT_EQ(v, 1.0f);
  // The matrices are noise, not zeros.
  int nonzero = 0;
  for (int64_t i = 0; i < w.layers[0].q_a_proj.rows * w.layers[0].q_a_proj.cols; ++i)
    nonzero += w.layers[0].q_a_proj.data[i] != 0;
  EXPECT_GT(nonzero, w.layers[0].q_a_proj.rows * w.layers[0].q_a_proj.cols / 2);
  std::filesystem::remove_all(dir);
}

TEST(SynthDSpark, SeededAndSparse) {
  const std::string config = read_text_file(kDraft + "/config.json");
  const auto a = test::fresh_dir("synth-dspark-a"), b = test::fresh_dir("synth-dspark-b"),
             c = test::fresh_dir("synth-dspark-c"), s = test::fresh_dir("synth-dspark-s");
  SynthDSparkOptions o;
  o.seed = 5;
  write_synthetic_dspark(a.string(), config, o);
  write_synthetic_dspark(b.string(), config, o);
  o.seed = 6;
  write_synthetic_dspark(c.string(), config, o);
  o.sparse = true;
  const SynthDSparkResult sparse = write_synthetic_dspark(s.string(), config, o);
  const std::string fa = read_text_file((a / "model.safetensors").string());
  EXPECT_EQ(fa, read_text_file((b / "model.safetensors").string()));
  EXPECT_NE(fa, read_text_file((c / "model.safetensors").string()));
  EXPECT_EQ(sparse.file_bytes, fa.size());
  EXPECT_LT(sparse.written_bytes, sparse.file_bytes / 50);  // only norms and the confidence head
  // The sparse draft still loads; its matrices read as zeros.
  const DSparkConfig dc = load_dspark_config(s.string());
  const DSparkWeights w = load_dspark_weights(dc, s.string());
  for (int64_t i = 0; i < w.layers[0].up_proj.rows * w.layers[0].up_proj.cols; ++i)
    ASSERT_EQ(w.layers[0].up_proj.data[i], 0);
  for (const auto& d : {a, b, c, s}) std::filesystem::remove_all(d);
}

TEST(SynthDSpark, RefusesAConfigThatIsNotADraft) {
  const auto dir = test::fresh_dir("synth-dspark-bad");
  EXPECT_THROW(write_synthetic_dspark(dir.string(), "{\"model_type\": \"kimi_k3\"}", {}), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "model.safetensors"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace k3
