// What k3-serve checks of every request before its route, as a local
// service that browsers can reach must (docs/reliability.md):
//   - Host names this server: a loopback name or address, --host, an
//     --allowed-hosts entry, or any IP address when --host is a wildcard.
//     A DNS-rebinding page reaches 127.0.0.1 under its own name and is refused.
//   - Origin, when a browser sends one, is this server's own (the page at /)
//     or a --cors-origin entry; any other page's request is refused before it
//     does anything.
//   - A POST carries Content-Type application/json: the types a page may send
//     without a preflight (text/plain, forms) are refused.
// Pure functions of the header values, so the rules are unit-tested apart
// from the server (http_server.cpp applies them in its pre-routing handler).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::serve {

struct GuardOptions {
  std::string host;                        // --host
  std::vector<std::string> allowed_hosts;  // --allowed-hosts ("*": any)
  std::vector<std::string> cors_origins;   // --cors-origin ("*": any)
};

// The name part of a Host header ("[::1]:8080" -> "::1", "Example:80" -> "example"); "" when malformed.
std::string host_name(std::string_view host_header);
bool host_allowed(std::string_view host_header, const GuardOptions& options);

enum class OriginVerdict { kNone, kSameOrigin, kAllowed, kRefused };
// `origin`: the Origin header ("" when absent); `host_header`: the request's Host.
OriginVerdict check_origin(std::string_view origin, std::string_view host_header, const GuardOptions& options);

// "application/json", any case, with parameters ("; charset=utf-8").
bool is_json_content_type(std::string_view content_type);

}  // namespace k3::serve
