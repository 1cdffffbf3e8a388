#include "cli/manifest_digests.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "common/error.h"
#include "common/file.h"
#include "fetch/fetch_manifest.h"

namespace k3 {

namespace {

bool is_xxh3_128_hex(const std::string& s) {
  return s.size() == 32 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

ShardDigests manifest_shard_digests(const std::string& model_dir) {
  const std::string path = fetch_manifest_path(model_dir);
  if (!file_exists(path)) return nullptr;
  FetchManifest m;
  try {
    m = read_fetch_manifest(path);
  } catch (const Error&) {
    return nullptr;  // unreadable: every shard is read instead (`verify` reports the manifest)
  }
  std::map<std::string, ManifestFile> by_path;
  for (const ManifestFile& f : m.files)
    if (f.complete && is_xxh3_128_hex(f.xxh3_128)) by_path[path_join(model_dir, f.path)] = f;
  return [by_path = std::move(by_path)](const std::string& shard) -> std::string {
    const auto it = by_path.find(shard);
    if (it == by_path.end()) return "";
    struct stat st {};
    if (::stat(shard.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
    const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    if (static_cast<uint64_t>(st.st_size) != it->second.size || mtime_ns != it->second.mtime_ns) return "";
    return it->second.xxh3_128;
  };
}

}  // namespace k3
