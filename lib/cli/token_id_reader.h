// Token ids as text: whitespace-separated decimal numbers, what k3-tokenize
// writes and k3-forward and k3-detok read. One reader for every tool, so a
// malformed word gets the same message everywhere: the origin, the 1-based
// position of the id and the offending word (exit 4).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace k3 {

// Reads ids from text arriving in pieces (a pipe): an id is complete when
// whitespace (or the end) follows it, so each one can be acted on at once.
class TokenIdReader {
 public:
  // vocab_size <= 0: no range check (ids up to INT32_MAX).
  TokenIdReader(std::string origin, int64_t vocab_size) : origin_(std::move(origin)), vocab_size_(vocab_size) {}

  // Calls on_id for every id completed by `bytes`. Throws Error(kBadInput).
  void push(std::string_view bytes, const std::function<void(int32_t)>& on_id);
  // The same, also calling on_line_end at every newline (after the id it ends).
  void push(std::string_view bytes, const std::function<void(int32_t)>& on_id,
            const std::function<void()>& on_line_end);
  // The end of the input: completes a last id not followed by whitespace.
  void finish(const std::function<void(int32_t)>& on_id);

  uint64_t count() const { return count_; }

 private:
  void complete(const std::function<void(int32_t)>& on_id);

  std::string origin_;
  int64_t vocab_size_;
  std::string word_;
  uint64_t count_ = 0;
};

// Parses every id in `text`. Throws Error(kBadInput) naming `origin`, the
// 1-based position and the offending word when a word is not a decimal id, or
// an id is >= vocab_size (vocab_size <= 0: no range check).
std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& origin, int64_t vocab_size);

// One list of ids per line of `text` (k3-tokenize --format=line); a last line
// without a newline counts, blank lines give empty lists. Errors name
// "<origin> line N".
std::vector<std::vector<int32_t>> parse_token_id_lines(const std::string& text, const std::string& origin,
                                                       int64_t vocab_size);

}  // namespace k3
