#include "checkpoint/checkpoint.h"

#include <simdjson.h>

#include <algorithm>
#include <map>

#include "checkpoint/checkpoint_index.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {
[[noreturn]] void bad(const std::string& what) { throw Error(ExitCode::kBadModel, what); }
}  // namespace

Checkpoint Checkpoint::open(const std::string& model_dir) {
  Checkpoint c;
  c.dir_ = model_dir;
  const std::string index_path = path_join(model_dir, "model.safetensors.index.json");
  // name -> shard file, in index order of first appearance of each shard.
  std::map<std::string, std::vector<std::string>> names_by_shard;
  std::vector<std::string> shard_order;

  if (file_exists(index_path)) {
    CheckpointIndex index = read_checkpoint_index(index_path);
    c.index_total_size_ = index.total_size;
    shard_order = index.shards;
    for (const auto& [name, shard] : index.weight_map) names_by_shard[shard].push_back(name);
  } else if (file_exists(path_join(model_dir, "model.safetensors"))) {
    shard_order.push_back("model.safetensors");
    names_by_shard["model.safetensors"];  // every tensor of the single file
  } else {
    bad(model_dir + ": no model.safetensors.index.json or model.safetensors (is this a model directory?)");
  }

  std::sort(shard_order.begin(), shard_order.end());
  for (const std::string& s : shard_order) {
    ShardInfo si;
    si.file = s;
    si.path = path_join(model_dir, s);
    if (!file_exists(si.path))
      bad(si.path + ": shard named in the index is missing (re-download it, then run k3-fetch-verify verify)");
    auto hdr = std::make_unique<SafetensorsHeader>(read_safetensors_header(si.path));
    si.file_size = hdr->file_size;
    const uint32_t shard_idx = static_cast<uint32_t>(c.shards_.size());
    const auto& expected = names_by_shard[s];
    if (expected.empty()) {
      for (auto& [name, info] : hdr->tensors) c.by_name_[name] = TensorLocation{&info, shard_idx};
    } else {
      for (const std::string& name : expected) {
        auto it = hdr->tensors.find(name);
        if (it == hdr->tensors.end())
          bad(si.path + ": tensor '" + name + "' is listed in the index but not in this shard's header");
        c.by_name_[name] = TensorLocation{&it->second, shard_idx};
      }
    }
    c.shards_.push_back(std::move(si));
    c.headers_.push_back(std::move(hdr));
  }
  return c;
}

const TensorLocation* Checkpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

const TensorLocation& Checkpoint::at(const std::string& name) const {
  const TensorLocation* t = find(name);
  if (!t) bad(dir_ + ": tensor '" + name + "' is missing from the checkpoint");
  return *t;
}

}  // namespace k3
