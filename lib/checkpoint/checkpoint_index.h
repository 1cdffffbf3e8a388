// model.safetensors.index.json: which shard file holds each tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace k3 {

struct CheckpointIndex {
  std::string path;
  std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
  std::vector<std::string> shards;                // distinct shard file names, sorted
  uint64_t total_size = 0;                        // metadata.total_size (tensor bytes; 0 if absent)
};

// Throws k3::Error(kBadModel) naming the file when it is missing, not JSON,
// lacks weight_map, or names a shard that is not a plain file name.
CheckpointIndex read_checkpoint_index(const std::string& index_path);

}  // namespace k3
