// What an ExpertCache test opens: a checkpoint's config, its shards as
// O_DIRECT files and a read engine, as the streaming weights hold them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "model/config.h"

namespace k3::test {

struct ExpertCacheModel {
  explicit ExpertCacheModel(const std::string& dir)
      : config(load_model_config(dir)), checkpoint(Checkpoint::open(dir)) {
    for (const ShardInfo& s : checkpoint.shards()) files.push_back(std::make_unique<DirectFile>(s.path));
  }
  ModelConfig config;
  Checkpoint checkpoint;
  std::vector<std::unique_ptr<DirectFile>> files;
  ReadEngine io{3};
};

}  // namespace k3::test
