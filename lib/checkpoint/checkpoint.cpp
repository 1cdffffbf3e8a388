#include "checkpoint/checkpoint.h"

#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "common/command_keys.h"
#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"

namespace k3 {

namespace {
[[noreturn]] void bad(const std::string& what) { throw Error(ExitCode::kBadModel, what); }

size_t hash_name(std::string_view s) { return std::hash<std::string_view>{}(s); }

size_t table_size(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  return cap;
}

// Open addressing with linear probing over ids 1..n; `key(id)` gives the
// name of an id. Returns the slot holding `name`, or the empty slot where it
// would go.
template <class Key>
size_t probe(const std::vector<uint32_t>& slots, std::string_view name, const Key& key) {
  const size_t mask = slots.size() - 1;
  size_t i = hash_name(name) & mask;
  while (slots[i] != 0 && key(slots[i]) != name) i = (i + 1) & mask;
  return i;
}
// The index's tensors and their shards. Names stay views into the parsed
// document until the shard headers supply the owned copies.
struct IndexTable {
  simdjson::dom::parser parser;
  simdjson::padded_string index_text;
  std::vector<std::string> shard_names;           // sorted
  std::vector<std::vector<uint32_t>> by_shard;    // index ids (1-based) per shard, index order
  std::vector<std::string_view> index_names{""};  // id -> name (id 0 unused)
  std::vector<uint32_t> index_shard{0};           // id -> shard
  std::vector<uint32_t> index_slots;              // hash of ids by name
  std::optional<uint64_t> total_size;             // metadata.total_size
};

// Reads model.safetensors.index.json into `t`, refusing a malformed one.
void read_index(const std::string& index_path, IndexTable& t) {
  // Through read_text_file: a FIFO or a link to /dev/zero is refused, and
  // the size is bounded, before any of it is parsed.
  t.index_text = simdjson::padded_string(read_text_file(index_path));
  simdjson::dom::element root;
  if (t.parser.parse(t.index_text).get(root)) bad(index_path + ": not valid JSON");
  simdjson::dom::object wm;
  if (root["weight_map"].get_object().get(wm)) bad(index_path + ": missing object 'weight_map'");
  uint64_t total = 0;
  if (!root["metadata"]["total_size"].get_uint64().get(total)) t.total_size = total;
  // Shard names first (few, and sorted so shard order does not depend on
  // the index's order), then every tensor name against its shard.
  std::vector<std::string_view> shard_of;
  shard_of.reserve(wm.size());
  for (auto field : wm) {
    std::string_view shard;
    if (field.value.get_string().get(shard))
      bad(index_path + ": weight_map entry '" + std::string(field.key) + "' is not a string");
    if (shard.empty() || shard.find('/') != std::string_view::npos || shard.find("..") != std::string_view::npos)
      bad(index_path + ": shard name '" + std::string(shard) + "' must be a plain file name");
    shard_of.push_back(shard);
    if (std::find(t.shard_names.begin(), t.shard_names.end(), shard) == t.shard_names.end())
      t.shard_names.emplace_back(shard);
  }
  std::sort(t.shard_names.begin(), t.shard_names.end());
  t.by_shard.resize(t.shard_names.size());
  t.index_slots.assign(table_size(shard_of.size()), 0);
  auto key = [&](uint32_t id) { return t.index_names[id]; };
  size_t k = 0;
  for (auto field : wm) {
    const std::string_view name = field.key;
    const uint32_t s = static_cast<uint32_t>(
        std::lower_bound(t.shard_names.begin(), t.shard_names.end(), shard_of[k++]) - t.shard_names.begin());
    const size_t slot = probe(t.index_slots, name, key);
    if (t.index_slots[slot] != 0)  // JSON readers disagree on which copy wins: refuse
      bad(index_path + ": tensor '" + std::string(name) +
          "' is listed twice in weight_map (the index is ambiguous; re-download it)");
    const uint32_t id = static_cast<uint32_t>(t.index_names.size());
    t.index_names.push_back(name);
    t.index_shard.push_back(s);
    t.index_slots[slot] = id;
  }
  for (uint32_t id = 1; id < t.index_names.size(); ++id) t.by_shard[t.index_shard[id]].push_back(id);
}
}  // namespace

Checkpoint Checkpoint::open(const std::string& model_dir) {
  Checkpoint c;
  c.dir_ = model_dir;
  const std::string index_path = path_join(model_dir, "model.safetensors.index.json");
  IndexTable t;
  bool single_file = false;
  if (file_exists(index_path)) {
    read_index(index_path, t);
    if (t.total_size) c.index_total_size_ = *t.total_size;
  } else if (file_exists(path_join(model_dir, "model.safetensors"))) {
    t.shard_names.push_back("model.safetensors");
    t.by_shard.resize(1);
    single_file = true;  // every tensor of the single file
  } else {
    bad(model_dir + ": no model.safetensors.index.json or model.safetensors (is this a model directory?)");
  }
  const std::vector<std::string>& shard_names = t.shard_names;
  const std::vector<std::vector<uint32_t>>& by_shard = t.by_shard;
  const std::vector<std::string_view>& index_names = t.index_names;
  const std::vector<uint32_t>& index_shard = t.index_shard;
  const std::vector<uint32_t>& index_slots = t.index_slots;

  c.infos_.reserve(index_names.size() - 1);
  std::vector<uint32_t> found(index_names.size(), 0);  // id -> info index + 1
  std::vector<uint32_t> info_shard;
  info_shard.reserve(index_names.size() - 1);
  auto key = [&](uint32_t id) { return index_names[id]; };
  for (uint32_t s = 0; s < shard_names.size(); ++s) {
    ShardInfo si;
    si.file = shard_names[s];
    si.path = path_join(model_dir, si.file);
    if (!file_exists(si.path))
      bad(si.path + ": shard named in the index is missing (re-download it, then run " + spelled(kVerifyCheckpoint) +
          ")");
    SafetensorsExtent e = read_safetensors_tensors(si.path, [&](TensorInfo&& ti) {
      if (!single_file) {
        const uint32_t id = index_slots[probe(index_slots, ti.name, key)];
        // Kept only when the index places it in this shard (first copy in the header).
        if (id == 0 || index_shard[id] != s || found[id]) return;
        found[id] = static_cast<uint32_t>(c.infos_.size() + 1);
      }
      c.infos_.push_back(std::move(ti));
      info_shard.push_back(s);
    });
    si.file_size = e.file_size;
    si.header_xxh3 = e.header_xxh3;
    si.mtime_ns = e.mtime_ns;
    si.inode = e.inode;
    for (uint32_t id : by_shard[s])
      if (!found[id])
        bad(si.path + ": tensor '" + std::string(index_names[id]) +
            "' is listed in the index but not in this shard's header");
    c.shards_.push_back(std::move(si));
  }

  c.entries_.reserve(c.infos_.size());
  for (size_t i = 0; i < c.infos_.size(); ++i)
    c.entries_.emplace_back(c.infos_[i].name, TensorLocation{&c.infos_[i], info_shard[i]});
  c.build_lookup();
  return c;
}

void Checkpoint::build_lookup() {
  slots_.assign(table_size(entries_.size()), 0);
  auto key = [&](uint32_t id) { return std::string_view(entries_[id - 1].first); };
  for (size_t i = 0; i < entries_.size(); ++i) {
    const size_t slot = probe(slots_, entries_[i].first, key);
    if (slots_[slot] == 0) slots_[slot] = static_cast<uint32_t>(i + 1);  // single file: first copy wins
  }
}

const TensorLocation* Checkpoint::find(std::string_view name) const {
  if (slots_.empty()) return nullptr;
  auto key = [&](uint32_t id) { return std::string_view(entries_[id - 1].first); };
  const uint32_t id = slots_[probe(slots_, name, key)];
  return id ? &entries_[id - 1].second : nullptr;
}

const TensorLocation& Checkpoint::at(std::string_view name) const {
  const TensorLocation* t = find(name);
  if (!t) bad(dir_ + ": tensor '" + std::string(name) + "' is missing from the checkpoint");
  return *t;
}

}  // namespace k3
