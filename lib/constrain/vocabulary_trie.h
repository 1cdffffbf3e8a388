// The vocabulary as byte tries, for computing which ids may come next: a
// walk down a trie tries each byte once for every id that starts with the
// bytes above it, and drops a whole subtree at the first byte refused.
//
// Built once per vocabulary (the model's, or a synthetic one in tests) and
// shared read-only by every constraint on it. Special ids (markup) have no
// bytes of text here; the constraint decides about them on its own.
//
// Inside a JSON string most ids are plain text that leaves the string's
// state exactly as it was (but for its length); those are `plain()`
// (allowed there as a whole, one copy of a bitset; `plain_within(n)`: those
// of at most n characters, for a string with maxLength) and only the others
// (`special_text()`: quotes, partial escapes, control bytes, partial UTF-8)
// are walked.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sampling/token_mask.h"
#include "tokenizer/vocabulary.h"

namespace k3 {

class TokenTrie {
 public:
  struct Node {
    uint8_t byte;
    int32_t id;   // -1: no id ends here
    int32_t end;  // one past this node's subtree (its children follow it, in byte order)
  };
  // `entries`: (id, bytes), bytes non-empty and distinct.
  explicit TokenTrie(std::vector<std::pair<int32_t, std::string_view>> entries);
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t max_length() const { return max_length_; }  // bytes of the longest id

 private:
  std::vector<Node> nodes_;
  size_t max_length_ = 0;  // preorder; the roots' children are the top-level nodes
};

class VocabularyTrie {
 public:
  // `bytes[id]`: each id's bytes; `text[id]`: whether the id is text (false
  // for specials and ids with no bytes).
  VocabularyTrie(const std::vector<std::string_view>& bytes, const std::vector<bool>& text);
  // The ordinary ids of a Vocabulary (specials left out).
  static VocabularyTrie from_vocabulary(const Vocabulary& vocab);

  int64_t size() const { return size_; }
  const TokenTrie& all_text() const { return all_; }
  const TokenTrie& special_text() const { return special_; }
  const TokenMask& plain() const { return plain_; }
  const TokenMask& plain_within(int64_t chars) const;
  // Whether `id` is text (not a special); its bytes.
  bool is_text(int32_t id) const { return id >= 0 && id < size_ && text_[static_cast<size_t>(id)]; }
  std::string_view bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

 private:
  int64_t size_;
  std::vector<std::string_view> bytes_;
  std::vector<bool> text_;
  TokenTrie all_, special_;
  TokenMask plain_;
  std::vector<TokenMask> plain_within_;  // [k]: plain ids of at most k characters
};

}  // namespace k3
