// The local manifest that k3-fetch-verify keeps next to the downloaded files
// (DIR/.k3-manifest.json): for every file of the pinned commit its size, the
// hub's hashes and, once the file is complete and verified, the xxh3-128 we
// computed while it arrived. `verify` checks the directory against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

inline constexpr const char* kFetchManifestName = ".k3-manifest.json";

struct ManifestFile {
  std::string path;  // relative to the directory, '/' separated
  uint64_t size = 0;
  bool lfs = false;
  // LFS files: the hub's sha256 (known before the download). Other files: the
  // sha256 we computed once the content matched the hub's git blob id.
  std::string sha256;
  std::string git_oid;   // non-LFS files: the hub's git blob sha1
  std::string xxh3_128;  // computed while downloading; empty until complete
  bool complete = false;
  int64_t mtime_ns = 0;  // of the finished file, to notice later edits cheaply
};

struct FetchManifest {
  std::string repo;
  std::string revision;  // as asked (e.g. "main")
  std::string commit;    // the commit sha it resolved to; every file comes from it
  std::string endpoint;
  std::vector<ManifestFile> files;  // sorted by path

  ManifestFile* find(const std::string& path);
  const ManifestFile* find(const std::string& path) const;
  // Inserts or replaces the entry with f.path, keeping the order.
  void upsert(const ManifestFile& f);
};

std::string fetch_manifest_path(const std::string& dir);

// Throws k3::Error(kBadModel) naming the file when it does not parse.
FetchManifest read_fetch_manifest(const std::string& path);
// Written atomically (temp + fsync + rename).
void write_fetch_manifest(const std::string& path, const FetchManifest& m);

}  // namespace k3
