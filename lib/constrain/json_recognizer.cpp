#include "constrain/json_recognizer.h"

#include <algorithm>

#include "common/error.h"

namespace k3 {

namespace {

using Kind = JsonGrammar::Kind;

bool is_ws(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
bool is_hex(uint8_t b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

// The byte range a UTF-8 continuation byte must fall in, by the code kept in
// the high nibble of JsonFrame::utf8 (overlong forms, surrogates and code
// points past U+10FFFF are refused, as a strict decoder does).
bool in_continuation_range(uint8_t code, uint8_t b) {
  switch (code) {
    case 1: return b >= 0xA0 && b <= 0xBF;  // after E0
    case 2: return b >= 0x80 && b <= 0x9F;  // after ED
    case 3: return b >= 0x90 && b <= 0xBF;  // after F0
    case 4: return b >= 0x80 && b <= 0x8F;  // after F4
    default: return b >= 0x80 && b <= 0xBF;
  }
}

}  // namespace

JsonRecognizer::StringByte JsonRecognizer::string_byte(uint8_t& utf8, uint8_t& esc, uint8_t b) {
  if (esc == 1) {
    if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't') {
      esc = 0;
      return StringByte::kContent;
    }
    if (b == 'u') {
      esc = 2;
      return StringByte::kContent;
    }
    return StringByte::kReject;
  }
  if (esc >= 2) {
    // \uXXXX of a BMP code point that is not a surrogate (a lone surrogate is
    // not text; a pair would count as two characters against a length bound).
    if (esc == 6) {
      if (b < '0' || b > '7') return StringByte::kReject;
      esc = 4;
      return StringByte::kContent;
    }
    if (!is_hex(b)) return StringByte::kReject;
    if (esc == 2 && (b == 'd' || b == 'D')) esc = 6;
    else esc = esc == 5 ? 0 : static_cast<uint8_t>(esc + 1);
    return StringByte::kContent;
  }
  if (utf8 & 0x0F) {
    if (!in_continuation_range(static_cast<uint8_t>(utf8 >> 4), b)) return StringByte::kReject;
    utf8 = static_cast<uint8_t>((utf8 & 0x0F) - 1);  // later continuation bytes: the plain range
    return StringByte::kContent;
  }
  if (b == '"') return StringByte::kClose;
  if (b == '\\') {
    esc = 1;
    return StringByte::kContent;
  }
  if (b < 0x20) return StringByte::kReject;  // control characters must be escaped
  if (b < 0x80) return StringByte::kContent;
  if (b >= 0xC2 && b <= 0xDF) utf8 = 1;
  else if (b == 0xE0) utf8 = 2 | (1 << 4);
  else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) utf8 = 2;
  else if (b == 0xED) utf8 = 2 | (2 << 4);
  else if (b == 0xF0) utf8 = 3 | (3 << 4);
  else if (b >= 0xF1 && b <= 0xF3) utf8 = 3;
  else if (b == 0xF4) utf8 = 3 | (4 << 4);
  else return StringByte::kReject;
  return StringByte::kContent;
}

JsonCursor JsonRecognizer::start() const {
  JsonCursor c;
  c.top.node = g_.document;
  return c;
}

bool JsonRecognizer::can_end(const JsonFrame& f) const {
  if (f.node < 0) return true;
  const JsonGrammar::Node& n = g_.nodes[static_cast<size_t>(f.node)];
  switch (n.kind) {
    case Kind::kDocument: return f.phase == 1;
    case Kind::kNumber:
    case Kind::kInteger: return f.phase == 2 || f.phase == 3 || f.phase == 5 || f.phase == 8;
    case Kind::kLiteral: return g_.trie[static_cast<size_t>(f.a)].terminal >= 0;
    default: return false;
  }
}

void JsonRecognizer::child_done(JsonFrame& p) const {
  const JsonGrammar::Node& n = g_.nodes[static_cast<size_t>(p.node)];
  p.ws = 0;
  switch (n.kind) {
    case Kind::kDocument: p.phase = 1; break;
    case Kind::kObject: p.phase = 6; break;
    case Kind::kFreeObject: p.phase = p.phase == 2 ? 3 : 6; break;
    case Kind::kArray:
      p.phase = 6;
      ++p.a;
      break;
    default: throw Error(ExitCode::kInternal, "json recognizer: a value ended inside a scalar");
  }
}

void JsonRecognizer::pop(JsonCursor& c, const std::vector<JsonLink>& arena) {
  const JsonLink& l = arena[static_cast<size_t>(c.rest)];
  c.top = l.frame;
  c.rest = l.rest;
  --c.depth;
}

JsonRecognizer::Feed JsonRecognizer::space(JsonFrame& f) {
  if (f.ws >= kMaxWhitespace) return Feed::kReject;
  ++f.ws;
  return Feed::kTaken;
}

JsonRecognizer::Feed JsonRecognizer::to(JsonFrame& f, uint8_t phase) {
  f.phase = phase;
  f.ws = 0;
  return Feed::kTaken;
}

// Properties in the schema's order: phases 0 '{', 1 first key or '}', 2 in
// a key, 3 ':', 4 the value, 5 a key after ',', 6 ',' or '}'.
JsonRecognizer::Feed JsonRecognizer::feed_object(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b,
                                                 int32_t& push) const {
  const int32_t size = static_cast<int32_t>(n.properties.size());
  // Keys come in the schema's order; the allowed next ones are f.a up to
  // the first required property not written yet.
  int32_t last = f.a;
  while (last < size && !n.properties[static_cast<size_t>(last)].required) ++last;
  const bool may_close = last >= size;
  if (last >= size) last = size - 1;
  switch (f.phase) {
    case 0: return b == '{' ? to(f, 1) : Feed::kReject;
    case 1:
    case 5:
      if (is_ws(b)) return space(f);
      if (b == '}' && f.phase == 1 && may_close) return Feed::kDone;
      if (b != '"' || f.a >= size) return Feed::kReject;
      f.b = g_.trie_next(n.trie, b);
      if (f.b < 0 || !g_.trie_holds(f.b, f.a, last)) return Feed::kReject;
      return to(f, 2);
    case 2: {
      const int32_t next = g_.trie_next(f.b, b);
      if (next < 0 || !g_.trie_holds(next, f.a, last)) return Feed::kReject;
      const int32_t t = g_.trie[static_cast<size_t>(next)].terminal;
      if (t >= 0) {  // the closing quote of a key: no key continues past it
        f.a = t + 1;
        f.b = t;
        return to(f, 3);
      }
      f.b = next;
      return Feed::kTaken;
    }
    case 3:
      if (is_ws(b)) return space(f);
      return b == ':' ? to(f, 4) : Feed::kReject;
    case 4:
      if (is_ws(b)) return space(f);
      push = n.properties[static_cast<size_t>(f.b)].node;
      return Feed::kPush;
    case 6:
      if (is_ws(b)) return space(f);
      if (b == ',' && f.a < size) return to(f, 5);
      if (b == '}' && may_close) return Feed::kDone;
      return Feed::kReject;
  }
  return Feed::kReject;
}

// Any keys (strings) and values of one schema: the phases of feed_object.
JsonRecognizer::Feed JsonRecognizer::feed_free_object(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b,
                                                      int32_t& push) {
  switch (f.phase) {
    case 0: return b == '{' ? to(f, 1) : Feed::kReject;
    case 1:
    case 5:
      if (is_ws(b)) return space(f);
      if (b == '}' && f.phase == 1) return Feed::kDone;
      if (b != '"') return Feed::kReject;
      f.phase = 2;
      push = n.key;
      return Feed::kPush;
    case 3:
      if (is_ws(b)) return space(f);
      return b == ':' ? to(f, 4) : Feed::kReject;
    case 4:
      if (is_ws(b)) return space(f);
      push = n.child;
      return Feed::kPush;
    case 6:
      if (is_ws(b)) return space(f);
      if (b == ',') return to(f, 5);
      if (b == '}') return Feed::kDone;
      return Feed::kReject;
  }
  return Feed::kReject;
}

// Phases 0 '[', 1 first element or ']', 4 an element, 5 an element after ',', 6 ',' or ']'.
JsonRecognizer::Feed JsonRecognizer::feed_array(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b, int32_t& push) {
  switch (f.phase) {
    case 0: return b == '[' ? to(f, 1) : Feed::kReject;
    case 1:
    case 5:
      if (is_ws(b)) return space(f);
      if (b == ']' && f.phase == 1 && n.min_items == 0) return Feed::kDone;
      if (n.max_items == 0) return Feed::kReject;
      f.phase = 4;
      push = n.child;
      return Feed::kPush;
    case 6:
      if (is_ws(b)) return space(f);
      if (b == ',' && (n.max_items < 0 || f.a < n.max_items)) return to(f, 5);
      if (b == ']' && f.a >= n.min_items) return Feed::kDone;
      return Feed::kReject;
  }
  return Feed::kReject;
}

// A string's bytes, its length in characters bounded by the schema's.
JsonRecognizer::Feed JsonRecognizer::feed_string(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b) {
  if (f.phase == 0) return b == '"' ? to(f, 1) : Feed::kReject;
  const bool neutral = (f.utf8 & 0x0F) == 0 && f.esc == 0;
  const bool bounded = n.bounded_length();
  if (bounded && neutral && b != '"' && n.max_length >= 0 && f.a >= n.max_length) return Feed::kReject;
  switch (string_byte(f.utf8, f.esc, b)) {
    case StringByte::kReject: return Feed::kReject;
    case StringByte::kClose: return f.a >= n.min_length ? Feed::kDone : Feed::kReject;
    case StringByte::kContent:
      if (bounded && (f.utf8 & 0x0F) == 0 && f.esc == 0) ++f.a;  // a character is complete
      return Feed::kTaken;
  }
  return Feed::kReject;
}

// JSON's number grammar: phases 1 after '-', 2 a leading 0, 3 integer
// digits, 4 after '.', 5 fraction digits, 6 after 'e', 7 after its sign, 8
// exponent digits; each part bounded in digits.
JsonRecognizer::Feed JsonRecognizer::feed_number(JsonFrame& f, const JsonGrammar::Node& n, uint8_t b) {
  const bool real = n.kind == Kind::kNumber;
  switch (f.phase) {
    case 0:
      if (b == '-') return to(f, 1);
      [[fallthrough]];
    case 1:
      if (b == '0') return to(f, 2);
      if (b >= '1' && b <= '9') {
        f.a = 1;
        return to(f, 3);
      }
      return Feed::kReject;
    case 2:
    case 3:
      if (is_digit(b)) {
        if (f.phase == 2 || f.a >= kMaxIntegerDigits) return Feed::kReject;
        ++f.a;
        return Feed::kTaken;
      }
      if (real && b == '.') return to(f, 4);
      if (real && (b == 'e' || b == 'E')) return to(f, 6);
      return Feed::kEnded;
    case 4:
      if (!is_digit(b)) return Feed::kReject;
      f.b = 1;
      return to(f, 5);
    case 5:
      if (is_digit(b)) {
        if (f.b >= kMaxFractionDigits) return Feed::kReject;
        ++f.b;
        return Feed::kTaken;
      }
      if (b == 'e' || b == 'E') return to(f, 6);
      return Feed::kEnded;
    case 6:
      if (b == '+' || b == '-') return to(f, 7);
      [[fallthrough]];
    case 7:
      if (!is_digit(b)) return Feed::kReject;
      f.b = 1;
      return to(f, 8);
    case 8:
      if (is_digit(b)) {
        if (f.b >= kMaxExponentDigits) return Feed::kReject;
        ++f.b;
        return Feed::kTaken;
      }
      return Feed::kEnded;
  }
  return Feed::kReject;
}

// One of the literal words (true, false, null, an enum's values) through the trie.
JsonRecognizer::Feed JsonRecognizer::feed_literal(JsonFrame& f, uint8_t b) const {
  const int32_t next = g_.trie_next(f.a, b);
  if (next < 0) return g_.trie[static_cast<size_t>(f.a)].terminal >= 0 ? Feed::kEnded : Feed::kReject;
  f.a = next;
  const JsonGrammar::TrieNode& t = g_.trie[static_cast<size_t>(next)];
  return t.terminal >= 0 && t.next.empty() ? Feed::kDone : Feed::kTaken;
}

JsonRecognizer::Feed JsonRecognizer::feed(JsonFrame& f, uint8_t b, int32_t& push) const {
  const JsonGrammar::Node& n = g_.nodes[static_cast<size_t>(f.node)];
  switch (n.kind) {
    case Kind::kDocument:
      if (f.phase != 0) return Feed::kReject;  // nothing after the value
      if (is_ws(b)) return space(f);
      push = n.child;
      return Feed::kPush;
    case Kind::kObject: return feed_object(f, n, b, push);
    case Kind::kFreeObject: return feed_free_object(f, n, b, push);
    case Kind::kArray: return feed_array(f, n, b, push);
    case Kind::kString: return feed_string(f, n, b);
    case Kind::kNumber:
    case Kind::kInteger: return feed_number(f, n, b);
    case Kind::kLiteral: return feed_literal(f, b);
    case Kind::kUnion: break;  // expanded when pushed, never a frame
  }
  throw Error(ExitCode::kInternal, "json recognizer: a union on the stack");
}

void JsonRecognizer::run(JsonCursor c, uint8_t b, std::vector<JsonLink>& arena, std::vector<JsonCursor>& out) const {
  for (;;) {
    if (c.top.node < 0) return;
    int32_t push = -1;
    switch (feed(c.top, b, push)) {
      case Feed::kReject: return;
      case Feed::kTaken: out.push_back(c); return;
      case Feed::kDone:
        pop(c, arena);
        child_done(c.top);
        out.push_back(c);
        return;
      case Feed::kEnded:  // a number or literal ended before this byte: the parent reads it
        pop(c, arena);
        child_done(c.top);
        continue;
      case Feed::kPush: push_node(c, push, b, arena, out, 0); return;
    }
  }
}

void JsonRecognizer::push_node(JsonCursor c, int32_t node, uint8_t b, std::vector<JsonLink>& arena,
                               std::vector<JsonCursor>& out, int guard) const {
  const JsonGrammar::Node& n = g_.nodes[static_cast<size_t>(node)];
  if (n.kind == Kind::kUnion) {
    // The compiler refuses unions that reach themselves without a byte read; the guard is a second line.
    if (guard > 64) throw Error(ExitCode::kInternal, "json recognizer: unions nested past 64 levels");
    for (int32_t alt : n.alternatives) push_node(c, alt, b, arena, out, guard + 1);
    return;
  }
  if (c.depth >= kMaxDepth) return;
  arena.push_back({c.top, c.rest});
  JsonCursor child;
  child.top.node = node;
  if (n.kind == Kind::kLiteral) child.top.a = n.trie;
  child.rest = static_cast<int32_t>(arena.size() - 1);
  child.depth = c.depth + 1;
  run(child, b, arena, out);
}

void JsonRecognizer::step(const JsonCursor& c, uint8_t b, std::vector<JsonLink>& arena,
                          std::vector<JsonCursor>& out) const {
  run(c, b, arena, out);
}

bool JsonRecognizer::complete(const JsonCursor& start, const std::vector<JsonLink>& arena) const {
  JsonCursor c = start;
  for (;;) {
    if (c.top.node < 0) return true;
    const JsonGrammar::Node& n = g_.nodes[static_cast<size_t>(c.top.node)];
    if (n.kind == Kind::kDocument) return c.top.phase == 1;
    if (!can_end(c.top)) return false;
    pop(c, arena);
    child_done(c.top);
  }
}

int64_t JsonRecognizer::string_room(const JsonCursor& c) const {
  if (c.top.node < 0) return -1;
  const JsonGrammar::Node& n = g_.nodes[static_cast<size_t>(c.top.node)];
  if (n.kind != Kind::kString || c.top.phase != 1 || c.top.utf8 != 0 || c.top.esc != 0) return -1;
  if (n.max_length < 0) return kUnbounded;
  return std::max<int64_t>(0, n.max_length - c.top.a);
}

}  // namespace k3
