// API-key checks for k3-serve: `Authorization: Bearer KEY`, compared in
// constant time (the time taken does not depend on where a guess differs,
// nor on the key's length beyond the guess's own).
#pragma once

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

// --api-key-file: the key on the first line of `path` (trailing spaces and
// CR dropped). Throws Error(kUsage) naming the file when it cannot be read.
std::string read_api_key_file(const std::string& path);

}  // namespace k3::serve
