#include "serve/bearer_auth.h"

#include <arpa/inet.h>

#include <cstring>
#include <fstream>
#include <string>

#include "common/error.h"

namespace k3::serve {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Compare `a` against b padded/cut to a's length; the length difference is
  // folded in without an early return.
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned char other = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(a[i]) ^ other;
  }
  return diff == 0;
}

bool bearer_matches(std::string_view authorization, std::string_view key) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if ((authorization[i] | 0x20) != kScheme[i]) return false;
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return constant_time_equal(key, token);
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;
}

std::string read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  std::string key;
  if (!in || !std::getline(in, key))
    throw Error(ExitCode::kUsage, "--api-key-file " + path + ": cannot read a key from it");
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
  return key;
}

}  // namespace k3::serve
