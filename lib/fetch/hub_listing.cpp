#include "fetch/hub_listing.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/error.h"

namespace k3 {

namespace {

constexpr int kMaxListingPages = 10000;  // the hub's pages hold 1000 entries

std::string strip_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// Percent-encodes everything but unreserved characters ('/' included, as a
// revision such as refs/pr/1 is one path segment in the API).
std::string encode_segment(const std::string& s) {
  std::string enc = url_encode_path(s);
  std::string out;
  for (char c : enc) out += c == '/' ? std::string("%2F") : std::string(1, c);
  return out;
}

std::string snippet(const std::string& body) {
  std::string s = body.substr(0, 200);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

[[noreturn]] void fail_http(const HubRequest& req, const std::string& url, const HttpResponse& r) {
  if (r.status == 401)
    throw Error(ExitCode::kNetwork,
                "authentication failed (HTTP 401) for " + req.repo + " at " + req.endpoint +
                    ": the token was rejected or is missing; pass a valid read token with --token or HF_TOKEN "
                    "(the hub also answers 401 for a repository that does not exist)");
  if (r.status == 403)
    throw Error(ExitCode::kNetwork,
                "access denied (HTTP 403) for " + req.repo +
                    ": the token is valid but has no access; accept the model's terms on its hub page or use a "
                    "token with read access");
  if (r.status == 404)
    throw Error(ExitCode::kNetwork, req.repo + " revision '" + req.revision + "' was not found at " + req.endpoint +
                                        " (HTTP 404): check the repository name and --revision");
  throw Error(ExitCode::kNetwork, url + ": " + r.describe() + (r.body.empty() ? "" : ": " + snippet(r.body)));
}

// GET with retries on transient failures; returns the successful response.
HttpResponse get_json(HttpClient& client, const HubRequest& req, const std::string& url) {
  for (int attempt = 1;; ++attempt) {
    HttpResponse r = client.get(url, req.http);
    if (r.stopped || (req.http.stop && req.http.stop->load()))
      throw Error(ExitCode::kInterrupted, "interrupted while listing " + req.repo);
    if (r.ok()) return r;
    if (!r.transient() || attempt >= req.retry.max_attempts) {
      if (r.curl_code != 0)
        throw Error(ExitCode::kNetwork, "cannot reach " + url + ": " + r.describe() + " (gave up after " +
                                            std::to_string(attempt) + " attempts; check the network or HF_ENDPOINT)");
      fail_http(req, url, r);
    }
    if (!wait_before_retry(attempt, r, req.retry, req.http.stop))
      throw Error(ExitCode::kInterrupted, "interrupted while listing " + req.repo);
  }
}

simdjson::dom::element parse_or_throw(simdjson::dom::parser& parser, const std::string& text, const std::string& url) {
  simdjson::dom::element root;
  if (parser.parse(text).get(root))
    throw Error(ExitCode::kNetwork, url + ": the hub's answer is not valid JSON (wrong HF_ENDPOINT?)");
  return root;
}

}  // namespace

namespace {

// Bidirectional-text controls (U+061C, U+200E-U+200F, U+202A-U+202E,
// U+2066-U+2069) reorder what a terminal shows: a name holding one can
// display as another name. Returns the length of the one at s[i], or 0.
size_t bidi_control_at(const std::string& s, size_t i) {
  auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
  if (byte(i) == 0xD8 && byte(i + 1) == 0x9C) return 2;  // U+061C
  if (byte(i) != 0xE2) return 0;
  const unsigned b1 = byte(i + 1), b2 = byte(i + 2);
  if (b1 == 0x80 && (b2 == 0x8E || b2 == 0x8F || (b2 >= 0xAA && b2 <= 0xAE))) return 3;
  if (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9) return 3;
  return 0;
}

bool is_git_dir(std::string part) {
  std::transform(part.begin(), part.end(), part.begin(), [](unsigned char c) { return std::tolower(c); });
  return part == ".git";
}

}  // namespace

std::string printable_repo_path(const std::string& path) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < path.size() && out.size() < 300; ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (const size_t n = bidi_control_at(path, i)) {
      out += "\\u{bidi}";
      i += n - 1;
    } else if (c < 0x20 || c == 0x7f || c == '\\') {
      out += c == '\\' ? std::string("\\\\") : std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  for (size_t i = 0; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    // NUL, CR, LF, ESC and other controls: a name that can end or rewrite a terminal line.
    if (c < 0x20 || c == 0x7f || bidi_control_at(path, i)) return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    // ".git" (in any case, for case-insensitive file systems) would write into
    // a repository's own metadata (.git/config, hooks) where DIR is a clone.
    if (part.empty() || part == "." || part == ".." || is_git_dir(part)) return false;
    start = end + 1;
  }
  return true;
}

bool is_commit_id(const std::string& s) {
  return s.size() == 40 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void check_listed_once(const std::vector<HubFile>& sorted_files, const std::string& repo) {
  for (size_t i = 1; i < sorted_files.size(); ++i) {
    const std::string& a = sorted_files[i - 1].path;
    const std::string& b = sorted_files[i].path;
    if (a == b)
      throw Error(ExitCode::kNetwork, "the hub's file listing of " + repo + " names '" + printable_repo_path(a) +
                                          "' twice; refusing a listing whose two entries would race for one file");
  }
  // A file that is also a folder of another listed file cannot both be written.
  for (size_t i = 0; i + 1 < sorted_files.size(); ++i) {
    const std::string& a = sorted_files[i].path;
    const std::string prefix = a + "/";
    const auto it = std::lower_bound(sorted_files.begin() + static_cast<std::ptrdiff_t>(i) + 1, sorted_files.end(),
                                     prefix, [](const HubFile& f, const std::string& p) { return f.path < p; });
    if (it != sorted_files.end() && it->path.compare(0, prefix.size(), prefix) == 0)
      throw Error(ExitCode::kNetwork, "the hub's file listing of " + repo + " names '" + printable_repo_path(a) +
                                          "' both as a file and as the folder of '" + printable_repo_path(it->path) +
                                          "'; refusing it");
  }
}

void parse_tree_page(const std::string& json, const std::string& url, std::vector<HubFile>* out) {
  simdjson::dom::parser parser;
  simdjson::dom::element root = parse_or_throw(parser, json, url);
  simdjson::dom::array entries;
  if (root.get_array().get(entries))
    throw Error(ExitCode::kNetwork, url + ": expected a JSON array of files from the hub");
  for (simdjson::dom::element e : entries) {
    std::string_view type, path, oid;
    if (e["type"].get_string().get(type) || e["path"].get_string().get(path))
      throw Error(ExitCode::kNetwork, url + ": a tree entry lacks 'type' or 'path'");
    if (type != "file") continue;  // directories are implied by the file paths
    HubFile f;
    f.path = std::string(path);
    if (!is_safe_repo_path(f.path))
      throw Error(ExitCode::kNetwork, url + ": the hub listed an unsafe path '" + printable_repo_path(f.path) +
                                          "' (absolute, '..', '.git', or a control or bidirectional-text character); "
                                          "refusing to write it");
    uint64_t size = 0;
    if (e["size"].get_uint64().get(size))
      throw Error(ExitCode::kNetwork, url + ": the entry for '" + f.path + "' has no size");
    f.size = size;
    if (!e["oid"].get_string().get(oid)) f.git_oid = std::string(oid);
    simdjson::dom::object lfs;
    if (!e["lfs"].get_object().get(lfs)) {
      std::string_view sha;
      // The tree endpoint names it "oid", the revision endpoint "sha256".
      if (lfs["oid"].get_string().get(sha) && lfs["sha256"].get_string().get(sha))
        throw Error(ExitCode::kNetwork,
                    url + ": the LFS entry for '" + printable_repo_path(f.path) + "' has no sha256");
      std::string s(sha);
      if (s.rfind("sha256:", 0) == 0) s = s.substr(7);
      uint64_t lfs_size = 0;
      if (!lfs["size"].get_uint64().get(lfs_size) && lfs_size != f.size)
        throw Error(ExitCode::kNetwork, url + ": '" + f.path + "' is listed with size " + std::to_string(f.size) +
                                            " but its LFS size is " + std::to_string(lfs_size));
      f.lfs = true;
      f.sha256 = s;
    }
    if (!f.lfs && f.git_oid.empty())
      throw Error(ExitCode::kNetwork,
                  url + ": '" + f.path + "' has neither an LFS sha256 nor a git oid to verify it by");
    out->push_back(std::move(f));
  }
}

HubListing list_hub_files(HttpClient& client, const HubRequest& req) {
  const std::string base = strip_slash(req.endpoint);
  HubListing listing;
  {
    const std::string url = base + "/api/models/" + req.repo + "/revision/" + encode_segment(req.revision);
    HttpResponse r = get_json(client, req, url);
    simdjson::dom::parser parser;
    simdjson::dom::element root = parse_or_throw(parser, r.body, url);
    std::string_view sha;
    if (root["sha"].get_string().get(sha) || sha.empty())
      throw Error(ExitCode::kNetwork, url + ": the hub did not say which commit '" + req.revision + "' is");
    listing.commit = std::string(sha);
    // The commit goes into every later URL's path: "../.." would steer those
    // requests elsewhere on the hub, and a branch name would defeat pinning.
    if (!is_commit_id(listing.commit))
      throw Error(ExitCode::kNetwork, url + ": the hub answered '" + printable_repo_path(listing.commit.substr(0, 80)) +
                                          "' as the commit of '" + req.revision +
                                          "', not a 40-hex-digit commit id (wrong HF_ENDPOINT?)");
  }
  std::string url = base + "/api/models/" + req.repo + "/tree/" + listing.commit + "?recursive=true";
  // A next link that repeats a page (itself, or a cycle) or a listing that
  // never ends is the hub's error, not a reason to loop.
  std::set<std::string> seen;
  for (int page = 0; !url.empty(); ++page) {
    if (page >= kMaxListingPages)
      throw Error(ExitCode::kNetwork, "the hub's file listing of " + req.repo + " did not end after " +
                                          std::to_string(kMaxListingPages) + " pages; giving up");
    if (!seen.insert(url).second)
      throw Error(ExitCode::kNetwork, "the hub's file listing of " + req.repo +
                                          " links back to a page it already "
                                          "sent (" +
                                          url + "): the listing loops; giving up");
    HttpResponse r = get_json(client, req, url);
    parse_tree_page(r.body, url, &listing.files);
    url = parse_link_next(r.link);
  }
  std::sort(listing.files.begin(), listing.files.end(),
            [](const HubFile& a, const HubFile& b) { return a.path < b.path; });
  check_listed_once(listing.files, req.repo);
  return listing;
}

std::string hub_resolve_url(const std::string& endpoint, const std::string& repo, const std::string& commit,
                            const std::string& path) {
  return strip_slash(endpoint) + "/" + repo + "/resolve/" + commit + "/" + url_encode_path(path);
}

}  // namespace k3
