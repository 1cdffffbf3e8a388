// The synthetic checkpoint generator: the tiny-like geometry reproduces the
// bundled fixture's layout tensor for tensor; output is a function of the
// seed; values stay in the ranges the engine can compute with; sparse mode
// leaves holes but keeps norms, routers and A_log real.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "synth/synth_checkpoint.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

fs::path tmpdir(const std::string& tag) {
  fs::path p = fs::temp_directory_path() / ("k3-synth-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

std::string slurp(const fs::path& p) { return read_text_file(p.string()); }

std::vector<uint8_t> tensor_bytes(const Checkpoint& c, const std::string& name) {
  const TensorLocation& loc = c.at(name);
  std::vector<uint8_t> b(loc.info->nbytes);
  File::open_read(c.shards()[loc.shard].path).pread_exact(b.data(), b.size(), loc.info->offset);
  return b;
}

SynthGeometry tiny() {
  SynthGeometry g;
  EXPECT_TRUE(synth_preset("tiny-like", &g));
  return g;
}
}  // namespace

TEST(SynthCheckpoint, TinyLikeMatchesFixtureLayout) {
  fs::path d = tmpdir("layout");
  SynthOptions opt;
  opt.seed = 7;
  SynthResult r = write_synthetic_checkpoint(d.string(), tiny(), opt);
  Checkpoint want = Checkpoint::open(kTiny), got = Checkpoint::open(d.string());
  EXPECT_EQ(got.tensor_count(), want.tensor_count());
  EXPECT_EQ(got.shards().size(), want.shards().size());
  EXPECT_EQ(got.index_total_size(), want.index_total_size());
  EXPECT_EQ(r.total_size, want.index_total_size());
  for (const auto& [name, loc] : want.tensors()) {
    const TensorLocation* g = got.find(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->info->dtype, loc.info->dtype) << name;
    EXPECT_EQ(g->info->shape, loc.info->shape) << name;
  }
  // The wrapper config: same keys as the fixture's, with the quantization config at the top level.
  std::string cfg = slurp(d / "config.json");
  for (const char* key : {"\"model_type\": \"kimi_k3\"", "\"model_type\": \"kimi_linear\"", "\"text_config\"",
                          "\"quantization_config\"", "\"mxfp4-pack-quantized\"", "\"kda_layers\": [1, 2, 3, 5, 6, 7, 9, 10, 11]",
                          "\"full_attn_layers\": [4, 8, 12, 13]"})
    EXPECT_NE(cfg.find(key), std::string::npos) << key;
  EXPECT_LT(cfg.find("\"quantization_config\""), cfg.size());
  EXPECT_GT(cfg.find("\"quantization_config\""), cfg.find("\"dtype\": \"bfloat16\"\n  }"));
  for (const char* f : {"generation_config.json", "tiktoken.model", "tokenizer_config.json"})
    EXPECT_TRUE(fs::exists(d / f)) << f;
  // 8448 - 256 ordinary tokens, ranks 0..8191 in order.
  std::ifstream tk(d / "tiktoken.model");
  std::string line, last;
  size_t lines = 0;
  while (std::getline(tk, line)) ++lines, last = line;
  EXPECT_EQ(lines, 8192u);
  EXPECT_EQ(last.substr(last.find(' ') + 1), "8191");
  fs::remove_all(d);
}

TEST(SynthCheckpoint, DeterministicFromSeed) {
  fs::path a = tmpdir("a"), b = tmpdir("b"), c = tmpdir("c");
  SynthOptions opt;
  opt.seed = 42;
  write_synthetic_checkpoint(a.string(), tiny(), opt);
  write_synthetic_checkpoint(b.string(), tiny(), opt);
  opt.seed = 43;
  write_synthetic_checkpoint(c.string(), tiny(), opt);
  for (auto& e : fs::directory_iterator(a)) {
    const std::string name = e.path().filename();
    EXPECT_TRUE(slurp(e.path()) == slurp(b / name)) << name;
    // Weight shards differ with the seed (the vision shard too, but it is tiny).
    if (e.path().extension() == ".safetensors") {
      EXPECT_TRUE(slurp(e.path()) != slurp(c / name)) << name;
    }
  }
  fs::remove_all(a);
  fs::remove_all(b);
  fs::remove_all(c);
}

TEST(SynthCheckpoint, ValuesInComputableRanges) {
  fs::path d = tmpdir("values");
  SynthGeometry g = tiny();
  write_synthetic_checkpoint(d.string(), g, SynthOptions{});
  Checkpoint c = Checkpoint::open(d.string());
  for (const auto& [name, loc] : c.tensors()) {
    std::vector<uint8_t> b = tensor_bytes(c, name);
    if (name.find("weight_scale") != std::string::npos) {
      for (uint8_t s : b) {
        EXPECT_GE(s, 110) << name;
        EXPECT_LE(s, 126) << name;
      }
    } else if (loc.info->dtype == DType::kF32) {
      std::vector<float> f(b.size() / 4);
      std::memcpy(f.data(), b.data(), b.size());
      for (float v : f) EXPECT_TRUE(std::isfinite(v)) << name;
      if (name.find("norm") != std::string::npos) {
        for (float v : f) EXPECT_NEAR(v, 1.0f, 0.25f) << name;
      }
      if (name.find("A_log") != std::string::npos) {
        ASSERT_EQ(f.size(), (size_t)g.kda_head_dim);
        for (int i = 0; i < g.kda_head_dim; ++i) {
          if (i < g.kda_num_heads) {
            EXPECT_TRUE(f[i] >= 0.5f && f[i] <= 2.7f) << name << " " << i;
          } else {
            EXPECT_EQ(f[i], 0.0f) << name << " " << i;
          }
        }
      }
    } else if (loc.info->dtype == DType::kBF16) {
      double sum = 0;
      size_t n = b.size() / 2;
      for (size_t i = 0; i < n; ++i) {
        uint32_t bits = (uint32_t)(b[2 * i] | b[2 * i + 1] << 8) << 16;
        float v;
        std::memcpy(&v, &bits, 4);
        ASSERT_TRUE(std::isfinite(v)) << name;
        sum += (double)v * v;
      }
      const double rms = std::sqrt(sum / n);
      EXPECT_GT(rms, 1e-4) << name;
      EXPECT_LT(rms, 1.0) << name;
    }
  }
  fs::remove_all(d);
}

TEST(SynthCheckpoint, SparseLeavesHolesButKeepsSmallTensorsReal) {
  fs::path d = tmpdir("sparse");
  SynthGeometry g = tiny();
  g.hidden_size = 256;
  g.kda_num_heads = 4;
  g.kda_head_dim = 64;
  g.mla_num_heads = 4;
  g.intermediate_size = 1024;
  g.num_experts = 64;
  g.moe_intermediate_size = 256;
  g.routed_expert_hidden_size = 128;
  SynthOptions opt;
  opt.sparse = true;
  SynthResult r = write_synthetic_checkpoint(d.string(), g, opt);
  EXPECT_LT(r.written_bytes * 3, r.apparent_bytes);
  uint64_t allocated = 0;
  for (auto& e : fs::directory_iterator(d)) {
    struct stat st;
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    if (e.path().extension() == ".safetensors") allocated += (uint64_t)st.st_blocks * 512;
  }
  EXPECT_LT(allocated, r.apparent_bytes / 2) << "the file system should keep the unwritten ranges as holes";
  Checkpoint c = Checkpoint::open(d.string());
  auto nonzero = [&](const std::string& n) {
    for (uint8_t v : tensor_bytes(c, n))
      if (v) return true;
    return false;
  };
  const std::string P = "language_model.model.";
  EXPECT_TRUE(nonzero(P + "embed_tokens.weight"));
  EXPECT_TRUE(nonzero(P + "layers.1.input_layernorm.weight"));
  EXPECT_TRUE(nonzero(P + "layers.1.block_sparse_moe.gate.weight"));
  EXPECT_TRUE(nonzero(P + "layers.1.block_sparse_moe.gate.e_score_correction_bias"));
  EXPECT_TRUE(nonzero(P + "layers.1.self_attn.A_log"));
  EXPECT_FALSE(nonzero(P + "layers.1.self_attn.q_proj.weight"));
  EXPECT_FALSE(nonzero(P + "layers.1.block_sparse_moe.experts.3.w1.weight_packed"));
  fs::remove_all(d);
}

TEST(SynthCheckpoint, RefusesInvalidGeometry) {
  SynthGeometry g = tiny();
  g.moe_intermediate_size = 48;
  try {
    synth_tensors(g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("moe_intermediate_size"), std::string::npos);
  }
  g = tiny();
  g.num_experts_per_token = 17;
  EXPECT_THROW(synth_tensors(g), Error);
}

TEST(SynthCheckpoint, K3PresetHasRealGeometry) {
  SynthGeometry g;
  ASSERT_TRUE(synth_preset("k3", &g));
  EXPECT_EQ(g.num_hidden_layers, 93);
  EXPECT_EQ(g.kda_count(), 69);
  EXPECT_EQ(g.mla_count(), 24);
  uint64_t experts = 0, trunk = 0;
  size_t n = 0;
  for (const SynthTensor& s : synth_tensors(g)) {
    if (s.vision) continue;
    (s.t.group == TensorGroup::kRoutedExpert ? experts : trunk) += s.nbytes();
    ++n;
  }
  // SPEC: routed experts ~1.45 TB, trunk ~112 GB, 1.56 TB in all.
  EXPECT_NEAR(experts / 1e12, 1.45, 0.01);
  EXPECT_NEAR(trunk / 1e9, 113, 3);
  EXPECT_NEAR((experts + trunk) / 1e12, 1.561, 0.002);
  EXPECT_GT(n, 490000u);
}
