#include "tokenizer/tokenizer.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "common/error.h"
#include "tokenizer/byte_pair_merge.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

namespace k3 {

bool is_python_space(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  // CPython's definition (Py_UNICODE_ISSPACE), from ICU's character data.
  if (u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR) return true;
  UCharDirection d = u_charDirection(static_cast<UChar32>(c));
  return d == U_WHITE_SPACE_NEUTRAL || d == U_BLOCK_SEPARATOR || d == U_SEGMENT_SEPARATOR;
}

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
  for (const std::string& name : vocab_.special_names()) {
    special_first_byte_[static_cast<uint8_t>(name[0])] = true;
    if (std::find(special_lengths_.begin(), special_lengths_.end(), name.size()) == special_lengths_.end())
      special_lengths_.push_back(name.size());
  }
  std::sort(special_lengths_.rbegin(), special_lengths_.rend());
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<TokenId> out;
  encode(text, allow_special, out);
  return out;
}

void Tokenizer::encode(std::string_view text, bool allow_special, std::vector<TokenId>& out) const {
  size_t bad = utf8::find_invalid(text);
  if (bad != utf8::kNotFound)
    throw Error(ExitCode::kBadInput, "input is not valid UTF-8 at byte offset " + std::to_string(bad));
  out.reserve(out.size() + text.size() / 4);
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  // One pass over the code points does both cuts of the reference:
  // chunk_cp counts code points in the current 400k chunk, run counts the
  // current whitespace / non-whitespace run within it.
  size_t piece_start = 0, chunk_cp = 0, run = 0;
  bool run_is_space = false;
  size_t i = 0;
  while (i < n) {
    size_t len;
    char32_t c = p[i] < 0x80 ? (len = 1, p[i]) : utf8::decode_valid(p + i, len);
    if (chunk_cp == kChunkCodePoints) {
      encode_piece(text.substr(piece_start, i - piece_start), allow_special, out);
      piece_start = i;
      chunk_cp = 0;
    }
    bool space = is_python_space(c);
    if (chunk_cp == 0) {
      run_is_space = space;
      run = 1;
    } else if (space != run_is_space) {
      run_is_space = space;
      run = 1;
    } else if (++run > kMaxRun) {
      encode_piece(text.substr(piece_start, i - piece_start), allow_special, out);
      piece_start = i;
      run = 1;
    }
    ++chunk_cp;
    i += len;
  }
  if (piece_start < n) encode_piece(text.substr(piece_start), allow_special, out);
}

TokenId Tokenizer::find_special(std::string_view s, size_t from, size_t& pos, size_t& len) const {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t i = from; i < s.size(); ++i) {
    if (!special_first_byte_[p[i]]) continue;
    // Names never contain one another here (each ends in "]" or "|>" or ">"),
    // so at one position the longest match is the only one; taking the
    // longest keeps the choice well defined for any config.
    for (size_t l : special_lengths_) {
      if (l > s.size() - i) continue;
      TokenId id = vocab_.special_id(s.substr(i, l));
      if (id != Vocabulary::kNoToken) {
        pos = i;
        len = l;
        return id;
      }
    }
  }
  return Vocabulary::kNoToken;
}

void Tokenizer::encode_piece(std::string_view piece, bool allow_special, std::vector<TokenId>& out) const {
  if (!allow_special) {
    encode_ordinary(piece, out);
    return;
  }
  size_t start = 0;
  while (true) {
    size_t pos = 0, len = 0;
    TokenId id = find_special(piece, start, pos, len);
    if (id == Vocabulary::kNoToken) {
      encode_ordinary(piece.substr(start), out);
      return;
    }
    encode_ordinary(piece.substr(start, pos - start), out);
    out.push_back(id);
    start = pos + len;
  }
}

void Tokenizer::encode_ordinary(std::string_view stretch, std::vector<TokenId>& out) const {
  if (stretch.empty()) return;
  const auto* p = reinterpret_cast<const uint8_t*>(stretch.data());
  split_.split(stretch, [&](size_t off, size_t len) {
    // Most pieces are whole tokens: one lookup instead of a merge.
    TokenId whole = vocab_.rank(p + off, len);
    if (whole != Vocabulary::kNoToken) out.push_back(whole);
    else byte_pair_merge(vocab_, p + off, len, out);
  });
}

std::string Tokenizer::decode_bytes(const std::vector<TokenId>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_.size())
      throw Error(ExitCode::kBadInput, "token id " + std::to_string(ids[i]) + " at position " + std::to_string(i + 1) +
                                           " is outside the vocabulary (0.." + std::to_string(vocab_.size() - 1) + ")");
    out.append(vocab_.bytes(ids[i]));
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids) const {
  return utf8::replace_invalid(decode_bytes(ids));
}

}  // namespace k3
