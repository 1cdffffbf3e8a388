#include "chat/xtml_segments.h"

#include "common/error.h"
#include "tokenizer/utf8.h"

namespace k3 {

std::string escape_attribute(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out.push_back(c);
  }
  return out;
}

void XtmlWriter::open(std::string_view tag, const Attributes& attributes) {
  markup(kXtmlOpen);
  text(tag);
  for (const auto& [key, value] : attributes) {
    text(" " + std::string(key));
    text("=\"");
    text(escape_attribute(value));
    text("\"");
  }
  markup(kXtmlSep);
}

void XtmlWriter::close(std::string_view tag) {
  markup(kXtmlClose);
  text(tag);
  markup(kXtmlSep);
}

void XtmlWriter::note(std::string_view type, std::string_view body) {
  open("message", {{"role", "system"}, {"type", type}});
  text(python_strip(body));
  close("message");
  end();
}

std::string_view python_strip(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t begin = 0, end = s.size();
  // Leading: decode forward.
  while (begin < end) {
    utf8::Sequence q = utf8::classify(p + begin, end - begin);
    if (q.kind != utf8::Sequence::kValid) break;
    size_t len;
    if (!is_python_space(utf8::decode_valid(p + begin, len))) break;
    begin += len;
  }
  // Trailing: step back to each code point's lead byte.
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (p[start] & 0xC0) == 0x80) --start;
    utf8::Sequence q = utf8::classify(p + start, end - start);
    if (q.kind != utf8::Sequence::kValid || q.length != end - start) break;
    size_t len;
    if (!is_python_space(utf8::decode_valid(p + start, len))) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

void encode_segments(const Tokenizer& tok, const std::vector<Segment>& segments, std::vector<TokenId>& out) {
  for (const Segment& s : segments) {
    const size_t before = out.size();
    tok.encode(s.text, s.markup, out);
    if (!s.markup) continue;
    for (size_t i = before; i < out.size(); ++i)
      if (!tok.vocab().is_special(out[i]))
        throw Error(ExitCode::kBadModel, "the tokenizer has no special token \"" + s.text +
                                             "\", which the XTML chat format needs (is this a Kimi-K3 tokenizer?)");
  }
}

std::string segments_text(const std::vector<Segment>& segments) {
  std::string out;
  for (const Segment& s : segments) out += s.text;
  return out;
}

}  // namespace k3
