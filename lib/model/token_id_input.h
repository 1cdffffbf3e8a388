// Token ids as text: whitespace-separated decimal numbers (what k3-tokenize
// writes and k3-forward reads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

// Parses every id in `text`. Throws Error(kBadInput) naming `origin`, the
// 1-based position and the offending word when a word is not a decimal id, or
// an id is >= vocab_size (vocab_size <= 0: no range check).
std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& origin, int64_t vocab_size);

}  // namespace k3
