#include "state/model_fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/file.h"
#include "model/config.h"

namespace k3 {

namespace {
std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t hash_file_text(const std::string& path) {
  std::string text = read_text_file(path);
  return XXH3_64bits(text.data(), text.size());
}

void append_tensor_bytes(const Checkpoint& ckpt, const std::string& name, uint64_t max_bytes,
                         std::vector<char>& out) {
  const TensorLocation& loc = ckpt.at(name);
  uint64_t n = std::min(loc.info->nbytes, max_bytes);
  size_t at = out.size();
  out.resize(at + n);
  File f = File::open_read(ckpt.shards()[loc.shard].path);
  f.pread_exact(out.data() + at, n, loc.info->offset);
}
}  // namespace

std::string ModelFingerprint::describe() const {
  return "config " + hex(config_hash) + ", index " + hex(index_hash) + ", weights " + hex(weights_probe);
}

ModelFingerprint fingerprint_model(const ModelConfig& config, const Checkpoint& ckpt) {
  ModelFingerprint fp;
  fp.config_hash = hash_file_text(path_join(ckpt.dir(), "config.json"));
  std::string index = path_join(ckpt.dir(), "model.safetensors.index.json");
  if (file_exists(index)) fp.index_hash = hash_file_text(index);
  std::vector<char> probe;
  append_tensor_bytes(ckpt, config.model_prefix + "norm.weight", UINT64_MAX, probe);
  append_tensor_bytes(ckpt, config.lm_head_name, 64 * 1024, probe);
  fp.weights_probe = XXH3_64bits(probe.data(), probe.size());
  return fp;
}

}  // namespace k3
