#include "fetch/http_get.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include "common/error.h"

namespace k3 {

namespace {

constexpr size_t kMaxErrorBody = 4096;

struct Transfer {
  HttpResponse resp;
  const HttpSink* sink = nullptr;
  const std::atomic<bool>* stop = nullptr;
};

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

size_t on_header(char* data, size_t size, size_t nitems, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nitems;
  std::string line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response starts (each redirect hop has its own headers): keep
    // only the final one's.
    t->resp.content_range.clear();
    t->resp.retry_after.clear();
    t->resp.link.clear();
    size_t sp = line.find(' ');
    t->resp.status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string key = line.substr(0, colon);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = trim(line.substr(colon + 1));
  if (key == "content-range") t->resp.content_range = value;
  else if (key == "retry-after") t->resp.retry_after = value;
  else if (key == "link") t->resp.link = value;
  return n;
}

size_t on_body(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  const bool success = t->resp.status >= 200 && t->resp.status < 300;
  if (!success || !t->sink) {
    // Error bodies are kept short: they only feed a message.
    size_t room = success ? n : (t->resp.body.size() < kMaxErrorBody ? kMaxErrorBody - t->resp.body.size() : 0);
    t->resp.body.append(data, std::min(n, room));
    return n;
  }
  if (!(*t->sink)(t->resp, data, n)) {
    t->resp.sink_refused = true;
    return 0;  // any count other than n makes libcurl stop with a write error
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->stop && t->stop->load()) {
    t->resp.stopped = true;
    return 1;  // aborts with CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

std::once_flag g_curl_init;

// libcurl reports a reply without an HTTP status line (a proxy's or another
// service's bytes, or the excess of a previous reply whose Content-Length was
// shorter than its body, read on the reused connection as the next reply) as
// "HTTP/0.9", which it refuses with the same code as a forbidden scheme.
bool reply_not_http(int curl_code, const std::string& curl_error) {
  return curl_code == CURLE_WEIRD_SERVER_REPLY ||
         (curl_code == CURLE_UNSUPPORTED_PROTOCOL && curl_error.find("HTTP/0.9") != std::string::npos);
}

}  // namespace

bool HttpResponse::transient() const {
  if (stopped || sink_refused) return false;
  // A garbled reply is the connection's or the server's moment, not the
  // file's: a new connection can fix it.
  if (reply_not_http(curl_code, curl_error)) return true;
  switch (curl_code) {
    case CURLE_OK: return status == 429 || status == 408 || (status >= 500 && status <= 599);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR: return true;
    default: return false;
  }
}

std::string HttpResponse::describe() const {
  if (curl_code != 0) {
    if (reply_not_http(curl_code, curl_error))
      return "the server's reply is not HTTP (no valid status line; after a reply whose Content-Length was shorter "
             "than its body, the rest is read as the next reply) (" +
             curl_error + ")";
    std::string what = curl_code == CURLE_OPERATION_TIMEDOUT ? "transfer stalled or timed out"
                       : curl_code == CURLE_PARTIAL_FILE     ? "connection dropped mid-transfer"
                       : curl_code == CURLE_UNSUPPORTED_PROTOCOL
                           ? "refused: a redirect or URL to a scheme other than http/https"
                           : "network error";
    return what + " (" + curl_error + ")";
  }
  return "HTTP " + std::to_string(status);
}

HttpClient::HttpClient() {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw Error(ExitCode::kInternal, "libcurl could not create a handle");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse HttpClient::get(const std::string& url, const HttpOptions& opt, uint64_t range_from,
                             const HttpSink* sink) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  Transfer t;
  t.sink = sink;
  t.stop = opt.stop;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  std::string auth;
  const std::string origin = url_origin(url);
  if (!opt.token.empty() && !origin.empty() && origin == url_origin(opt.token_origin)) {
    // Only to the configured endpoint's origin: a pagination link or any URL
    // taken from an answer may lead elsewhere. libcurl does not forward a
    // custom Authorization header when a redirect leads to another host or
    // port, so the token never reaches the CDN either.
    auth = "Authorization: Bearer " + opt.token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  std::string range;
  if (range_from > 0) range = std::to_string(range_from) + "-";

  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  // Only HTTP(S), also after a redirect: the hub or a CDN answering with a
  // Location of ftp://, file://, ldap://... is refused, not followed.
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_USERAGENT, "k3-fetch-verify/0.1");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, opt.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, opt.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  if (!range.empty()) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());

  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  t.resp.curl_code = rc;
  if (rc != CURLE_OK) t.resp.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  long status = 0;
  if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status) t.resp.status = status;
  char* eff = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff) t.resp.effective_url = eff;
  return std::move(t.resp);
}

std::string url_origin(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos || colon == 0) return "";
  std::string scheme = url.substr(0, colon);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t start = colon + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (authority.find('@') != std::string::npos) authority = authority.substr(authority.rfind('@') + 1);
  std::transform(authority.begin(), authority.end(), authority.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (authority.empty()) return "";
  // A port follows the last ':' unless that is inside an IPv6 literal.
  const size_t port_colon = authority.rfind(':');
  const bool has_port = port_colon != std::string::npos && authority.find(']', port_colon) == std::string::npos;
  if (!has_port) authority += scheme == "https" ? ":443" : scheme == "http" ? ":80" : "";
  return scheme + "://" + authority;
}

std::string url_encode_path(const std::string& path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : path) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

double parse_retry_after(const std::string& value) {
  if (value.empty()) return -1;
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || v < 0) return -1;  // HTTP-date form: fall back to our backoff
  return v;
}

std::string parse_link_next(const std::string& link) {
  // Link: <https://...?cursor=...>; rel="next", <...>; rel="prev"
  size_t pos = 0;
  while (pos < link.size()) {
    size_t lt = link.find('<', pos);
    if (lt == std::string::npos) break;
    size_t gt = link.find('>', lt);
    if (gt == std::string::npos) break;
    size_t next_entry = link.find('<', gt);
    std::string params = link.substr(gt + 1, next_entry == std::string::npos ? std::string::npos : next_entry - gt - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
      return link.substr(lt + 1, gt - lt - 1);
    pos = gt + 1;
  }
  return "";
}

}  // namespace k3
