// The regex pre-split of the Kimi tokenizer, compiled with PCRE2 (JIT).
//
// The reference pattern (SPEC section 3) is written for Rust's regex
// dialect. PCRE2 has no class intersection and its bare \p{Han} and \s mean
// something slightly different, so the pattern is spelled here as:
//   [X&&[^\p{Han}]]  ->  (?:(?!\p{sc=Han})[X])   a lookahead per character
//   \p{Han}          ->  \p{sc=Han}   Script, not Script_Extensions (PCRE2's
//                                     bare \p{Han} also takes "、" and "ー")
//   \s               ->  \p{White_Space}  (PCRE2's UCP \s adds U+180E)
// Matches are taken like tiktoken's find_iter: leftmost-first, left to
// right; every character is covered by some alternative so nothing is lost.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace k3 {

class KimiPreSplit {
 public:
  KimiPreSplit();
  ~KimiPreSplit();
  KimiPreSplit(const KimiPreSplit&) = delete;
  KimiPreSplit& operator=(const KimiPreSplit&) = delete;

  // Calls piece(offset, length) for each regex piece of `text`, which must be
  // well-formed UTF-8; `text` is one stretch between special tokens, so
  // \s+(?!\S) sees its end. Safe to call from several threads at once.
  template <class F>
  void split(std::string_view text, F&& piece) const {
    size_t pos = 0, start, len;
    Matcher m(*this, text);
    while (m.next(pos, start, len)) {
      piece(start, len);
      pos = start + len;
    }
  }

  std::vector<std::string_view> split(std::string_view text) const;

 private:
  // One match walk over one subject, using this thread's PCRE2 match data
  // and JIT stack (made once per thread).
  class Matcher {
   public:
    Matcher(const KimiPreSplit& re, std::string_view text) : re_(re), text_(text) {}
    // Next match at or after `from`; false when there is none.
    bool next(size_t from, size_t& start, size_t& len);

   private:
    const KimiPreSplit& re_;
    std::string_view text_;
  };

  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace k3
