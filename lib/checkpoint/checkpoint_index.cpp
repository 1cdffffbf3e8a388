#include "checkpoint/checkpoint_index.h"

#include <simdjson.h>

#include <set>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

CheckpointIndex read_checkpoint_index(const std::string& index_path) {
  auto bad = [&](const std::string& what) { throw Error(ExitCode::kBadModel, index_path + ": " + what); };
  CheckpointIndex idx;
  idx.path = index_path;
  std::string text = read_text_file(index_path);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root)) bad("not valid JSON");
  simdjson::dom::object wm;
  if (root["weight_map"].get_object().get(wm)) bad("missing object 'weight_map'");
  uint64_t total = 0;
  if (!root["metadata"]["total_size"].get_uint64().get(total)) idx.total_size = total;
  std::set<std::string> shards;
  for (auto field : wm) {
    std::string_view shard;
    if (field.value.get_string().get(shard)) bad("weight_map entry '" + std::string(field.key) + "' is not a string");
    std::string s(shard);
    if (s.empty() || s.find('/') != std::string::npos || s.find("..") != std::string::npos)
      bad("shard name '" + s + "' must be a plain file name");
    if (!idx.weight_map.emplace(std::string(field.key), s).second)
      bad("tensor '" + std::string(field.key) +
          "' is listed twice in weight_map (the index is ambiguous; re-download it)");
    shards.insert(s);
  }
  idx.shards.assign(shards.begin(), shards.end());
  return idx;
}

}  // namespace k3
