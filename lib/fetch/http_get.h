// One HTTP GET with libcurl, as the downloader needs it: optional bearer
// token, optional Range start, redirects followed, stall detection, headers
// of the final response captured, the body streamed to a sink, and a stop
// flag polled during the transfer so SIGINT ends it promptly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace k3 {

struct HttpOptions {
  std::string token;         // sent as "Authorization: Bearer <token>" when not empty,
  std::string token_origin;  // and only to URLs of this origin (the configured endpoint)
  long connect_timeout_s = 30;
  long stall_timeout_s = 60;                // abort when no byte arrives for this long
  const std::atomic<bool>* stop = nullptr;  // polled during the transfer
};

// Headers and outcome of the final response (after redirects).
struct HttpResponse {
  int curl_code = 0;          // CURLcode; 0 = the transfer completed
  std::string curl_error;     // libcurl's message when curl_code != 0
  long status = 0;            // HTTP status of the final response (0: none)
  std::string content_range;  // "bytes a-b/total" on 206
  std::string retry_after;    // Retry-After, verbatim
  std::string link;           // Link (pagination of hub listings)
  std::string effective_url;
  std::string body;           // non-2xx bodies (first 4 KB) or the whole body without a sink
  bool stopped = false;       // the stop flag ended the transfer
  bool sink_refused = false;  // the sink returned false

  bool ok() const { return curl_code == 0 && status >= 200 && status < 300; }
  // A failure worth retrying: connection drop, timeout, 429 or 5xx.
  bool transient() const;
  // One line for messages: "HTTP 503" or "connection dropped: <curl message>".
  std::string describe() const;
};

// Receives body bytes of a 2xx final response; `head` holds its status and
// headers. Return false to abort the transfer (e.g. a write failed).
using HttpSink = std::function<bool(const HttpResponse& head, const char* data, size_t n)>;

// A reusable connection (one per download job: keeps TCP/TLS alive between files).
class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GET url; range_from > 0 asks for "Range: bytes=<range_from>-". Without a
  // sink the body is collected into HttpResponse::body.
  HttpResponse get(const std::string& url, const HttpOptions& opt, uint64_t range_from = 0,
                   const HttpSink* sink = nullptr);

 private:
  void* curl_;  // CURL*
};

// "scheme://host:port" of a URL, lower-cased, the port made explicit (80 for
// http, 443 for https); "" when the URL has no scheme or host. Credentials go
// only to URLs whose origin equals the configured endpoint's.
std::string url_origin(const std::string& url);

// Percent-encodes each '/'-separated segment of a repository path for a URL.
std::string url_encode_path(const std::string& path);

// Seconds to wait from a Retry-After value (delta-seconds form); -1 if absent
// or not a number.
double parse_retry_after(const std::string& value);

// The URL with rel="next" in a Link header, or "" when there is none.
std::string parse_link_next(const std::string& link);

}  // namespace k3
