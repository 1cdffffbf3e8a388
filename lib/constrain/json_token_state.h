// A JSON value being generated token by token: the recognizer's state after
// the ids so far, and which ids may come next (a walk of the vocabulary
// trie that tries each byte on the state and drops a subtree at the first
// byte refused). An id is allowed exactly when every byte of it is.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "constrain/json_grammar.h"
#include "constrain/json_recognizer.h"
#include "constrain/vocabulary_trie.h"
#include "sampling/token_mask.h"

namespace k3 {

class JsonTokenState {
 public:
  // `vocab` must outlive the state.
  JsonTokenState(std::shared_ptr<const JsonGrammar> grammar, const VocabularyTrie& vocab);
  JsonTokenState(const JsonTokenState& other);
  JsonTokenState& operator=(const JsonTokenState&) = delete;

  // Sets (adds) the text ids that may come next in `mask` (sized to the vocabulary).
  void allowed(TokenMask& mask);
  // Whether the value is complete (the output may end here).
  bool complete() const;
  // Reads `bytes`; false (state unchanged) when they cannot continue the value.
  bool accept(std::string_view bytes);
  // Whether these bytes would be accepted (nothing changes).
  bool accepts(std::string_view bytes) const;

 private:
  bool advance(std::vector<JsonCursor>& cursors, std::vector<JsonLink>& arena, std::string_view bytes) const;
  void walk(const TokenTrie& trie, int32_t begin, int32_t end, size_t level, TokenMask& mask);
  static void dedupe(std::vector<JsonCursor>& cursors);

  std::shared_ptr<const JsonGrammar> grammar_;
  JsonRecognizer recognizer_;
  const VocabularyTrie& vocab_;
  std::vector<JsonCursor> cursors_;              // the alternatives still alive
  std::vector<JsonLink> arena_;                  // their parent frames
  std::vector<std::vector<JsonCursor>> levels_;  // walk scratch, one per trie depth
};

}  // namespace k3
