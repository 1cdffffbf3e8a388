// Token ids as text, the writing side of token_id_reader.h: decimal ids one
// per line (what k3-forward and k3-detok read by default) or all on one
// space-separated line (one sequence per line, as --batch reads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

enum class TokenIdLayout { kOnePerLine, kOneLine };

// kOnePerLine: "id\n" per id (nothing for no ids). kOneLine: the ids joined
// by spaces and one newline (a lone newline for no ids: an empty sequence).
// Both id types in use: the tokenizer's (uint32) and generation's (int32).
std::string format_token_ids(const std::vector<uint32_t>& ids, TokenIdLayout layout);
std::string format_token_ids(const std::vector<int32_t>& ids, TokenIdLayout layout);

}  // namespace k3
