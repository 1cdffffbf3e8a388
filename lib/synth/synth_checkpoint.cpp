#include "synth/synth_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "common/json_writer.h"
#include "kernels/bf16.h"
#include "synth/synth_random.h"
#include "synth/synth_tokenizer.h"

namespace k3 {

uint64_t SynthTensor::nbytes() const {
  uint64_t n = dtype_size(t.dtype);
  for (uint64_t d : t.shape) n *= d;
  return n;
}

namespace {

constexpr const char* kPrefix = "language_model.model.";

// E8M0 scale byte for an MXFP4 matrix whose weights should have standard
// deviation ~gain/sqrt(fan_in): random E2M1 codes have RMS ~2.93.
int mx_scale_byte(double gain, int fan_in) {
  double target = gain / std::sqrt(static_cast<double>(fan_in)) / 2.93;
  int b = static_cast<int>(std::lround(127.0 + std::log2(target)));
  return std::clamp(b, 110, 125);
}

struct Builder {
  std::vector<SynthTensor> out;
  SynthTensor& add(const std::string& name, DType dt, std::vector<uint64_t> shape, TensorGroup group, int layer = -1,
                   int expert = -1) {
    SynthTensor s;
    s.t.name = name;
    s.t.dtype = dt;
    s.t.shape = std::move(shape);
    s.t.group = group;
    s.t.layer = layer;
    s.t.expert = expert;
    out.push_back(std::move(s));
    return out.back();
  }
  // A BF16 weight matrix [rows, cols] with std gain/sqrt(cols); large ones become holes when sparse.
  void mat(const std::string& name, uint64_t rows, uint64_t cols, double gain, TensorGroup group, int layer,
           bool keep_when_sparse = false) {
    SynthTensor& s = add(name, DType::kBF16, {rows, cols}, group, layer);
    s.scale = static_cast<float>(gain / std::sqrt(static_cast<double>(cols)));
    s.hole_when_sparse = !keep_when_sparse && rows * cols >= (1u << 16);
  }
  void norm(const std::string& name, uint64_t n, TensorGroup group, int layer) {
    SynthTensor& s = add(name, DType::kF32, {n}, group, layer);
    s.center = 1.0f;
    s.scale = 0.1f;
  }
};

}  // namespace

namespace {

// Layer i's Kimi Delta Attention tensors, under prefix `ap`.
void add_kda_attention(Builder& b, const SynthGeometry& g, int i, const std::string& ap) {
  const uint64_t h = g.hidden_size, H = g.kda_num_heads, D = g.kda_head_dim, HD = H * D;
  const auto T = TensorGroup::kLayerTrunk;
  for (const char* n : {"q_proj", "k_proj", "v_proj"}) b.mat(ap + n + ".weight", HD, h, 1.0, T, i);
  for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"}) {
    SynthTensor& s = b.add(ap + n + ".weight", DType::kBF16, {HD, 1, (uint64_t)g.conv_kernel}, T, i);
    s.scale = 0.5f;
  }
  b.mat(ap + "f_a_proj.weight", D, h, 1.0, T, i);
  b.mat(ap + "f_b_proj.weight", HD, D, 1.0, T, i);
  b.mat(ap + "b_proj.weight", H, h, 1.0, T, i);
  b.mat(ap + "g_proj.weight", HD, h, 0.3, T, i);
  b.mat(ap + "o_proj.weight", h, HD, 0.2, T, i);
  b.norm(ap + "o_norm.weight", D, T, i);
  SynthTensor& a = b.add(ap + "A_log", DType::kF32, {D}, T, i);
  a.init = SynthInit::kALog;
  a.heads = g.kda_num_heads;
  SynthTensor& dt = b.add(ap + "dt_bias", DType::kF32, {HD}, T, i);
  dt.center = -1.0f;
  dt.scale = 0.45f;
}

// Layer i's multi-head latent attention tensors, under prefix `ap`.
void add_mla_attention(Builder& b, const SynthGeometry& g, int i, const std::string& ap) {
  const uint64_t h = g.hidden_size, mh = g.mla_num_heads, qh = g.qk_nope_head_dim + g.qk_rope_head_dim;
  const auto T = TensorGroup::kLayerTrunk;
  b.mat(ap + "q_a_proj.weight", g.q_lora_rank, h, 1.0, T, i);
  b.norm(ap + "q_a_layernorm.weight", g.q_lora_rank, T, i);
  b.mat(ap + "q_b_proj.weight", mh * qh, g.q_lora_rank, 1.2, T, i);
  b.mat(ap + "kv_a_proj_with_mqa.weight", g.kv_lora_rank + g.qk_rope_head_dim, h, 1.0, T, i);
  b.norm(ap + "kv_a_layernorm.weight", g.kv_lora_rank, T, i);
  b.mat(ap + "kv_b_proj.weight", mh * (g.qk_nope_head_dim + g.v_head_dim), g.kv_lora_rank, 1.2, T, i);
  b.mat(ap + "g_proj.weight", mh * g.v_head_dim, h, 0.3, T, i);
  b.mat(ap + "o_proj.weight", h, mh * g.v_head_dim, 0.2, T, i);
}

// Layer i's mixture of experts: router, shared experts and every routed
// expert's MXFP4 weights and scales.
void add_moe(Builder& b, const SynthGeometry& g, int i, const std::string& mp) {
  const uint64_t h = g.hidden_size, L = g.routed_expert_hidden_size, mi = g.moe_intermediate_size;
  const auto T = TensorGroup::kLayerTrunk;
  b.mat(mp + "gate.weight", g.num_experts, h, 1.5, T, i, /*keep_when_sparse=*/true);
  {
    SynthTensor& s = b.add(mp + "gate.e_score_correction_bias", DType::kF32, {(uint64_t)g.num_experts}, T, i);
    s.scale = 0.1f;
  }
  b.mat(mp + "routed_expert_down_proj.weight", L, h, 1.0, T, i);
  b.mat(mp + "routed_expert_up_proj.weight", h, L, 0.2, T, i);
  b.norm(mp + "routed_expert_norm.weight", L, T, i);
  const uint64_t sw = mi * g.num_shared_experts;
  b.mat(mp + "shared_experts.gate_proj.weight", sw, h, 1.5, T, i);
  b.mat(mp + "shared_experts.up_proj.weight", sw, h, 3.0, T, i);
  b.mat(mp + "shared_experts.down_proj.weight", h, sw, 0.1, T, i);
  for (int e = 0; e < g.num_experts; ++e) {
    const std::string ep = mp + "experts." + std::to_string(e) + ".";
    struct M {
      const char* n;
      uint64_t rows, cols;
      double gain;
    };
    for (const M& m : {M{"w1", mi, L, 1.0}, M{"w2", L, mi, 0.1}, M{"w3", mi, L, 1.0}}) {
      SynthTensor& pk =
          b.add(ep + m.n + ".weight_packed", DType::kU8, {m.rows, m.cols / 2}, TensorGroup::kRoutedExpert, i, e);
      pk.init = SynthInit::kMxPacked;
      pk.hole_when_sparse = true;
      SynthTensor& sc =
          b.add(ep + m.n + ".weight_scale", DType::kU8, {m.rows, m.cols / 32}, TensorGroup::kRoutedExpert, i, e);
      sc.init = SynthInit::kMxScale;
      sc.center = static_cast<float>(mx_scale_byte(m.gain, static_cast<int>(m.cols)));
      sc.hole_when_sparse = true;
    }
  }
}

// Vision tensors: present in the real checkpoint's trailing shard, ignored by the text engine.
void add_vision(Builder& b, const SynthGeometry& g) {
  const uint64_t h = g.hidden_size;
  auto vis = [&](const std::string& name, std::vector<uint64_t> shape) -> SynthTensor& {
    SynthTensor& s = b.add(name, DType::kBF16, std::move(shape), TensorGroup::kHead, -1);
    s.scale = 0.02f;
    s.vision = true;
    s.hole_when_sparse = s.nbytes() >= (1u << 17);
    return s;
  };
  vis("mm_projector.proj.0.weight", {h, h});
  vis("vision_tower.encoder.final_layernorm.weight", {16});
  vis("vision_tower.patch_embed.proj.bias", {16});
  vis("vision_tower.patch_embed.proj.weight", {16, 3, 4, 4});
  // Stands for the rest of the vision tower; synth_layout sizes it.
  if (g.total_shard_bytes) {
    SynthTensor& f = vis("vision_tower.encoder.blocks.weight", {0});
    f.fills_total = true;
    f.hole_when_sparse = true;
  }
}

}  // namespace

std::vector<SynthTensor> synth_tensors(const SynthGeometry& g) {
  validate_geometry(g);
  Builder b;
  const std::string P = kPrefix;
  const uint64_t h = g.hidden_size;
  {
    SynthTensor& e =
        b.add(P + "embed_tokens.weight", DType::kBF16, {(uint64_t)g.vocab_size, h}, TensorGroup::kEmbedding);
    e.scale = 0.5f;  // rows are normalised before use; keep them well above bf16 noise
  }
  const auto T = TensorGroup::kLayerTrunk;
  for (int i = 0; i < g.num_hidden_layers; ++i) {
    const std::string lp = P + "layers." + std::to_string(i) + ".";
    b.norm(lp + "input_layernorm.weight", h, T, i);
    b.norm(lp + "post_attention_layernorm.weight", h, T, i);
    b.mat(lp + "self_attention_res_proj.weight", 1, h, 0.05 * std::sqrt((double)h), T, i);
    b.mat(lp + "mlp_res_proj.weight", 1, h, 0.05 * std::sqrt((double)h), T, i);
    b.norm(lp + "self_attention_res_norm.weight", h, T, i);
    b.norm(lp + "mlp_res_norm.weight", h, T, i);
    const std::string ap = lp + "self_attn.";
    if (!g.is_mla(i)) add_kda_attention(b, g, i, ap);
    else add_mla_attention(b, g, i, ap);
    if (i < g.first_k_dense_replace) {
      b.mat(lp + "mlp.gate_proj.weight", g.intermediate_size, h, 1.5, T, i);
      b.mat(lp + "mlp.up_proj.weight", g.intermediate_size, h, 3.0, T, i);
      b.mat(lp + "mlp.down_proj.weight", h, g.intermediate_size, 0.1, T, i);
      continue;
    }
    add_moe(b, g, i, lp + "block_sparse_moe.");
  }
  b.norm(P + "norm.weight", h, TensorGroup::kHead, -1);
  b.mat(P + "output_attn_res_proj.weight", 1, h, 0.05 * std::sqrt((double)h), TensorGroup::kHead, -1);
  b.norm(P + "output_attn_res_norm.weight", h, TensorGroup::kHead, -1);
  b.mat("language_model.lm_head.weight", g.vocab_size, h, 2.0, TensorGroup::kHead, -1);
  add_vision(b, g);
  return std::move(b.out);
}

namespace {

// Fills `n` bytes of tensor `s` starting at byte `begin` (a multiple of 8).
// Chunks are generated from a PRNG seeded by (tensor seed, chunk index), so
// the bytes do not depend on how the caller splits the work.
constexpr uint64_t kChunk = 1u << 22;

// Two standard normal values from one 64-bit draw (Box-Muller on two 32-bit
// uniforms; u1 is never 0, so the logarithm is finite).
inline void normal_pair(uint64_t r, double* a, double* b) {
  const double u1 = (static_cast<double>(r >> 32) + 0.5) * (1.0 / 4294967296.0);
  const double u2 = static_cast<double>(r & 0xFFFFFFFFu) * (1.0 / 4294967296.0);
  const double radius = std::sqrt(-2.0 * std::log(u1)), angle = 6.283185307179586 * u2;
  *a = radius * std::cos(angle);
  *b = radius * std::sin(angle);
}

// Gaussian noise around s.center with standard deviation s.scale.
void fill_normal(const SynthTensor& s, uint64_t& st, uint8_t* dst, uint64_t n) {
  const bool f32 = s.t.dtype == DType::kF32;
  const uint64_t count = n / (f32 ? 4 : 2);
  for (uint64_t i = 0; i < count; i += 2) {
    double z[2];
    normal_pair(splitmix(st), &z[0], &z[1]);
    for (uint64_t k = 0; k < 2 && i + k < count; ++k) {
      const float v = s.center + s.scale * static_cast<float>(z[k]);
      if (f32) std::memcpy(dst + 4 * (i + k), &v, 4);
      else {
        const uint16_t b = kernels::f32_to_bf16(v);
        std::memcpy(dst + 2 * (i + k), &b, 2);
      }
    }
  }
}

void fill_chunk(const SynthTensor& s, SynthWeights weights, uint64_t tensor_seed, uint64_t chunk, uint8_t* dst,
                uint64_t n) {
  uint64_t st = tensor_seed ^ (chunk * 0xD1B54A32D192ED03ull);
  const uint64_t first_elem_byte = chunk * kChunk;
  switch (s.init) {
    case SynthInit::kMxPacked: {
      uint64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        uint64_t r = splitmix(st);
        std::memcpy(dst + i, &r, 8);
      }
      if (i < n) {
        uint64_t r = splitmix(st);
        std::memcpy(dst + i, &r, n - i);
      }
      return;
    }
    case SynthInit::kMxScale: {
      const uint8_t c = static_cast<uint8_t>(s.center);
      uint64_t r = 0;
      for (uint64_t i = 0; i < n; ++i) {
        if ((i & 63) == 0) r = splitmix(st);
        dst[i] = static_cast<uint8_t>(c + ((r >> (i & 63)) & 1));
      }
      return;
    }
    case SynthInit::kALog: {
      float* f = reinterpret_cast<float*>(dst);
      const uint64_t count = n / 4, e0 = first_elem_byte / 4;
      for (uint64_t i = 0; i < count; ++i) {
        uint64_t r = splitmix(st);
        float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);
        f[i] = (e0 + i) < static_cast<uint64_t>(s.heads) ? 0.5f + 2.2f * u : 0.0f;
      }
      return;
    }
    case SynthInit::kUniform: {
      if (weights == SynthWeights::kNormal) {
        fill_normal(s, st, dst, n);
        return;
      }
      // Uniform on [-sqrt(3), sqrt(3)) has unit variance.
      const float amp = s.scale * 1.7320508f * 2.0f / 16777216.0f;
      const float off = s.center - s.scale * 1.7320508f;
      if (s.t.dtype == DType::kF32) {
        float* f = reinterpret_cast<float*>(dst);
        const uint64_t count = n / 4;
        for (uint64_t i = 0; i < count; i += 2) {
          uint64_t r = splitmix(st);
          f[i] = off + amp * static_cast<float>(r >> 40);
          if (i + 1 < count) f[i + 1] = off + amp * static_cast<float>((r >> 8) & 0xFFFFFF);
        }
      } else {
        uint16_t* o = reinterpret_cast<uint16_t*>(dst);
        const uint64_t count = n / 2;
        for (uint64_t i = 0; i < count; i += 2) {
          uint64_t r = splitmix(st);
          o[i] = kernels::f32_to_bf16(off + amp * static_cast<float>(r >> 40));
          if (i + 1 < count) o[i + 1] = kernels::f32_to_bf16(off + amp * static_cast<float>((r >> 8) & 0xFFFFFF));
        }
      }
      return;
    }
  }
}

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i, n);
  return buf;
}

void make_dirs(const std::string& dir) {
  std::string cur;
  std::stringstream ss(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error(ExitCode::kIo, cur + ": cannot create directory: " + std::strerror(errno));
  }
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

}  // namespace

namespace {

// Assigns tensors to shards and builds each header. Text tensors go in
// manifest order, cut at equal byte targets (so a layer may straddle two
// shards, as in the real checkpoint); vision tensors go last, in a shard of
// their own or sharing the last one.
void build_shards(SynthLayout& L, const SynthGeometry& g) {
  uint64_t text_bytes = 0, vision_bytes = 0;
  for (const SynthTensor& s : L.tensors) (s.vision ? vision_bytes : text_bytes) += s.nbytes();
  const int nshards = g.num_shards + (g.vision_shard ? 1 : 0);
  const uint64_t cut_total = std::max<uint64_t>(1, text_bytes + (g.vision_shard ? 0 : vision_bytes));
  L.shards.assign(nshards, SynthShard{});
  uint64_t acc = 0;
  for (size_t i = 0; i < L.tensors.size(); ++i) {
    const SynthTensor& s = L.tensors[i];
    int k;
    if (s.vision) {
      k = nshards - 1;
    } else {
      k = static_cast<int>((static_cast<unsigned __int128>(acc) * g.num_shards) / cut_total);
      k = std::min(k, g.num_shards - 1);
      acc += s.nbytes();
    }
    L.shards[k].tensors.push_back(i);
  }
  L.apparent_bytes = L.total_size = 0;
  for (int k = 0; k < nshards; ++k) {
    SynthShard& sh = L.shards[k];
    sh.name = shard_name(k + 1, nshards);
    // Within a file, tensors sit by decreasing element size, then by name,
    // as the reference writer lays them out.
    std::sort(sh.tensors.begin(), sh.tensors.end(), [&](size_t a, size_t b) {
      const SynthTensor &x = L.tensors[a], &y = L.tensors[b];
      uint64_t sa = dtype_size(x.t.dtype), sb = dtype_size(y.t.dtype);
      return sa != sb ? sa > sb : x.t.name < y.t.name;
    });
    JsonWriter w = JsonWriter::compact();  // the reference writer's form: no spaces
    w.begin_object();
    w.key("__metadata__").begin_object().key("format").value("pt").end_object();
    uint64_t off = 0;
    for (size_t i : sh.tensors) {
      const SynthTensor& s = L.tensors[i];
      w.key(s.t.name).begin_object().key("dtype").value(dtype_name(s.t.dtype)).key("shape").begin_array();
      for (uint64_t d : s.t.shape) w.value(static_cast<unsigned long long>(d));
      w.end_array().key("data_offsets").begin_array().value(static_cast<unsigned long long>(off));
      w.value(static_cast<unsigned long long>(off + s.nbytes())).end_array().end_object();
      off += s.nbytes();
    }
    w.end_object();
    std::string json = w.take();
    while ((8 + json.size()) % 8) json += ' ';
    sh.header.assign(8, '\0');
    for (int i = 0; i < 8; ++i) sh.header[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    sh.header += json;
    sh.file_size = sh.header.size() + off;
    L.apparent_bytes += sh.file_size;
    L.total_size += off;
  }
}

}  // namespace

SynthLayout synth_layout(const SynthGeometry& g) {
  SynthLayout L;
  L.tensors = synth_tensors(g);
  build_shards(L, g);
  if (!g.total_shard_bytes) return L;
  SynthTensor* fill = nullptr;
  for (SynthTensor& s : L.tensors)
    if (s.fills_total) fill = &s;
  // Growing the fill tensor lengthens the numbers in its shard's header, so
  // settle the size over a few rounds; headers are padded to 8 bytes, so the
  // total is reachable when it and the text bytes are multiples of 8.
  for (int round = 0; round < 16 && L.apparent_bytes != g.total_shard_bytes; ++round) {
    const int64_t diff = static_cast<int64_t>(g.total_shard_bytes - L.apparent_bytes);
    const int64_t elems = static_cast<int64_t>(fill->t.shape[0]) + diff / 2;
    if (diff % 2 || elems < 0)
      throw Error(ExitCode::kUsage, "invalid geometry: total_shard_bytes " + std::to_string(g.total_shard_bytes) +
                                        " cannot be met (the text model alone needs " +
                                        std::to_string(L.apparent_bytes - fill->nbytes()) + " bytes)");
    fill->t.shape[0] = static_cast<uint64_t>(elems);
    build_shards(L, g);
  }
  if (L.apparent_bytes != g.total_shard_bytes)
    throw Error(ExitCode::kUsage, "invalid geometry: shard files cannot add up to exactly " +
                                      std::to_string(g.total_shard_bytes) + " bytes");
  return L;
}

SynthResult write_synthetic_checkpoint(const std::string& dir, const SynthGeometry& g, const SynthOptions& opt) {
  SynthLayout L = synth_layout(g);
  make_dirs(dir);
  // The index goes last; remove an old one first so an interrupted rewrite is never mistaken for a model.
  ::unlink(path_join(dir, "model.safetensors.index.json").c_str());
  auto is_hole = [&](const SynthTensor& s) { return opt.headers_only || (opt.sparse && s.hole_when_sparse); };

  SynthResult res;
  uint64_t to_write = 0;
  for (const SynthTensor& s : L.tensors)
    if (!is_hole(s)) to_write += s.nbytes();
  std::vector<uint8_t> buf(kChunk);
  JsonWriter index(2);
  index.begin_object();
  index.key("metadata").begin_object().key("total_size").value(static_cast<unsigned long long>(L.total_size));
  index.end_object().key("weight_map").begin_object();
  for (const SynthShard& sh : L.shards) {
    const std::string path = path_join(dir, sh.name);
    {
      AtomicFileWriter out(path);
      out.write_at(0, sh.header.data(), sh.header.size());
      // Extending first leaves every unwritten range a hole.
      out.resize(sh.file_size);
      uint64_t pos = sh.header.size();
      for (size_t i : sh.tensors) {
        const SynthTensor* s = &L.tensors[i];
        const uint64_t nb = s->nbytes();
        if (!is_hole(*s)) {
          const uint64_t tseed = XXH3_64bits_withSeed(s->t.name.data(), s->t.name.size(), opt.seed);
          for (uint64_t c = 0; c * kChunk < nb; ++c) {
            const uint64_t n = std::min<uint64_t>(kChunk, nb - c * kChunk);
            fill_chunk(*s, opt.weights, tseed, c, buf.data(), n);
            out.write_at(pos + c * kChunk, buf.data(), n);
            res.written_bytes += n;
            if (opt.progress) opt.progress(res.written_bytes, to_write);
          }
        }
        pos += nb;
        index.key(s->t.name).value(sh.name);
      }
      out.commit();
    }
    res.tensor_count += sh.tensors.size();
  }
  res.apparent_bytes = L.apparent_bytes;
  res.total_size = L.total_size;
  res.shard_count = L.shards.size();

  write_text(path_join(dir, "config.json"), synth_config_json(g));
  write_text(path_join(dir, "generation_config.json"), synth_generation_config_json(g));
  if (!opt.tokenizer_from.empty()) {
    for (const char* f : {"tiktoken.model", "tokenizer_config.json"})
      write_text(path_join(dir, f), read_text_file(path_join(opt.tokenizer_from, f)));
  } else {
    write_text(path_join(dir, "tiktoken.model"), synth_tiktoken_model(g.vocab_size - 256, opt.seed));
    write_text(path_join(dir, "tokenizer_config.json"), synth_tokenizer_config_json(g.vocab_size));
  }
  index.end_object().end_object();
  write_text(path_join(dir, "model.safetensors.index.json"), index.take() + "\n");
  return res;
}

}  // namespace k3
