// XTML building blocks (SPEC section 5): a chat prompt is a list of
// segments, each either markup (special-token spellings are recognised when
// it is encoded) or text (encoded with every special spelling as ordinary
// text, so content can never forge structure). BPE never crosses a segment.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace k3 {

// The markup spellings of the format.
inline constexpr std::string_view kXtmlOpen = "<|open|>";
inline constexpr std::string_view kXtmlClose = "<|close|>";
inline constexpr std::string_view kXtmlSep = "<|sep|>";
inline constexpr std::string_view kXtmlEnd = "<|end_of_msg|>";

struct Segment {
  std::string text;
  bool markup = false;
  bool operator==(const Segment&) const = default;
};

class XtmlWriter {
 public:
  using Attributes = std::vector<std::pair<std::string_view, std::string_view>>;

  void markup(std::string_view s) { add(s, true); }
  void text(std::string_view s) { add(s, false); }
  // <|open|>tag key="value"...<|sep|>, values escaped (& then ").
  void open(std::string_view tag, const Attributes& attributes = {});
  // <|close|>tag<|sep|>
  void close(std::string_view tag);
  // <|end_of_msg|>
  void end() { markup(kXtmlEnd); }
  // A system note: open(message, role=system, type=TYPE) body.strip() close end.
  void note(std::string_view type, std::string_view body);

  size_t size() const { return segments_.size(); }
  std::vector<Segment>& segments() { return segments_; }

 private:
  void add(std::string_view s, bool markup) {
    if (!s.empty()) segments_.push_back(Segment{std::string(s), markup});  // empty segments are dropped
  }
  std::vector<Segment> segments_;
};

// Attribute value escaping: & -> &amp; first, then " -> &quot;.
std::string escape_attribute(std::string_view value);
// Python's str.strip(): leading and trailing str.isspace() code points.
std::string_view python_strip(std::string_view s);

// Encodes each segment on its own and concatenates the ids. A markup
// segment must come out as special ids only (Error(kBadModel) naming the
// spelling the vocabulary lacks).
void encode_segments(const Tokenizer& tok, const std::vector<Segment>& segments, std::vector<TokenId>& out);
std::string segments_text(const std::vector<Segment>& segments);

}  // namespace k3
