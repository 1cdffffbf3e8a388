#include "constrain/json_grammar.h"

#include <algorithm>

namespace k3 {

int32_t JsonGrammar::add(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<int32_t>(nodes.size() - 1);
}

int32_t JsonGrammar::new_trie() {
  trie.emplace_back();
  return static_cast<int32_t>(trie.size() - 1);
}

void JsonGrammar::add_text(int32_t root, const std::string& text, int32_t index) {
  int32_t at = root;
  auto note = [&](int32_t n) {
    std::vector<int32_t>& b = trie[static_cast<size_t>(n)].below;
    b.insert(std::upper_bound(b.begin(), b.end(), index), index);
  };
  note(at);
  for (unsigned char c : text) {
    int32_t next = trie_next(at, c);
    if (next < 0) {
      next = new_trie();
      auto& edges = trie[static_cast<size_t>(at)].next;
      edges.insert(std::upper_bound(edges.begin(), edges.end(), std::make_pair(c, int32_t{-1})),
                   std::make_pair(static_cast<uint8_t>(c), next));
    }
    at = next;
    note(at);
  }
  if (trie[static_cast<size_t>(at)].terminal < 0) trie[static_cast<size_t>(at)].terminal = index;
}

int32_t JsonGrammar::trie_next(int32_t at, uint8_t b) const {
  for (const auto& [byte, next] : trie[static_cast<size_t>(at)].next)
    if (byte == b) return next;
  return -1;
}

bool JsonGrammar::trie_holds(int32_t at, int32_t lo, int32_t hi) const {
  const std::vector<int32_t>& b = trie[static_cast<size_t>(at)].below;
  auto it = std::lower_bound(b.begin(), b.end(), lo);
  return it != b.end() && *it <= hi;
}

}  // namespace k3
