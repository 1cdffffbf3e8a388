// Where each routed expert's bytes are in the shards, as the few aligned
// reads that fetch it into one cache slot.
//
// An expert is 6 tensors (packed + scales of w1, w3, w2; 3 BF16 tensors when
// the checkpoint is not quantized). In the real checkpoint they are adjacent
// in one shard, so one read usually fetches the expert; tensors in different
// shards or far apart become separate reads. Every read is 4096-aligned for
// O_DIRECT and lands at an aligned offset of the slot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace k3 {

class Checkpoint;

struct ExpertRead {
  uint32_t shard = 0;
  uint64_t offset = 0;  // aligned file offset
  uint64_t length = 0;  // aligned length
  uint64_t need = 0;    // bytes that must exist in the file from `offset`
  uint64_t slot_offset = 0;
};

class ExpertIndex {
 public:
  // Throws k3::Error(kBadModel) naming a missing expert tensor.
  ExpertIndex(const ModelConfig& config, const Checkpoint& checkpoint);

  // Tensor name suffixes after expert_tensor_prefix(), in slot-offset order.
  const std::vector<std::string>& suffixes() const { return suffixes_; }
  // Reads that fill the slot for (layer, expert).
  std::vector<ExpertRead> reads(int layer, int expert) const;
  // Bytes those reads take from the disk (aligned lengths).
  uint64_t read_bytes(int layer, int expert) const;
  // Byte offset of suffix `k` of (layer, expert) within its slot.
  uint64_t tensor_offset(int layer, int expert, size_t k) const;
  // Which suffixes are MXFP4 scale tensors, and their byte sizes.
  bool is_scale(size_t k) const { return is_scale_[k]; }
  uint64_t tensor_bytes(size_t k) const { return bytes_[k]; }

  uint64_t slot_bytes() const { return slot_bytes_; }      // largest expert's aligned footprint
  uint64_t expert_bytes() const { return expert_bytes_; }  // tensor bytes of one expert

 private:
  size_t id(int layer, int expert) const;
  int first_moe_ = 0, num_experts_ = 0;
  std::vector<std::string> suffixes_;
  std::vector<bool> is_scale_;
  std::vector<uint64_t> bytes_;
  std::vector<uint32_t> span_begin_;  // per expert: index into spans_, plus a final sentinel
  std::vector<ExpertRead> spans_;
  std::vector<uint64_t> offsets_;  // per expert: suffixes_.size() slot offsets
  uint64_t slot_bytes_ = 0, expert_bytes_ = 0;
};

}  // namespace k3
