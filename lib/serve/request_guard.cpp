#include "serve/request_guard.h"

#include <arpa/inet.h>

#include <algorithm>

#include "serve/bearer_auth.h"

namespace k3::serve {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_ip_literal(const std::string& name) {
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, name.c_str(), &v4) == 1 || inet_pton(AF_INET6, name.c_str(), &v6) == 1;
}

bool is_wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host == "[::]"; }

bool listed(const std::vector<std::string>& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& e) { return e == "*" || lower(e) == value; });
}

// "host[:port]" with the default port dropped, lower case: how an origin and a Host header compare.
std::string authority(std::string_view host_header) {
  std::string a = lower(host_header);
  if (a.size() > 3 && a.compare(a.size() - 3, 3, ":80") == 0) a.resize(a.size() - 3);
  return a;
}

}  // namespace

std::string host_name(std::string_view host_header) {
  std::string h = lower(host_header);
  if (h.empty()) return "";
  if (h.front() == '[') {  // [v6]:port
    const size_t close = h.find(']');
    if (close == std::string::npos) return "";
    const std::string rest = h.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) return "";
    return h.substr(1, close - 1);
  }
  const size_t colon = h.find(':');
  if (colon != std::string::npos) {
    const std::string port = h.substr(colon + 1);
    if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return "";
    h.resize(colon);
  }
  if (!h.empty() && h.back() == '.') h.pop_back();  // "localhost." names the same host
  const bool ok = !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  });
  return ok ? h : "";
}

bool host_allowed(std::string_view host_header, const GuardOptions& options) {
  const std::string name = host_name(host_header);
  if (name.empty()) return false;
  if (is_loopback_host(name) || name == "localhost") return true;
  if (name == host_name(options.host) && !is_wildcard(options.host)) return true;
  if (is_wildcard(options.host) && is_ip_literal(name)) return true;  // an address cannot be rebound to another
  return listed(options.allowed_hosts, name);
}

OriginVerdict check_origin(std::string_view origin, std::string_view host_header, const GuardOptions& options) {
  if (origin.empty()) return OriginVerdict::kNone;
  const std::string o = lower(origin);
  if (o.rfind("http://", 0) == 0 && authority(o.substr(7)) == authority(host_header)) return OriginVerdict::kSameOrigin;
  return listed(options.cors_origins, o) ? OriginVerdict::kAllowed : OriginVerdict::kRefused;
}

bool is_json_content_type(std::string_view content_type) {
  std::string t = lower(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  return t == "application/json";
}

}  // namespace k3::serve
