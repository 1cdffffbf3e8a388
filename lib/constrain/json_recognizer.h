// The pushdown recognizer of a JsonGrammar over bytes: which bytes may come
// next so that the output can still become a value the schema accepts.
//
// A state is a set of stacks (a union whose alternatives both still fit the
// bytes so far is followed in each), each stack a top frame held by value
// over an immutable chain of parent frames in an arena. A byte step copies
// only the top frame, so the mask search (json_token_mask.h) can try a byte
// on a state and drop the result for the cost of a few words.
//
// Bounds that keep a hostile or runaway output finite: at most
// kMaxDepth frames, kMaxWhitespace bytes between two tokens of JSON,
// kMaxIntegerDigits/kMaxFractionDigits/kMaxExponentDigits in a number,
// kMaxAlternatives stacks in a state.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "constrain/json_grammar.h"

namespace k3 {

struct JsonFrame {
  int32_t node = -1;  // -1: the document is complete (nothing more)
  uint8_t phase = 0;
  uint8_t ws = 0;    // whitespace bytes in the current gap
  uint8_t utf8 = 0;  // strings: continuation bytes still due (low nibble) and the range of the next (high)
  uint8_t esc = 0;   // strings: 1 after a backslash, 2..5 in a \uXXXX escape
  int32_t a = 0;     // object: next property; array: elements; string: code points; number: digits; literal: trie node
  int32_t b = 0;     // object: the key's trie node, then its property; number: fraction/exponent digits
  bool operator==(const JsonFrame&) const = default;
};

struct JsonLink {
  JsonFrame frame;
  int32_t rest;  // -1: bottom
};

struct JsonCursor {
  JsonFrame top;
  int32_t rest = -1;  // index into the arena, -1: the stack is just `top`
  int32_t depth = 1;
  bool operator==(const JsonCursor&) const = default;
};

class JsonRecognizer {
 public:
  static constexpr int32_t kMaxDepth = 64;
  static constexpr uint8_t kMaxWhitespace = 40;
  static constexpr int32_t kMaxIntegerDigits = 15;  // exact in a double, as JavaScript reads it
  static constexpr int32_t kMaxFractionDigits = 15;
  static constexpr int32_t kMaxExponentDigits = 2;
  static constexpr size_t kMaxAlternatives = 64;

  explicit JsonRecognizer(const JsonGrammar& grammar) : g_(grammar) {}
  const JsonGrammar& grammar() const { return g_; }

  // The state before any byte.
  JsonCursor start() const;
  // Appends to `out` the stacks `c` becomes after byte `b` (none: rejected).
  // New parent frames go to `arena`.
  void step(const JsonCursor& c, uint8_t b, std::vector<JsonLink>& arena, std::vector<JsonCursor>& out) const;
  // Whether the output may end here (a complete value, a number or literal
  // that could also go on included).
  bool complete(const JsonCursor& c, const std::vector<JsonLink>& arena) const;
  // Inside a string between characters: how many more characters it may
  // take (kUnbounded without maxLength), -1 when `c` is not there. Every
  // byte string of plain content that fits leaves the state as it was but
  // for the count.
  static constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  int64_t string_room(const JsonCursor& c) const;

  // One byte of string content from the neutral state: whether a token made
  // only of such bytes (ending neutral) leaves a free string's state as it was.
  enum class StringByte { kReject, kContent, kClose };
  static StringByte string_byte(uint8_t& utf8, uint8_t& esc, uint8_t b);

 private:
  enum class Feed { kReject, kTaken, kDone, kEnded, kPush };
  Feed feed(JsonFrame& f, uint8_t b, int32_t& push) const;
  // feed() by the kind of the frame's node.
  Feed feed_object(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b, int32_t& push) const;
  static Feed feed_free_object(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b, int32_t& push);
  static Feed feed_array(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b, int32_t& push);
  static Feed feed_string(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b);
  static Feed feed_number(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b);
  Feed feed_literal(JsonFrame& f, uint8_t b) const;
  // Whitespace between tokens of JSON (at most kMaxWhitespace bytes per
  // gap), and a move to `phase`, which starts a new gap.
  static Feed space(JsonFrame& f);
  static Feed to(JsonFrame& f, uint8_t phase);
  void push_node(JsonCursor c, int32_t node, uint8_t b, std::vector<JsonLink>& arena, std::vector<JsonCursor>& out,
                 int guard) const;
  void run(JsonCursor c, uint8_t b, std::vector<JsonLink>& arena, std::vector<JsonCursor>& out) const;
  // Pops the top frame into its parent and tells the parent its value is done.
  static void pop(JsonCursor& c, const std::vector<JsonLink>& arena);
  void child_done(JsonFrame& parent) const;
  bool can_end(const JsonFrame& f) const;

  const JsonGrammar& g_;
};

}  // namespace k3
