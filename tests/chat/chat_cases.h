// The chat-format vectors of tests/data/chat/ (SPEC section 5), shared by
// the renderer tests.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "chat/python_json.h"
#include "chat/xtml_segments.h"
#include "common/file.h"
#include "common/json_value.h"
#include "tokenizer/vocabulary.h"

namespace k3::test {

inline const std::string kChatData = std::string(K3_TEST_DATA) + "/chat/";

struct ChatCase {
  std::string name, request, text;
  std::vector<Segment> segments;
  std::vector<TokenId> ids;
};

inline std::vector<std::string> jsonl_lines(const std::string& path) {
  std::vector<std::string> out;
  const std::string text = read_text_file(path);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    if (eol > pos) out.push_back(text.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return out;
}

// float_requests.jsonl holds requests whose floats the stored case lost
// (README.md): those replace the stored request of the same name.
// (Read with k3's own JSON reader: a DOM parser refuses the integer
// 100000000000000000000 that one stored request holds.)
inline JsonValue parse_line(const std::string& line) {
  JsonValue v;
  std::string error;
  if (!parse_json(line, v, error)) throw std::runtime_error("bad test vector line: " + error);
  return v;
}

inline std::vector<ChatCase> load_chat_cases() {
  std::map<std::string, std::string> restored;
  for (const std::string& line : jsonl_lines(kChatData + "float_requests.jsonl")) {
    JsonValue e = parse_line(line);
    restored[e.find("name")->text] = python_json_dumps(*e.find("request"));
  }
  std::vector<ChatCase> out;
  for (const std::string& line : jsonl_lines(kChatData + "cases_k3_tiny.jsonl")) {
    JsonValue e = parse_line(line);
    ChatCase c;
    c.name = e.find("name")->text;
    c.request = python_json_dumps(*e.find("request"));
    if (auto it = restored.find(c.name); it != restored.end()) c.request = it->second;
    c.text = e.find("text")->text;
    for (const JsonValue& s : e.find("segments")->items)
      c.segments.push_back(Segment{s.items.at(0).text, s.items.at(1).boolean});
    for (const JsonValue& id : e.find("ids")->items) c.ids.push_back(static_cast<TokenId>(std::stoul(id.text)));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace k3::test
