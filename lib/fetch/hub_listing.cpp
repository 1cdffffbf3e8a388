#include "fetch/hub_listing.h"

#include <simdjson.h>

#include <algorithm>
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
    throw Error(ExitCode::kNetwork, req.repo + " revision '" + req.revision + "' was not found at " +
                                        req.endpoint + " (HTTP 404): check the repository name and --revision");
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

simdjson::dom::element parse_or_throw(simdjson::dom::parser& parser, const std::string& text,
                                      const std::string& url) {
  simdjson::dom::element root;
  if (parser.parse(text).get(root))
    throw Error(ExitCode::kNetwork, url + ": the hub's answer is not valid JSON (wrong HF_ENDPOINT?)");
  return root;
}

}  // namespace

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path[0] == '/' || path.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
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
      throw Error(ExitCode::kNetwork, url + ": the hub listed an unsafe path '" + f.path + "'; refusing to write it");
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
        throw Error(ExitCode::kNetwork, url + ": the LFS entry for '" + f.path + "' has no sha256");
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
      throw Error(ExitCode::kNetwork, url + ": '" + f.path + "' has neither an LFS sha256 nor a git oid to verify it by");
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
      throw Error(ExitCode::kNetwork, "the hub's file listing of " + req.repo + " links back to a page it already "
                                          "sent (" + url + "): the listing loops; giving up");
    HttpResponse r = get_json(client, req, url);
    parse_tree_page(r.body, url, &listing.files);
    url = parse_link_next(r.link);
  }
  std::sort(listing.files.begin(), listing.files.end(),
            [](const HubFile& a, const HubFile& b) { return a.path < b.path; });
  return listing;
}

std::string hub_resolve_url(const std::string& endpoint, const std::string& repo, const std::string& commit,
                            const std::string& path) {
  return strip_slash(endpoint) + "/" + repo + "/resolve/" + commit + "/" + url_encode_path(path);
}

}  // namespace k3
