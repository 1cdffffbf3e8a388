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

// The string members, in the order the manifest lists them: one table for
// the reader and the writer, so a member cannot be written and not read.
struct StringMember {
  const char* key;
  std::string FetchManifest::*member;
  bool required;
};
constexpr StringMember kManifestStrings[] = {{"repo", &FetchManifest::repo, true},
                                             {"revision", &FetchManifest::revision, true},
                                             {"commit", &FetchManifest::commit, true},
                                             {"endpoint", &FetchManifest::endpoint, false}};
// A file's digests (each optional: a file may have some and not others).
struct FileDigest {
  const char* key;
  std::string ManifestFile::*member;
};
constexpr FileDigest kFileDigests[] = {
    {"sha256", &ManifestFile::sha256}, {"git_oid", &ManifestFile::git_oid}, {"xxh3_128", &ManifestFile::xxh3_128}};

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
  for (const StringMember& s : kManifestStrings) str(root, s.key, &(m.*s.member), s.required);
  simdjson::dom::array files;
  if (root["files"].get_array().get(files)) bad(path, "missing array 'files'");
  for (simdjson::dom::element e : files) {
    ManifestFile f;
    str(e, "path", &f.path, true);
    for (const FileDigest& d : kFileDigests) str(e, d.key, &(f.*d.member), false);
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
  // One file per line: a resumed download rewrites this after every file.
  JsonWriter w(2);
  w.begin_object();
  w.key("format").value(kFormat);
  for (const StringMember& s : kManifestStrings) w.key(s.key).value(m.*s.member);
  w.key("files").begin_array();
  for (const ManifestFile& f : m.files) {
    w.inline_next().begin_object();
    w.key("path").value(f.path);
    w.key("size").value(f.size);
    w.key("lfs").value(f.lfs);
    for (const FileDigest& d : kFileDigests) w.key(d.key).value(f.*d.member);
    w.key("complete").value(f.complete);
    w.key("mtime_ns").value(f.mtime_ns);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  const std::string out = w.take() + "\n";
  write_file_atomic(path, out.data(), out.size());
}

}  // namespace k3
