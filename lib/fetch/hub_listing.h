// What the Hugging Face hub says a revision contains: the commit it resolves
// to and every file with its size and hashes (LFS sha256, or the git blob id
// for small files kept in git). Read from the hub's JSON API:
//   GET {endpoint}/api/models/{repo}/revision/{revision}       -> "sha"
//   GET {endpoint}/api/models/{repo}/tree/{sha}?recursive=true -> files, paged by Link: rel="next"
// Files are then fetched from {endpoint}/{repo}/resolve/{sha}/{path}, so a
// branch that moves mid-download cannot mix two commits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fetch/http_get.h"
#include "fetch/retry_policy.h"

namespace k3 {

struct HubFile {
  std::string path;
  uint64_t size = 0;
  bool lfs = false;
  std::string sha256;   // LFS files: the hub's sha256 of the content
  std::string git_oid;  // the git blob sha1 (for non-LFS files it identifies the content)
};

struct HubListing {
  std::string commit;
  std::vector<HubFile> files;  // sorted by path
};

struct HubRequest {
  std::string endpoint = "https://huggingface.co";
  std::string repo;
  std::string revision = "main";
  HttpOptions http;
  RetryPolicy retry;
};

// Throws k3::Error(kNetwork) with what to do on authentication failures
// (401/403), unknown repositories or revisions, and after retries run out;
// k3::Error(kInterrupted) when the stop flag is raised.
HubListing list_hub_files(HttpClient& client, const HubRequest& req);

// Parses one page of a tree listing (for tests); appends files, skips directories.
void parse_tree_page(const std::string& json, const std::string& url, std::vector<HubFile>* out);

std::string hub_resolve_url(const std::string& endpoint, const std::string& repo, const std::string& commit,
                            const std::string& path);

// A repository path is safe to create under DIR and to print: relative, no
// "..", "." , ".git" (any case) or empty parts, no control characters (CR,
// LF, ESC, ...) and no bidirectional-text controls.
bool is_safe_repo_path(const std::string& path);

// `path` for a message: controls as \xNN, bidirectional controls as
// \u{bidi}, cut at about 300 bytes, so a hostile name cannot forge lines.
std::string printable_repo_path(const std::string& path);

// Exactly 40 lowercase hex digits, as the hub's "sha" of a revision.
bool is_commit_id(const std::string& s);

// Throws k3::Error(kNetwork) when a listing sorted by path names a file
// twice, or names a path both as a file and as a folder.
void check_listed_once(const std::vector<HubFile>& sorted_files, const std::string& repo);

}  // namespace k3
