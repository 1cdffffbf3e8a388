// Layer checkpoint: the files on disk (safetensors headers, the shard index, dtypes).
//
// A checkpoint directory: model.safetensors.index.json plus its shards.
//
// Opening one reads the index and the header of every shard it names, so each
// tensor's shard, absolute offset, dtype and shape are known before any
// compute. For the real K3 that is ~500k tensors over 96 shards. Tensors that
// the index lists but whose shard header lacks them are an error; tensors
// under prefixes the text engine does not use (vision_tower., mm_projector.)
// are kept in the table but never required.
//
// The table is flat (one TensorInfo per tensor in a vector, an open-address
// hash of indices for lookup) rather than a map per shard plus a map by
// name: at K3's scale that halves the memory and the load time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/safetensors.h"

namespace k3 {

struct ShardInfo {
  std::string file;  // name relative to the model directory
  std::string path;  // full path
  uint64_t file_size = 0;
  uint64_t header_xxh3 = 0;  // of the 8-byte length and the JSON header
  int64_t mtime_ns = 0;      // modification time and inode when opened
  uint64_t inode = 0;
};

struct TensorLocation {
  const TensorInfo* info = nullptr;
  uint32_t shard = 0;  // index into Checkpoint::shards()
};

class Checkpoint {
 public:
  // (name, location); the name is the TensorInfo's own.
  using Entry = std::pair<const std::string&, TensorLocation>;

  // Throws k3::Error(kBadModel) naming the file and what is wrong.
  static Checkpoint open(const std::string& model_dir);

  // Entries point into the tensor table: movable, not copyable.
  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  const std::string& dir() const { return dir_; }
  const std::vector<ShardInfo>& shards() const { return shards_; }
  uint64_t index_total_size() const { return index_total_size_; }  // metadata.total_size (0 if absent)

  // nullptr when absent.
  const TensorLocation* find(std::string_view name) const;
  // Throws naming the tensor when absent.
  const TensorLocation& at(std::string_view name) const;
  size_t tensor_count() const { return entries_.size(); }
  // Every tensor, shard by shard (for (const auto& [name, loc] : c.tensors())).
  const std::vector<Entry>& tensors() const { return entries_; }

 private:
  Checkpoint() = default;
  void build_lookup();

  std::string dir_;
  std::vector<ShardInfo> shards_;
  std::vector<TensorInfo> infos_;  // never resized after entries_ is built
  std::vector<Entry> entries_;
  std::vector<uint32_t> slots_;  // entry index + 1; 0 = empty; size a power of two
  uint64_t index_total_size_ = 0;
};

}  // namespace k3
