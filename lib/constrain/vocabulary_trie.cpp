#include "constrain/vocabulary_trie.h"

#include <algorithm>

#include "common/error.h"
#include "constrain/json_recognizer.h"

namespace k3 {

namespace {

// Whether these bytes, inside a JSON string between characters, are content
// that ends between characters again (JsonRecognizer's own byte rule), and
// how many characters they hold (as the recognizer counts them for a length
// bound: one per return to between characters); -1 when not.
int64_t plain_string_chars(std::string_view bytes) {
  uint8_t utf8 = 0, esc = 0;
  int64_t chars = 0;
  for (unsigned char b : bytes) {
    if (JsonRecognizer::string_byte(utf8, esc, b) != JsonRecognizer::StringByte::kContent) return -1;
    if ((utf8 & 0x0F) == 0 && esc == 0) ++chars;
  }
  return utf8 == 0 && esc == 0 ? chars : -1;
}
bool plain_string_text(std::string_view bytes) { return plain_string_chars(bytes) >= 0; }

std::vector<std::pair<int32_t, std::string_view>> select(const std::vector<std::string_view>& bytes,
                                                         const std::vector<bool>& keep) {
  std::vector<std::pair<int32_t, std::string_view>> out;
  for (size_t i = 0; i < bytes.size(); ++i)
    if (keep[i]) out.emplace_back(static_cast<int32_t>(i), bytes[i]);
  return out;
}

std::vector<bool> not_plain(const std::vector<std::string_view>& bytes, const std::vector<bool>& text) {
  std::vector<bool> out(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) out[i] = text[i] && !plain_string_text(bytes[i]);
  return out;
}

}  // namespace

TokenTrie::TokenTrie(std::vector<std::pair<int32_t, std::string_view>> entries) {
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<int32_t> path;  // open nodes, one per byte of the previous entry
  std::string_view prev;
  for (const auto& [id, bytes] : entries) {
    if (bytes.empty()) throw Error(ExitCode::kInternal, "vocabulary trie: id " + std::to_string(id) + " has no bytes");
    max_length_ = std::max(max_length_, bytes.size());
    size_t common = 0;
    while (common < prev.size() && common < bytes.size() && prev[common] == bytes[common]) ++common;
    if (common == bytes.size() && common == prev.size())
      throw Error(ExitCode::kInternal, "vocabulary trie: two ids share the bytes of id " + std::to_string(id));
    while (path.size() > common) {
      nodes_[static_cast<size_t>(path.back())].end = static_cast<int32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t i = common; i < bytes.size(); ++i) {
      path.push_back(static_cast<int32_t>(nodes_.size()));
      nodes_.push_back({static_cast<uint8_t>(bytes[i]), -1, -1});
    }
    nodes_[static_cast<size_t>(path.back())].id = id;
    prev = bytes;
  }
  for (int32_t n : path) nodes_[static_cast<size_t>(n)].end = static_cast<int32_t>(nodes_.size());
}

VocabularyTrie::VocabularyTrie(const std::vector<std::string_view>& bytes, const std::vector<bool>& text)
    : size_(static_cast<int64_t>(bytes.size())),
      bytes_(bytes),
      text_(text),
      all_(select(bytes, text)),
      special_(select(bytes, not_plain(bytes, text))),
      plain_(static_cast<int64_t>(bytes.size())) {
  std::vector<int64_t> chars(bytes.size(), -1);
  int64_t longest = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!text[i]) continue;
    chars[i] = plain_string_chars(bytes[i]);
    if (chars[i] < 0) continue;
    plain_.allow(static_cast<int64_t>(i));
    longest = std::max(longest, chars[i]);
  }
  plain_within_.assign(static_cast<size_t>(longest) + 1, TokenMask(size_));
  for (size_t i = 0; i < bytes.size(); ++i)
    if (chars[i] >= 0) plain_within_[static_cast<size_t>(chars[i])].allow(static_cast<int64_t>(i));
  for (size_t k = 1; k < plain_within_.size(); ++k) plain_within_[k].merge(plain_within_[k - 1]);
}

const TokenMask& VocabularyTrie::plain_within(int64_t chars) const {
  if (chars < 0) chars = 0;
  if (static_cast<size_t>(chars) >= plain_within_.size()) return plain_;
  return plain_within_[static_cast<size_t>(chars)];
}

VocabularyTrie VocabularyTrie::from_vocabulary(const Vocabulary& vocab) {
  std::vector<std::string_view> bytes(vocab.size());
  std::vector<bool> text(vocab.size());
  for (TokenId id = 0; id < vocab.size(); ++id) {
    bytes[id] = vocab.bytes(id);
    text[id] = !vocab.is_special(id) && !bytes[id].empty();
  }
  return VocabularyTrie(bytes, text);
}

}  // namespace k3
