// Layer constrain: structured output, the JSON-Schema subset compiled to a recognizer over bytes and the masks it puts
// on the vocabulary.
//
// The compiled form of a JSON schema (json_schema_compiler.h): a graph of
// nodes the recognizer (json_recognizer.h) walks byte by byte. Recursion
// ($ref) is an edge back to an earlier node, never a copy, so a recursive
// schema stays small; anyOf and type lists are unions the recognizer follows
// side by side until the bytes tell them apart.
//
// Literal texts (enum and const values, true/false/null, an object's quoted
// keys) live in one byte trie; a node names its root there.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace k3 {

struct JsonGrammar {
  enum class Kind : uint8_t {
    kDocument,    // the bottom of the stack: optional leading whitespace, one value of `child`, nothing after
    kObject,      // declared properties in order, each at most once; required ones not skipped
    kFreeObject,  // any keys, each value of `child`
    kArray,       // elements of `child`, min_items..max_items of them
    kString,      // any string (min_length..max_length code points when bounded)
    kNumber,      // a JSON number
    kInteger,     // an integer: no fraction, no exponent
    kLiteral,     // one of the texts of the trie rooted at `trie`
    kUnion,       // one of `alternatives`
  };
  struct Property {
    std::string name;
    int32_t node = -1;
    bool required = false;
  };
  struct Node {
    Kind kind = Kind::kUnion;
    int32_t child = -1;                 // kDocument, kFreeObject, kArray
    int32_t key = -1;                   // kFreeObject: the node of its keys (a string)
    int32_t trie = -1;                  // kLiteral: literal texts; kObject: the quoted keys (terminal = property index)
    std::vector<Property> properties;   // kObject, in the schema's order
    std::vector<int32_t> alternatives;  // kUnion
    int64_t min_items = 0, max_items = -1;    // kArray (-1: unbounded)
    int64_t min_length = 0, max_length = -1;  // kString (-1: unbounded)
    bool bounded_length() const { return min_length > 0 || max_length >= 0; }
  };
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t terminal = -1;                          // >= 0: a text ends here (its index)
    std::vector<int32_t> below;                     // terminal indices in this subtree, ascending
  };

  std::vector<Node> nodes;
  std::vector<TrieNode> trie;
  int32_t document = -1;  // the kDocument node to start from

  // Adds a node; returns its index.
  int32_t add(Node node);
  // A new empty trie; returns its root.
  int32_t new_trie();
  // Adds `text` to the trie at `root` with terminal index `index`.
  void add_text(int32_t root, const std::string& text, int32_t index);
  // The child of trie node `at` for byte `b`, -1 if none.
  int32_t trie_next(int32_t at, uint8_t b) const;
  // Whether the subtree at `at` holds a terminal index in [lo, hi].
  bool trie_holds(int32_t at, int32_t lo, int32_t hi) const;
};

}  // namespace k3
