#include "cli/token_id_reader.h"

#include <cctype>
#include <charconv>
#include <cstdint>

#include "common/error.h"

namespace k3 {

namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

constexpr size_t kMaxIdChars = 20;

// The word as it can be shown on one line: control and non-ASCII bytes as \xNN.
std::string printable(const std::string& word) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : word) {
    if (c >= 32 && c < 127) s += static_cast<char>(c);
    else s += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
  }
  return s;
}

}  // namespace

void TokenIdReader::complete(const std::function<void(int32_t)>& on_id) {
  const std::string& word = word_;
  const std::string where = origin_ + ": token " + std::to_string(count_ + 1);
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
  if (v > INT32_MAX || (vocab_size_ > 0 && v >= vocab_size_))
    throw Error(ExitCode::kBadInput,
                where + " is id " + shown + ", outside the vocabulary 0.." +
                    (vocab_size_ > 0 ? std::to_string(vocab_size_ - 1) : std::to_string(INT32_MAX)) +
                    " (were the ids made with another model's tokenizer?)");
  ++count_;
  word_.clear();
  on_id(static_cast<int32_t>(v));
}

void TokenIdReader::push(std::string_view bytes, const std::function<void(int32_t)>& on_id) {
  push(bytes, on_id, nullptr);
}

void TokenIdReader::push(std::string_view bytes, const std::function<void(int32_t)>& on_id,
                         const std::function<void()>& on_line_end) {
  for (char c : bytes) {
    if (is_space(c)) {
      if (!word_.empty()) complete(on_id);
      if (c == '\n' && on_line_end) on_line_end();
    } else {
      word_.push_back(c);
      // No id is this long: fail now, not after gigabytes without whitespace.
      if (word_.size() > kMaxIdChars)
        throw Error(ExitCode::kBadInput, origin_ + ": token " + std::to_string(count_ + 1) + " '" +
                                             printable(word_.substr(0, 24)) + "...' is not a token id (longer than " +
                                             std::to_string(kMaxIdChars) +
                                             " characters; expected decimal ids separated by whitespace)");
    }
  }
}

void TokenIdReader::finish(const std::function<void(int32_t)>& on_id) {
  if (!word_.empty()) complete(on_id);
}

std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& origin, int64_t vocab_size) {
  std::vector<int32_t> ids;
  TokenIdReader reader(origin, vocab_size);
  auto add = [&](int32_t id) { ids.push_back(id); };
  reader.push(text, add);
  reader.finish(add);
  return ids;
}

std::vector<std::vector<int32_t>> parse_token_id_lines(const std::string& text, const std::string& origin,
                                                       int64_t vocab_size) {
  std::vector<std::vector<int32_t>> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.push_back(parse_token_ids(text.substr(begin, end - begin),
                                    origin + " line " + std::to_string(lines.size() + 1), vocab_size));
    begin = end + 1;
  }
  return lines;
}

}  // namespace k3
