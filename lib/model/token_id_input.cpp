#include "model/token_id_input.h"

#include <cctype>
#include <charconv>
#include <cstdint>

#include "common/error.h"

namespace k3 {

std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& origin, int64_t vocab_size) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == text.size()) break;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    const std::string word = text.substr(i, j - i);
    const std::string where = origin + ": token " + std::to_string(ids.size() + 1);
    std::string shown = word.size() > 40 ? word.substr(0, 37) + "..." : word;
    for (char& ch : shown)
      if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
    int64_t v = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    const bool digits_only = word.find_first_not_of("0123456789") == std::string::npos;
    if (digits_only && ec == std::errc::result_out_of_range) v = INT64_MAX;
    else if (!digits_only || ec != std::errc() || end != word.data() + word.size())
      throw Error(ExitCode::kBadInput, where + " '" + shown +
                                           "' is not a token id (expected decimal ids separated by whitespace, "
                                           "e.g. from k3-tokenize)");
    if (v > INT32_MAX || (vocab_size > 0 && v >= vocab_size))
      throw Error(ExitCode::kBadInput, where + " is id " + shown + ", outside the vocabulary 0.." +
                                           (vocab_size > 0 ? std::to_string(vocab_size - 1) : std::to_string(INT32_MAX)));
    ids.push_back(static_cast<int32_t>(v));
    i = j;
  }
  return ids;
}

}  // namespace k3
