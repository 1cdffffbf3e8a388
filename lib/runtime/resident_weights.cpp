#include "runtime/resident_weights.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"
#include "kernels/bf16.h"
#include "kernels/mxfp4.h"
#include "model/tensor_manifest.h"
#include "model/weight_binding.h"
#include "platform/memory_limits.h"
#include "runtime/resident_plan.h"

namespace k3 {

namespace {

constexpr size_t kAlign = 64;  // cache line; SIMD loads never straddle a buffer start

// What this process may use (MemAvailable and the cgroup's room, as the
// streaming plan sees it) in bytes, or 0 when unknown.
uint64_t available_memory_bytes() {
  const uint64_t a = read_memory_limits().available();
  return a == UINT64_MAX ? 0 : a;
}

}  // namespace

struct ResidentWeights::Buffer {
  void* data = nullptr;
  explicit Buffer(uint64_t nbytes) {
    const uint64_t rounded = (nbytes + kAlign - 1) / kAlign * kAlign;
    data = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (!data) throw Error(ExitCode::kResource, "out of memory allocating " + std::to_string(nbytes) + " bytes");
  }
  ~Buffer() { std::free(data); }
};

ResidentWeights::ResidentWeights(const ModelConfig& config, const Checkpoint& checkpoint, std::ostream* log)
    : config_(config) {
  validate_checkpoint(config, checkpoint);
  const std::vector<ExpectedTensor> manifest = expected_tensors(config);
  for (const ExpectedTensor& t : manifest) resident_bytes_ += checkpoint.at(t.name).info->nbytes;

  // Refused before saying anything about holding it: the refusal is the one line.
  const uint64_t avail = available_memory_bytes();
  if (avail != 0 && resident_bytes_ > avail)
    throw Error(ExitCode::kResource, "the whole model needs " + format_bytes(resident_bytes_) +
                                         " resident, more than the " + format_bytes(avail) + " available; " +
                                         stream_instead_advice());
  if (log)
    *log << tool_name() << ": holding " << resident_bytes_ << " bytes (" << format_bytes(resident_bytes_)
         << ") of weights resident in RAM\n";

  // Periodic progress lines: loading the real model's trunk takes minutes.
  const auto start = SteadyClock::now();
  auto last_report = start;
  uint64_t loaded = 0;
  std::vector<File> shards;
  for (const ShardInfo& s : checkpoint.shards()) shards.push_back(File::open_read(s.path));
  for (const ExpectedTensor& t : manifest) {
    const TensorLocation& loc = checkpoint.at(t.name);
    auto buf = std::make_unique<Buffer>(loc.info->nbytes);
    shards[loc.shard].pread_exact(buf->data, loc.info->nbytes, loc.info->offset);
    if (t.group == TensorGroup::kRoutedExpert && t.dtype == DType::kU8 && t.name.size() > 13 &&
        t.name.compare(t.name.size() - 13, 13, ".weight_scale") == 0) {
      const auto* s = static_cast<const uint8_t*>(buf->data);
      const size_t bad = kernels::find_invalid_mxfp4_scale(s, loc.info->nbytes);
      if (bad != loc.info->nbytes)
        throw Error(ExitCode::kBadModel, checkpoint.shards()[loc.shard].path + ": tensor '" + t.name +
                                             "' holds MXFP4 scale byte " + std::to_string(s[bad]) + " at index " +
                                             std::to_string(bad) + " (bytes >= 254 are NaN or overflow FP32)");
    }
    buffers_.emplace(t.name, std::move(buf));
    loaded += loc.info->nbytes;
    const auto now = SteadyClock::now();
    if (log && now - last_report > std::chrono::seconds(5)) {
      last_report = now;
      const double s = seconds_since(start);
      *log << tool_name() << ": loaded " << format_bytes(loaded) << " of " << format_bytes(resident_bytes_) << " ("
           << static_cast<int>(s) << " s)" << std::endl;
    }
  }

  const TensorLookup lookup = [this](const std::string& name) { return tensor(name); };
  embed_ = Bf16Matrix{static_cast<const uint16_t*>(tensor(config.model_prefix + "embed_tokens.weight")),
                      config.vocab_size, config.hidden_size};
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    layers_.push_back(bind_layer_weights(config, i, lookup));
    experts_.emplace_back();
    if (config.is_moe_layer(i))
      for (int e = 0; e < config.num_experts; ++e) experts_.back().push_back(bind_expert_weights(config, i, e, lookup));
  }
  head_ = bind_head_weights(config, lookup);
}

ResidentWeights::~ResidentWeights() = default;

const void* ResidentWeights::tensor(const std::string& name) const {
  auto it = buffers_.find(name);
  if (it == buffers_.end()) throw Error(ExitCode::kInternal, "tensor '" + name + "' was not loaded");
  return it->second->data;
}

void ResidentWeights::embed(const int32_t* ids, size_t n, float* out) {
  const size_t hidden = static_cast<size_t>(config_.hidden_size);
  for (size_t t = 0; t < n; ++t) {
    const uint16_t* row = embed_.data + static_cast<size_t>(ids[t]) * hidden;
    for (size_t c = 0; c < hidden; ++c) out[t * hidden + c] = kernels::bf16_to_f32(row[c]);
  }
}

const LayerWeights& ResidentWeights::acquire_layer(int layer) { return layers_.at(layer); }

void ResidentWeights::for_each_expert(int layer, const std::vector<int>& experts,
                                      const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) {
  const auto& table = experts_.at(layer);
  for (size_t k = 0; k < experts.size(); ++k) on_ready(k, table.at(experts[k]));
}

}  // namespace k3
