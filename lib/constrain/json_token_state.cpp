#include "constrain/json_token_state.h"

#include <algorithm>
#include <functional>

namespace k3 {

JsonTokenState::JsonTokenState(std::shared_ptr<const JsonGrammar> grammar, const VocabularyTrie& vocab)
    : grammar_(std::move(grammar)), recognizer_(*grammar_), vocab_(vocab) {
  cursors_.push_back(recognizer_.start());
}

JsonTokenState::JsonTokenState(const JsonTokenState& o)
    : grammar_(o.grammar_), recognizer_(*grammar_), vocab_(o.vocab_), cursors_(o.cursors_), arena_(o.arena_) {}

void JsonTokenState::dedupe(std::vector<JsonCursor>& cursors) {
  // Stacks that met again (two alternatives closed to the same parent) are one.
  size_t kept = 0;
  for (size_t i = 0; i < cursors.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < kept && !seen; ++j) seen = cursors[j] == cursors[i];
    if (!seen && kept < JsonRecognizer::kMaxAlternatives) cursors[kept++] = cursors[i];
  }
  cursors.resize(kept);
}

bool JsonTokenState::advance(std::vector<JsonCursor>& cursors, std::vector<JsonLink>& arena,
                             std::string_view bytes) const {
  std::vector<JsonCursor> next;
  for (unsigned char b : bytes) {
    next.clear();
    for (const JsonCursor& c : cursors) recognizer_.step(c, b, arena, next);
    dedupe(next);
    if (next.empty()) return false;
    cursors.swap(next);
  }
  return true;
}

bool JsonTokenState::accepts(std::string_view bytes) const {
  std::vector<JsonCursor> cursors = cursors_;
  std::vector<JsonLink> arena = arena_;
  return advance(cursors, arena, bytes);
}

bool JsonTokenState::accept(std::string_view bytes) {
  std::vector<JsonCursor> cursors = cursors_;
  std::vector<JsonLink> arena = arena_;
  if (!advance(cursors, arena, bytes)) return false;
  // Keep only the parent frames still reachable, so the arena stays the size of the stacks.
  std::vector<JsonLink> compact;
  std::vector<int32_t> moved(arena.size(), -1);
  std::function<int32_t(int32_t)> copy = [&](int32_t at) -> int32_t {
    if (at < 0) return -1;
    if (moved[static_cast<size_t>(at)] >= 0) return moved[static_cast<size_t>(at)];
    const int32_t rest = copy(arena[static_cast<size_t>(at)].rest);
    compact.push_back({arena[static_cast<size_t>(at)].frame, rest});
    return moved[static_cast<size_t>(at)] = static_cast<int32_t>(compact.size() - 1);
  };
  for (JsonCursor& c : cursors) c.rest = copy(c.rest);
  cursors_ = std::move(cursors);
  arena_ = std::move(compact);
  return true;
}

bool JsonTokenState::complete() const {
  return std::any_of(cursors_.begin(), cursors_.end(),
                     [&](const JsonCursor& c) { return recognizer_.complete(c, arena_); });
}

void JsonTokenState::walk(const TokenTrie& trie, int32_t begin, int32_t end, size_t level, TokenMask& mask) {
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  for (int32_t i = begin; i < end; i = nodes[static_cast<size_t>(i)].end) {
    const TokenTrie::Node& n = nodes[static_cast<size_t>(i)];
    const size_t mark = arena_.size();
    std::vector<JsonCursor>& next = levels_[level + 1];
    next.clear();
    for (const JsonCursor& c : levels_[level]) recognizer_.step(c, n.byte, arena_, next);
    if (!next.empty()) {
      if (next.size() > 1) dedupe(next);
      if (n.id >= 0) mask.allow(n.id);
      if (i + 1 < n.end) walk(trie, i + 1, n.end, level + 1, mask);
    }
    arena_.resize(mark);  // the frames this subtree pushed are no longer needed
  }
}

void JsonTokenState::allowed(TokenMask& mask) {
  // One level per byte of the longest id, sized before the walk (it holds references into it).
  levels_.resize(vocab_.all_text().max_length() + 2);
  levels_[0] = cursors_;
  const TokenTrie* trie = &vocab_.all_text();
  if (cursors_.size() == 1) {
    if (const int64_t room = recognizer_.string_room(cursors_[0]); room >= 0) {
      // Plain text that fits leaves the string as it was (but for its length): no walk.
      mask.merge(room == JsonRecognizer::kUnbounded ? vocab_.plain() : vocab_.plain_within(room));
      trie = &vocab_.special_text();
    }
  }
  const int32_t size = static_cast<int32_t>(trie->nodes().size());
  walk(*trie, 0, size, 0, mask);
}

}  // namespace k3
