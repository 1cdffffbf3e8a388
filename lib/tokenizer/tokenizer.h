// Layer tokenizer: text <-> token ids.
//
// The Kimi-K3 tokenizer: text <-> token ids, byte-exact with the reference
// (tokenization_kimi.py over tiktoken; SPEC section 3).
//
// Encoding pipeline:
//   1. cut the text into chunks of 400,000 code points;
//   2. cut each chunk so no piece holds more than 25,000 consecutive
//      whitespace or non-whitespace code points (Python str.isspace);
//   3. in each piece, find special-token names (when allowed), pre-split the
//      stretches between them with the Kimi regex, byte-pair merge each
//      regex piece; a special name cut by step 1 or 2 is plain text.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/kimi_pre_split.h"
#include "tokenizer/vocabulary.h"

namespace k3 {

class Tokenizer {
 public:
  static constexpr size_t kChunkCodePoints = 400000;
  static constexpr size_t kMaxRun = 25000;

  explicit Tokenizer(Vocabulary vocab);
  // Loads DIR/tiktoken.model and DIR/tokenizer_config.json.
  static Tokenizer load(const std::string& dir) { return Tokenizer(Vocabulary::load(dir)); }

  const Vocabulary& vocab() const { return vocab_; }

  // `text` must be well-formed UTF-8 (check with utf8::find_invalid first);
  // throws k3::Error(kBadInput) otherwise. With allow_special, the names of
  // all 256 special tokens are recognised in the text; without, they are
  // plain text.
  std::vector<TokenId> encode(std::string_view text, bool allow_special = true) const;
  void encode(std::string_view text, bool allow_special, std::vector<TokenId>& out) const;

  // The regex pre-split alone, of a text with no special names considered.
  std::vector<std::string_view> pre_split(std::string_view text) const { return split_.split(text); }

  // The token bytes joined (specials as their names). Throws
  // k3::Error(kBadInput) naming an id outside the vocabulary and its index.
  std::string decode_bytes(const std::vector<TokenId>& ids) const;
  // decode_bytes() as UTF-8 text, invalid sequences replaced by U+FFFD.
  std::string decode(const std::vector<TokenId>& ids) const;

 private:
  // Step 3 for one piece of steps 1-2.
  void encode_piece(std::string_view piece, bool allow_special, std::vector<TokenId>& out) const;
  void encode_ordinary(std::string_view stretch, std::vector<TokenId>& out) const;
  // Leftmost special name in s at or after `from`: sets pos/len, returns its id.
  TokenId find_special(std::string_view s, size_t from, size_t& pos, size_t& len) const;

  Vocabulary vocab_;
  KimiPreSplit split_;
  bool special_first_byte_[256] = {};    // some special name starts with this byte
  std::vector<size_t> special_lengths_;  // distinct name lengths, longest first
};

// Python's str.isspace() for one code point (bidi class WS, B or S, or
// general category Zs), which the 25,000-run cut uses. Note U+001C..U+001F
// are spaces here but not regex \s.
bool is_python_space(char32_t c);

}  // namespace k3
