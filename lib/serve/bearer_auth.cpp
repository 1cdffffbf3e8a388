#include "serve/bearer_auth.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
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
  const std::string where = "--api-key-file " + path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw Error(ExitCode::kUsage, where + ": cannot read a key from it: " + std::strerror(errno));
  struct stat st {};
  std::string problem, text;
  const size_t most = kMaxApiKeyBytes + 2;  // the key and its CRLF
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = "is not a regular file (a device, FIFO or directory cannot hold a key)";
  } else if (static_cast<uint64_t>(st.st_size) > most) {
    problem = "is " + std::to_string(st.st_size) + " bytes, more than a key's " + std::to_string(kMaxApiKeyBytes);
  } else {
    text.resize(most + 1);
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) problem = std::string("cannot be read: ") + std::strerror(errno);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (problem.empty() && got > most) problem = "grew past " + std::to_string(most) + " bytes while read";
    text.resize(got);
  }
  ::close(fd);
  if (!problem.empty()) throw Error(ExitCode::kUsage, where + " " + problem);
  std::string key = text.substr(0, text.find('\n'));
  if (!key.empty() && key.back() == '\r') key.pop_back();
  check_api_key(key, where);
  return key;
}

void check_api_key(const std::string& key, const std::string& origin) {
  auto refuse = [&](const std::string& why) { throw Error(ExitCode::kUsage, origin + ": the API key " + why); };
  if (key.empty()) refuse("is empty: give a non-empty --api-key or --api-key-file");
  if (key.size() > kMaxApiKeyBytes)
    refuse("is " + std::to_string(key.size()) + " bytes, more than " + std::to_string(kMaxApiKeyBytes));
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (blank(key.front()) || blank(key.back()))
    refuse("has spaces around it, which an Authorization header drops: no client could send it; give it without them");
  for (size_t i = 0; i < key.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7f)
      refuse("holds a control character at byte " + std::to_string(i) + ", which an HTTP header cannot carry");
  }
}

}  // namespace k3::serve
