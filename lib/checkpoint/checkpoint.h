// A checkpoint directory: model.safetensors.index.json plus its shards.
//
// Opening one reads the index and the header of every shard it names, so each
// tensor's shard, absolute offset, dtype and shape are known before any
// compute. For the real K3 that is ~500k tensors over 96 shards. Tensors that
// the index lists but whose shard header lacks them are an error; tensors
// under prefixes the text engine does not use (vision_tower., mm_projector.)
// are kept in the table but never required.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/safetensors.h"

namespace k3 {

struct ShardInfo {
  std::string file;  // name relative to the model directory
  std::string path;  // full path
  uint64_t file_size = 0;
};

struct TensorLocation {
  const TensorInfo* info = nullptr;
  uint32_t shard = 0;  // index into Checkpoint::shards()
};

class Checkpoint {
 public:
  // Throws k3::Error(kBadModel) naming the file and what is wrong.
  static Checkpoint open(const std::string& model_dir);

  const std::string& dir() const { return dir_; }
  const std::vector<ShardInfo>& shards() const { return shards_; }
  uint64_t index_total_size() const { return index_total_size_; }  // metadata.total_size (0 if absent)

  // nullptr when absent.
  const TensorLocation* find(const std::string& name) const;
  // Throws naming the tensor when absent.
  const TensorLocation& at(const std::string& name) const;
  size_t tensor_count() const { return by_name_.size(); }
  const std::unordered_map<std::string, TensorLocation>& tensors() const { return by_name_; }

 private:
  std::string dir_;
  std::vector<ShardInfo> shards_;
  std::vector<std::unique_ptr<SafetensorsHeader>> headers_;
  std::unordered_map<std::string, TensorLocation> by_name_;
  uint64_t index_total_size_ = 0;
};

}  // namespace k3
