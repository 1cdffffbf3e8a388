#include "expert_cache/expert_index.h"

#include <algorithm>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "io/aligned_buffer.h"
#include "model/tensor_manifest.h"

namespace k3 {

namespace {
// Two tensors closer than this in one shard are fetched by one read
// (reading the gap costs less than another request).
constexpr uint64_t kMergeGap = 64 * 1024;
}  // namespace

ExpertIndex::ExpertIndex(const ModelConfig& c, const Checkpoint& ckpt) {
  for (const char* w : {"w1", "w3", "w2"}) {
    if (c.experts_mxfp4) {
      suffixes_.push_back(std::string(w) + ".weight_packed");
      suffixes_.push_back(std::string(w) + ".weight_scale");
    } else {
      suffixes_.push_back(std::string(w) + ".weight");
    }
  }
  const size_t K = suffixes_.size();
  is_scale_.resize(K);
  bytes_.assign(K, 0);
  for (size_t k = 0; k < K; ++k) is_scale_[k] = suffixes_[k].find("scale") != std::string::npos;
  first_moe_ = c.first_k_dense_replace;
  num_experts_ = c.num_experts;
  const int moe_layers = std::max(0, c.num_hidden_layers - first_moe_);
  span_begin_.reserve(static_cast<size_t>(moe_layers) * num_experts_ + 1);
  offsets_.reserve(static_cast<size_t>(moe_layers) * num_experts_ * K);
  struct T {
    uint32_t shard;
    uint64_t off, n;
    size_t k;
  };
  std::vector<T> ts(K);
  for (int l = first_moe_; l < c.num_hidden_layers; ++l) {
    for (int e = 0; e < num_experts_; ++e) {
      const std::string p = expert_tensor_prefix(c, l, e);
      uint64_t expert_bytes = 0;
      for (size_t k = 0; k < K; ++k) {
        const TensorLocation& loc = ckpt.at(p + suffixes_[k]);
        ts[k] = T{loc.shard, loc.info->offset, loc.info->nbytes, k};
        bytes_[k] = loc.info->nbytes;
        expert_bytes += loc.info->nbytes;
      }
      expert_bytes_ = std::max(expert_bytes_, expert_bytes);
      std::vector<T> sorted = ts;
      std::sort(sorted.begin(), sorted.end(),
                [](const T& a, const T& b) { return a.shard != b.shard ? a.shard < b.shard : a.off < b.off; });
      span_begin_.push_back(static_cast<uint32_t>(spans_.size()));
      std::vector<uint64_t> off(K);
      uint64_t slot = 0;
      size_t i = 0;
      while (i < K) {
        // Group tensors [i, j) into one read.
        uint64_t start = sorted[i].off, end = sorted[i].off + sorted[i].n;
        size_t j = i + 1;
        while (j < K && sorted[j].shard == sorted[i].shard && sorted[j].off <= end + kMergeGap) {
          end = std::max(end, sorted[j].off + sorted[j].n);
          ++j;
        }
        ExpertRead r;
        r.shard = sorted[i].shard;
        r.offset = align_down(start);
        r.length = align_up(end) - r.offset;
        r.need = end - r.offset;
        r.slot_offset = slot;
        for (size_t q = i; q < j; ++q) off[sorted[q].k] = slot + (sorted[q].off - r.offset);
        slot += r.length;
        spans_.push_back(r);
        i = j;
      }
      for (size_t k = 0; k < K; ++k) offsets_.push_back(off[k]);
      slot_bytes_ = std::max(slot_bytes_, slot);
    }
  }
  span_begin_.push_back(static_cast<uint32_t>(spans_.size()));
}

size_t ExpertIndex::id(int layer, int expert) const {
  return static_cast<size_t>(layer - first_moe_) * num_experts_ + expert;
}

std::vector<ExpertRead> ExpertIndex::reads(int layer, int expert) const {
  const size_t i = id(layer, expert);
  return std::vector<ExpertRead>(spans_.begin() + span_begin_[i], spans_.begin() + span_begin_[i + 1]);
}

uint64_t ExpertIndex::read_bytes(int layer, int expert) const {
  const size_t i = id(layer, expert);
  uint64_t bytes = 0;
  for (uint32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k) bytes += spans_[k].length;
  return bytes;
}

uint64_t ExpertIndex::tensor_offset(int layer, int expert, size_t k) const {
  return offsets_[id(layer, expert) * suffixes_.size() + k];
}

}  // namespace k3
