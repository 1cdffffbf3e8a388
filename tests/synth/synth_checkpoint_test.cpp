// The synthetic checkpoint generator: the tiny-like geometry reproduces the
// bundled fixture's layout tensor for tensor; output is a function of the
// seed; values stay in the ranges the engine can compute with; sparse mode
// leaves holes but keeps norms, routers and A_log real.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "model/config.h"
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
                          "\"quantization_config\"", "\"mxfp4-pack-quantized\"",
                          "\"kda_layers\": [1, 2, 3, 5, 6, 7, 9, 10, 11]", "\"full_attn_layers\": [4, 8, 12, 13]"})
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

// SPEC section 1, checked from the generated config (as the engine reads
// it) and the planned files (nothing is written): 93 layers, 69 KDA + 24 MLA
// (MLA at 4, 8, ..., 92 and 93), every dimension, and 96 shard files of
// about equal size that add up to the published 1,560,936,091,448 bytes with
// the vision tensors in the trailing one.
TEST(SynthCheckpoint, K3PresetHasRealGeometry) {
  SynthGeometry g;
  ASSERT_TRUE(synth_preset("k3", &g));
  const ModelConfig c = parse_model_config(synth_config_json(g), synth_generation_config_json(g), "k3");
  EXPECT_EQ(c.num_hidden_layers, 93);
  EXPECT_EQ(c.hidden_size, 7168);
  EXPECT_EQ(c.vocab_size, 163840);
  EXPECT_EQ(c.intermediate_size, 33792);
  EXPECT_EQ(c.first_k_dense_replace, 1);
  EXPECT_EQ(c.attn_res_block_size, 12);
  EXPECT_EQ(c.num_experts, 896);
  EXPECT_EQ(c.num_experts_per_token, 16);
  EXPECT_EQ(c.num_shared_experts, 2);
  EXPECT_EQ(c.moe_intermediate_size, 3072);
  EXPECT_EQ(c.routed_expert_hidden_size, 3584);
  EXPECT_TRUE(c.experts_mxfp4);
  EXPECT_EQ(c.kda_num_heads, 96);
  EXPECT_EQ(c.kda_head_dim, 128);
  EXPECT_EQ(c.kda_conv_kernel, 4);
  EXPECT_TRUE(c.kda_has_gate_lower_bound);
  EXPECT_EQ(c.kda_gate_lower_bound, -5.0f);
  EXPECT_EQ(c.mla_num_heads, 96);
  EXPECT_EQ(c.q_lora_rank, 1536);
  EXPECT_EQ(c.kv_lora_rank, 512);
  EXPECT_EQ(c.qk_nope_head_dim, 128);
  EXPECT_EQ(c.qk_rope_head_dim, 64);
  EXPECT_EQ(c.v_head_dim, 128);
  EXPECT_EQ(c.num_kda_layers(), 69);
  EXPECT_EQ(c.num_mla_layers(), 24);
  for (int i = 0; i < 93; ++i) EXPECT_EQ(c.is_kda_layer(i), (i + 1) % 4 != 0 && i + 1 != 93) << "layer " << i;

  const SynthLayout L = synth_layout(g);
  uint64_t experts = 0, trunk = 0;
  size_t text = 0;
  for (const SynthTensor& s : L.tensors) {
    if (s.vision) continue;
    (s.t.group == TensorGroup::kRoutedExpert ? experts : trunk) += s.nbytes();
    ++text;
  }
  // SPEC: routed experts ~1.45 TB, trunk ~112 GB.
  EXPECT_NEAR(experts / 1e12, 1.45, 0.01);
  EXPECT_NEAR(trunk / 1e9, 113, 3);
  EXPECT_EQ(text, 1u + 93 * 6 + 69 * 14 + 24 * 8 + 3 + 92 * (8 + 896 * 6) + 4);
  ASSERT_EQ(L.shards.size(), 96u);
  EXPECT_EQ(L.shards.front().name, "model-00001-of-00096.safetensors");
  EXPECT_EQ(L.shards.back().name, "model-00096-of-00096.safetensors");
  uint64_t sum = 0, lo = UINT64_MAX, hi = 0;
  for (size_t k = 0; k < L.shards.size(); ++k) {
    const SynthShard& sh = L.shards[k];
    sum += sh.file_size;
    lo = std::min(lo, sh.file_size);
    hi = std::max(hi, sh.file_size);
    for (size_t i : sh.tensors) {
      if (L.tensors[i].vision) {
        EXPECT_EQ(k, L.shards.size() - 1) << L.tensors[i].t.name;
      }
    }
  }
  EXPECT_EQ(sum, 1560936091448ull);
  EXPECT_EQ(L.apparent_bytes, 1560936091448ull);
  EXPECT_LT(static_cast<double>(hi) / lo, 1.05) << lo << " .. " << hi;
}

// Headers only: the files have their full size, every tensor reads as zero,
// and almost nothing is allocated on disk.
TEST(SynthCheckpoint, HeadersOnlyWritesNoTensorData) {
  fs::path d = tmpdir("headers");
  SynthGeometry g = tiny();
  g.hidden_size = 256;
  g.num_experts = 64;
  SynthOptions opt;
  opt.headers_only = true;
  SynthResult r = write_synthetic_checkpoint(d.string(), g, opt);
  EXPECT_EQ(r.written_bytes, 0u);
  Checkpoint c = Checkpoint::open(d.string());
  uint64_t apparent = 0, allocated = 0;
  for (const ShardInfo& s : c.shards()) {
    struct stat st;
    ASSERT_EQ(::stat(s.path.c_str(), &st), 0);
    apparent += static_cast<uint64_t>(st.st_size);
    allocated += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  EXPECT_EQ(apparent, r.apparent_bytes);
  EXPECT_LT(allocated, apparent / 4);
  for (const char* n : {"language_model.model.embed_tokens.weight", "language_model.model.layers.1.self_attn.A_log",
                        "language_model.model.layers.1.block_sparse_moe.gate.weight"})
    for (uint8_t v : tensor_bytes(c, n)) ASSERT_EQ(v, 0) << n;
  fs::remove_all(d);
}

// --weights normal: same per-tensor standard deviation as uniform, but the
// Gaussian's tails (kurtosis 3, ~4.6% beyond two deviations; the uniform has
// kurtosis 1.8 and nothing beyond sqrt(3)); the default stays uniform.
TEST(SynthCheckpoint, NormalWeightsAreGaussianWithTheSameStd) {
  fs::path u = tmpdir("uniform"), n = tmpdir("normal"), n2 = tmpdir("normal2");
  SynthOptions opt;
  opt.seed = 5;
  write_synthetic_checkpoint(u.string(), tiny(), opt);
  opt.weights = SynthWeights::kNormal;
  write_synthetic_checkpoint(n.string(), tiny(), opt);
  write_synthetic_checkpoint(n2.string(), tiny(), opt);
  Checkpoint cu = Checkpoint::open(u.string()), cn = Checkpoint::open(n.string()), cn2 = Checkpoint::open(n2.string());
  struct Moments {
    double var = 0, kurt = 0, beyond2 = 0;
  };
  auto moments = [](const std::vector<uint8_t>& b) {
    const size_t count = b.size() / 2;
    double s2 = 0, s4 = 0, big = 0;
    std::vector<double> v(count);
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits = (uint32_t)(b[2 * i] | b[2 * i + 1] << 8) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      v[i] = f;
      s2 += v[i] * v[i];
    }
    Moments m;
    m.var = s2 / count;
    for (double x : v) {
      s4 += x * x * x * x;
      big += std::fabs(x) > 2 * std::sqrt(m.var);
    }
    m.kurt = s4 / count / (m.var * m.var);
    m.beyond2 = big / count;
    return m;
  };
  int checked = 0;
  for (const auto& [name, loc] : cn.tensors()) {
    EXPECT_TRUE(tensor_bytes(cn, name) == tensor_bytes(cn2, name)) << name;
    if (loc.info->dtype != DType::kBF16 || loc.info->nbytes < (16u << 10) ||
        name.find("experts.") != std::string::npos || name.find("res_proj") != std::string::npos)
      continue;
    const Moments mu = moments(tensor_bytes(cu, name)), mn = moments(tensor_bytes(cn, name));
    EXPECT_NEAR(mn.var / mu.var, 1.0, 0.05) << name;
    EXPECT_NEAR(mn.kurt, 3.0, 0.3) << name;
    EXPECT_NEAR(mu.kurt, 1.8, 0.1) << name;
    EXPECT_NEAR(mn.beyond2, 0.0455, 0.01) << name;
    EXPECT_EQ(mu.beyond2, 0.0) << name;
    ++checked;
  }
  EXPECT_GE(checked, 5);
  fs::remove_all(u);
  fs::remove_all(n);
  fs::remove_all(n2);
}
