// API-key checks for k3-serve: `Authorization: Bearer KEY`, compared in
// constant time (the time taken does not depend on where a guess differs,
// nor on the key's length beyond the guess's own).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace k3::serve {

// True when `a` and `b` are equal; reads every byte of `a` whatever `b` is.
bool constant_time_equal(std::string_view a, std::string_view b);

// True when `authorization` (the header's value, "" when absent) carries
// `key` as a Bearer token (the scheme's case ignored, as RFC 7235 says).
bool bearer_matches(std::string_view authorization, std::string_view key);

// Whether `host` names only this machine: 127.0.0.0/8, ::1, localhost.
bool is_loopback_host(std::string_view host);

// Longest key taken (a key is a header value; no real key comes near it).
inline constexpr size_t kMaxApiKeyBytes = 4096;

// --api-key-file: the key on the first line of `path` (its line end, LF or
// CRLF, dropped). Only a regular file of at most kMaxApiKeyBytes + 2 bytes is
// read (/dev/zero, a FIFO or a large file would never end or fill memory).
// Throws Error(kUsage) naming the file and what is wrong with it.
std::string read_api_key_file(const std::string& path);

// Refuses (Error(kUsage), naming `origin`: "--api-key" or the file) a key no
// client can send: empty, longer than kMaxApiKeyBytes, with spaces or tabs
// around it (an HTTP header value loses them, so every request would get
// 401), or with a control character (a header cannot carry one).
void check_api_key(const std::string& key, const std::string& origin);

}  // namespace k3::serve
