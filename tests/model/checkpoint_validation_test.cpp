// The checkpoint checked against the config before any compute: the tensor
// manifest of the tiny fixture, edited copies with a wrong dtype, shape,
// missing tensor, truncated shard or invalid MXFP4 scale, and a copy with
// BF16 routed experts (no quantization_config) run against the goldens.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "common/thread_pool.h"
#include "kernels/bf16.h"
#include "kernels/mxfp4.h"
#include "model/forward_pass.h"
#include "model/tensor_manifest.h"
#include "model_fixture.h"
#include "runtime/resident_weights.h"

namespace k3 {
namespace {

namespace fs = std::filesystem;

// A temporary copy of the tiny checkpoint, removed at the end of the test.
class TinyCopy {
 public:
  TinyCopy() {
    char tmpl[] = "/tmp/k3-tiny-copy-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    for (const auto& e : fs::directory_iterator(test::tiny_dir())) fs::copy(e.path(), dir_ / e.path().filename());
  }
  ~TinyCopy() { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Replaces the first occurrence of `from` (same length as `to`) in a file.
  void patch(const std::string& name, const std::string& from, const std::string& to) const {
    ASSERT_EQ(from.size(), to.size());
    std::string data = read_text_file(file(name));
    const size_t at = data.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    data.replace(at, from.size(), to);
    std::ofstream(file(name), std::ios::binary | std::ios::trunc).write(data.data(), data.size());
  }

 private:
  fs::path dir_;
};

std::string validation_error(const std::string& dir, ExitCode* code) {
  try {
    ModelConfig c = load_model_config(dir);
    Checkpoint ck = Checkpoint::open(dir);
    ResidentWeights w(c, ck, nullptr);
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  }
  return "";
}

const std::string kShard2 = "model-00002-of-00005.safetensors";

TEST(CheckpointValidation, ManifestCoversEveryTextTensorOfTheFixture) {
  const ModelConfig c = load_model_config(test::tiny_dir());
  const Checkpoint ck = Checkpoint::open(test::tiny_dir());
  const std::vector<ExpectedTensor> m = expected_tensors(c);
  size_t text_tensors = 0;
  for (const auto& [name, loc] : ck.tensors())
    if (name.rfind("language_model.", 0) == 0) ++text_tensors;
  EXPECT_EQ(m.size(), text_tensors);
  EXPECT_EQ(text_tensors, 1492u);  // golden.json: tensors_required_by_exporter
  EXPECT_NO_THROW(validate_checkpoint(c, ck));
  // Vision tensors exist and are ignored, not required.
  EXPECT_NE(ck.find("vision_tower.patch_embed.proj.weight"), nullptr);
  size_t experts = 0;
  for (const ExpectedTensor& t : m)
    if (t.group == TensorGroup::kRoutedExpert) ++experts;
  EXPECT_EQ(experts, 12u * 16 * 6);  // 12 MoE layers x 16 experts x 3 matrices x (packed, scale)
}

TEST(CheckpointValidation, ShapeMismatchNamesTensorExpectedAndFound) {
  TinyCopy copy;
  const std::string name = "language_model.model.layers.1.self_attn.q_proj.weight";
  copy.patch(kShard2, "\"" + name + "\":{\"dtype\":\"BF16\",\"shape\":[96,64]",
             "\"" + name + "\":{\"dtype\":\"BF16\",\"shape\":[64,96]");
  ExitCode code = ExitCode::kOk;
  const std::string err = validation_error(copy.dir(), &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(err.find(name), std::string::npos) << err;
  EXPECT_NE(err.find("BF16 [64, 96]"), std::string::npos) << err;
  EXPECT_NE(err.find("BF16 [96, 64]"), std::string::npos) << err;
}

TEST(CheckpointValidation, DtypeMismatchNamesTensor) {
  TinyCopy copy;
  const std::string name = "language_model.model.layers.0.mlp_res_norm.weight";
  copy.patch(kShard2, "\"" + name + "\":{\"dtype\":\"F32\"", "\"" + name + "\":{\"dtype\":\"I32\"");
  ExitCode code = ExitCode::kOk;
  const std::string err = validation_error(copy.dir(), &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(err.find(name), std::string::npos) << err;
  EXPECT_NE(err.find("I32 [64]"), std::string::npos) << err;
  EXPECT_NE(err.find("F32 [64]"), std::string::npos) << err;
}

TEST(CheckpointValidation, MissingTensorIsNamed) {
  TinyCopy copy;
  const std::string from = "layers.0.self_attn.A_log", to = "layers.0.self_attn.B_log";
  copy.patch(kShard2, from, to);
  copy.patch("model.safetensors.index.json", from, to);
  ExitCode code = ExitCode::kOk;
  const std::string err = validation_error(copy.dir(), &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(err.find("language_model.model.layers.0.self_attn.A_log"), std::string::npos) << err;
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
}

TEST(CheckpointValidation, TruncatedShardIsRefused) {
  TinyCopy copy;
  const std::string shard = "model-00003-of-00005.safetensors";
  fs::resize_file(copy.file(shard), fs::file_size(copy.file(shard)) - 1000);
  ExitCode code = ExitCode::kOk;
  const std::string err = validation_error(copy.dir(), &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(err.find(shard), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

TEST(CheckpointValidation, Mxfp4ScaleBytes254And255AreRefused) {
  for (uint8_t bad : {uint8_t{254}, uint8_t{255}}) {
    TinyCopy copy;
    const std::string name = "language_model.model.layers.2.block_sparse_moe.experts.5.w2.weight_scale";
    const Checkpoint ck = Checkpoint::open(copy.dir());
    const TensorLocation& loc = ck.at(name);
    {
      std::fstream f(ck.shards()[loc.shard].path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(loc.info->offset + 3));
      f.put(static_cast<char>(bad));
    }
    ExitCode code = ExitCode::kOk;
    const std::string err = validation_error(copy.dir(), &code);
    EXPECT_EQ(code, ExitCode::kBadModel);
    EXPECT_NE(err.find(name), std::string::npos) << err;
    EXPECT_NE(err.find("scale byte " + std::to_string(bad)), std::string::npos) << err;
  }
}

// A checkpoint with the same weights but BF16 routed experts (the MXFP4
// values are exact in BF16) and no quantization_config runs the BF16 expert
// path; it must meet the same golden gate.
TEST(CheckpointValidation, Bf16ExpertCheckpointMatchesGoldens) {
  char tmpl[] = "/tmp/k3-tiny-bf16-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  {
    simdjson::dom::parser parser;
    simdjson::padded_string padded(read_text_file(test::tiny_dir() + "/config.json"));
    simdjson::dom::element root = parser.parse(padded);
    const std::string bare = simdjson::minify(root["text_config"]);
    std::ofstream((dir / "config.json").string()) << bare;
  }
  const ModelConfig mx = load_model_config(test::tiny_dir());
  const ModelConfig bf = load_model_config(dir.string());
  ASSERT_FALSE(bf.experts_mxfp4);
  const Checkpoint src = Checkpoint::open(test::tiny_dir());
  std::vector<File> shards;
  for (const ShardInfo& s : src.shards()) shards.push_back(File::open_read(s.path));
  auto read = [&](const std::string& name) {
    const TensorLocation& loc = src.at(name);
    std::string bytes(loc.info->nbytes, '\0');
    shards[loc.shard].pread_exact(bytes.data(), bytes.size(), loc.info->offset);
    return bytes;
  };
  std::vector<TensorToWrite> headers;
  std::string data;
  for (const ExpectedTensor& t : expected_tensors(bf)) {
    std::string bytes;
    if (t.group == TensorGroup::kRoutedExpert) {
      const std::string base = t.name.substr(0, t.name.size() - std::strlen(".weight"));
      const std::string packed = read(base + ".weight_packed"), scales = read(base + ".weight_scale");
      const size_t rows = t.shape[0], cols = t.shape[1];
      std::vector<float> row(cols);
      bytes.resize(rows * cols * 2);
      for (size_t r = 0; r < rows; ++r) {
        kernels::dequantize_mxfp4_row(reinterpret_cast<const uint8_t*>(packed.data()) + r * cols / 2,
                                      reinterpret_cast<const uint8_t*>(scales.data()) + r * cols / 32, cols,
                                      row.data());
        for (size_t c = 0; c < cols; ++c) {
          const uint16_t b = kernels::f32_to_bf16(row[c]);
          ASSERT_EQ(kernels::bf16_to_f32(b), row[c]);  // exact
          std::memcpy(bytes.data() + (r * cols + c) * 2, &b, 2);
        }
      }
    } else {
      bytes = read(t.name);
    }
    headers.push_back({t.name, t.dtype, t.shape, bytes.size()});
    data += bytes;
  }
  const std::string header = make_safetensors_header(headers);
  std::ofstream((dir / "model.safetensors").string(), std::ios::binary)
      .write(header.data(), header.size())
      .write(data.data(), data.size());

  {
    const Checkpoint ck = Checkpoint::open(dir.string());
    ResidentWeights weights(bf, ck, nullptr);
    ThreadPool pool(2);
    ForwardPass engine(bf, weights, pool);
    SequenceState state;
    engine.reset(state);
    const test::Golden& g = test::Golden::get();
    const size_t vocab = bf.vocab_size;
    std::vector<float> logits(g.tf_ids.size() * vocab);
    engine.forward(state, g.tf_ids, LogitRows::kAll, logits.data());
    for (size_t t = 0; t < g.tf_ids.size(); ++t)
      EXPECT_EQ(test::argmax_row(logits.data() + t * vocab, vocab), g.tf_argmax[t]) << t;
    const float ref = test::max_abs(g.tf_logits.data(), g.tf_logits.size());
    const float err = test::max_abs_diff(logits.data(), g.tf_logits.data(), logits.size());
    std::printf("BF16 experts: max |logit - golden| = %.3g (relative %.3g)\n", err, err / ref);
    EXPECT_LE(err, 1e-4f * ref);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace k3
