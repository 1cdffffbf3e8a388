#include "synth/synth_dspark.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/atomic_file_writer.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/file.h"
#include "common/progress_meter.h"
#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"

namespace k3 {

namespace {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  bool norm;  // 1.0 everywhere (a norm weight), always written
  uint64_t nbytes() const {
    uint64_t n = 2;
    for (uint64_t d : shape) n *= d;
    return n;
  }
};

// Every tensor of a Kimi-K3-DSpark checkpoint, in the order the loader reads
// them (so a draft pass reads its file front to back).
std::vector<Tensor> dspark_tensors(const DSparkConfig& c) {
  const uint64_t H = c.hidden_size, heads = c.num_heads, I = c.intermediate_size, V = c.vocab_size;
  const uint64_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, rope = c.qk_rope_head_dim;
  std::vector<Tensor> t;
  t.push_back({"embed_tokens.weight", {V, H}, false});
  t.push_back({"context_proj.weight", {H, H * static_cast<uint64_t>(c.num_taps())}, false});
  t.push_back({"context_norm.weight", {H}, true});
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {H}, true});
    t.push_back({p + "self_attn.q_a_proj.weight", {ql, H}, false});
    t.push_back({p + "self_attn.q_a_layernorm.weight", {ql}, true});
    t.push_back({p + "self_attn.q_b_proj.weight", {heads * static_cast<uint64_t>(c.qk_head_dim()), ql}, false});
    t.push_back({p + "self_attn.kv_a_proj_with_mqa.weight", {kvl + rope, H}, false});
    t.push_back({p + "self_attn.kv_a_layernorm.weight", {kvl}, true});
    t.push_back({p + "self_attn.kv_b_proj.weight",
                 {heads * static_cast<uint64_t>(c.qk_nope_head_dim + c.v_head_dim), kvl},
                 false});
    t.push_back({p + "self_attn.o_proj.weight", {H, heads * static_cast<uint64_t>(c.v_head_dim)}, false});
    t.push_back({p + "post_attention_layernorm.weight", {H}, true});
    t.push_back({p + "mlp.gate_proj.weight", {I, H}, false});
    t.push_back({p + "mlp.up_proj.weight", {I, H}, false});
    t.push_back({p + "mlp.down_proj.weight", {H, I}, false});
  }
  t.push_back({"final_norm.weight", {H}, true});
  t.push_back({"markov_head.markov_w1.weight", {V, static_cast<uint64_t>(c.markov_rank)}, false});
  t.push_back({"markov_head.markov_w2.weight", {V, static_cast<uint64_t>(c.markov_rank)}, false});
  if (c.confidence_head) {
    // Small: written even when sparse, so the confidence logits are not all 0.
    t.push_back({"confidence_head.proj.weight", {1, H + static_cast<uint64_t>(c.markov_rank)}, true});
    t.push_back({"confidence_head.proj.bias", {1}, true});
  }
  return t;
}

uint64_t next_random(uint64_t& s) {  // splitmix64
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform noise in about +-1/64 (sign, exponent 2^-7..2^-6 and 7 random
// mantissa bits: finite, small enough for activations to stay finite).
uint16_t noise_bf16(uint64_t r) {
  const uint16_t sign = static_cast<uint16_t>((r >> 8) & 1u) << 15;
  const uint16_t exponent = static_cast<uint16_t>(127 - 7 + ((r >> 9) & 1u)) << 7;
  return static_cast<uint16_t>(sign | exponent | (r & 0x7Fu));
}

}  // namespace

SynthDSparkResult write_synthetic_dspark(const std::string& dir, const std::string& config_json,
                                         const SynthDSparkOptions& opt) {
  const DSparkConfig c = parse_dspark_config(config_json, dir + "/config.json");
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(ExitCode::kIo, dir + ": cannot create directory: " + std::strerror(errno));
  const std::vector<Tensor> tensors = dspark_tensors(c);
  std::vector<TensorToWrite> header;
  uint64_t data = 0, to_write = 0;
  for (const Tensor& t : tensors) {
    header.push_back({t.name, DType::kBF16, t.shape, t.nbytes()});
    data += t.nbytes();
    if (t.norm || !opt.sparse) to_write += t.nbytes();
  }
  const std::string head = make_safetensors_header(header);
  SynthDSparkResult res;
  res.tensor_count = tensors.size();
  res.file_bytes = head.size() + data;
  {
    AtomicFileWriter out(path_join(dir, "model.safetensors"));
    out.write_at(0, head.data(), head.size());
    out.resize(res.file_bytes);  // extending first leaves every unwritten range a hole
    constexpr uint64_t kChunk = 8u << 20;
    std::vector<uint16_t> buf(kChunk / 2);
    uint64_t pos = head.size(), state = opt.seed;
    for (const Tensor& t : tensors) {
      const uint64_t nb = t.nbytes();
      if (t.norm || !opt.sparse) {
        for (uint64_t off = 0; off < nb; off += kChunk) {
          const uint64_t n = std::min(kChunk, nb - off);
          for (uint64_t i = 0; i < n / 2; ++i) buf[i] = t.norm ? 0x3F80 : noise_bf16(next_random(state));
          out.write_at(pos + off, buf.data(), n);
          res.written_bytes += n;
          if (opt.progress) opt.progress(res.written_bytes, to_write);
        }
      }
      pos += nb;
    }
    out.commit();
  }
  write_file_atomic(path_join(dir, "config.json"), config_json.data(), config_json.size());
  return res;
}

int synth_dspark_main(const std::string& dir, uint64_t seed, bool sparse, bool dry_run) {
  const DSparkConfig c = kimi_k3_dspark_geometry();
  uint64_t total = 0, written = 0;
  for (const Tensor& t : dspark_tensors(c)) {
    total += t.nbytes();
    if (t.norm || !sparse) written += t.nbytes();
  }
  std::fprintf(stderr,
               "k3-synth: Kimi-K3-DSpark geometry: %d layers, hidden %d, %d heads, vocabulary %d; tensors %s "
               "(the draft's own %s), %s to write\n",
               c.num_hidden_layers, c.hidden_size, c.num_heads, c.vocab_size, format_bytes(total).c_str(),
               format_bytes(dspark_weight_bytes(c)).c_str(), format_bytes(written).c_str());
  if (dry_run) return 0;
  SynthDSparkOptions opt;
  opt.seed = seed;
  opt.sparse = sparse;
  ProgressMeter meter("k3-synth: writing", written);
  opt.progress = [&](uint64_t done, uint64_t) { meter.update(done); };
  const SynthDSparkResult r = write_synthetic_dspark(dir, kimi_k3_dspark_config_json(), opt);
  meter.finish(r.written_bytes);
  std::fprintf(stderr, "k3-synth: wrote %s: config.json + model.safetensors (%zu tensors, %s, data written %s)\n",
               dir.c_str(), r.tensor_count, format_bytes(r.file_bytes).c_str(), format_bytes(r.written_bytes).c_str());
  return 0;
}

}  // namespace k3
