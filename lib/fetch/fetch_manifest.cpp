#include "fetch/fetch_manifest.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "common/file.h"
#include "common/json_writer.h"

namespace k3 {

namespace {

constexpr const char* kFormat = "k3-fetch-manifest/1";

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ExitCode::kBadModel,
              path + ": " + what + " (delete it and run k3-fetch-verify download again to rebuild it)");
}

}  // namespace

ManifestFile* FetchManifest::find(const std::string& path) {
  auto it = std::lower_bound(files.begin(), files.end(), path,
                             [](const ManifestFile& f, const std::string& p) { return f.path < p; });
  return (it != files.end() && it->path == path) ? &*it : nullptr;
}

const ManifestFile* FetchManifest::find(const std::string& path) const {
  return const_cast<FetchManifest*>(this)->find(path);
}

void FetchManifest::upsert(const ManifestFile& f) {
  auto it = std::lower_bound(files.begin(), files.end(), f.path,
                             [](const ManifestFile& a, const std::string& p) { return a.path < p; });
  if (it != files.end() && it->path == f.path) *it = f;
  else files.insert(it, f);
}

std::string fetch_manifest_path(const std::string& dir) { return path_join(dir, kFetchManifestName); }

FetchManifest read_fetch_manifest(const std::string& path) {
  std::string text = read_text_file(path);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root)) bad(path, "the manifest is not valid JSON");
  std::string_view format;
  if (root["format"].get_string().get(format) || format != kFormat)
    bad(path, std::string("unknown manifest format (expected ") + kFormat + ")");
  FetchManifest m;
  auto str = [&](simdjson::dom::element e, const char* key, std::string* out, bool required) {
    std::string_view v;
    auto err = e[key].get_string().get(v);
    if (err) {
      if (required) bad(path, std::string("missing string '") + key + "'");
      return;
    }
    *out = std::string(v);
  };
  str(root, "repo", &m.repo, true);
  str(root, "revision", &m.revision, true);
  str(root, "commit", &m.commit, true);
  str(root, "endpoint", &m.endpoint, false);
  simdjson::dom::array files;
  if (root["files"].get_array().get(files)) bad(path, "missing array 'files'");
  for (simdjson::dom::element e : files) {
    ManifestFile f;
    str(e, "path", &f.path, true);
    str(e, "sha256", &f.sha256, false);
    str(e, "git_oid", &f.git_oid, false);
    str(e, "xxh3_128", &f.xxh3_128, false);
    uint64_t size = 0;
    if (e["size"].get_uint64().get(size)) bad(path, "file '" + f.path + "' has no integer 'size'");
    f.size = size;
    bool b = false;
    if (!e["lfs"].get_bool().get(b)) f.lfs = b;
    if (!e["complete"].get_bool().get(b)) f.complete = b;
    int64_t mt = 0;
    if (!e["mtime_ns"].get_int64().get(mt)) f.mtime_ns = mt;
    m.upsert(f);
  }
  return m;
}

void write_fetch_manifest(const std::string& path, const FetchManifest& m) {
  std::string out = "{\n  \"format\": ";
  append_json_string(out, kFormat);
  out += ",\n  \"repo\": ";
  append_json_string(out, m.repo);
  out += ",\n  \"revision\": ";
  append_json_string(out, m.revision);
  out += ",\n  \"commit\": ";
  append_json_string(out, m.commit);
  out += ",\n  \"endpoint\": ";
  append_json_string(out, m.endpoint);
  out += ",\n  \"files\": [";
  for (size_t i = 0; i < m.files.size(); ++i) {
    const ManifestFile& f = m.files[i];
    out += i ? ",\n    {" : "\n    {";
    out += "\"path\": ";
    append_json_string(out, f.path);
    out += ", \"size\": " + std::to_string(f.size);
    out += std::string(", \"lfs\": ") + (f.lfs ? "true" : "false");
    out += ", \"sha256\": ";
    append_json_string(out, f.sha256);
    out += ", \"git_oid\": ";
    append_json_string(out, f.git_oid);
    out += ", \"xxh3_128\": ";
    append_json_string(out, f.xxh3_128);
    out += std::string(", \"complete\": ") + (f.complete ? "true" : "false");
    out += ", \"mtime_ns\": " + std::to_string(f.mtime_ns) + "}";
  }
  out += "\n  ]\n}\n";
  write_file_atomic(path, out.data(), out.size());
}

}  // namespace k3
