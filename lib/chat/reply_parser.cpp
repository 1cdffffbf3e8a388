#include "chat/reply_parser.h"

#include "chat/xtml_segments.h"
#include "common/error.h"
#include "tokenizer/utf8.h"

namespace k3 {

namespace {

TokenId markup_id(const Vocabulary& vocab, std::string_view spelling) {
  TokenId id = vocab.special_id(spelling);
  if (id == Vocabulary::kNoToken)
    throw Error(ExitCode::kBadModel, "the tokenizer has no special token \"" + std::string(spelling) +
                                         "\", which the XTML chat format needs (is this a Kimi-K3 tokenizer?)");
  return id;
}

std::string unescape_attribute(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v.substr(i, 6) == "&quot;") {
      out.push_back('"');
      i += 5;
    } else if (v.substr(i, 5) == "&amp;") {
      out.push_back('&');
      i += 4;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

}  // namespace

bool parse_tag_header(const std::string& header, std::string& name,
                      std::vector<std::pair<std::string, std::string>>& attributes) {
  size_t i = header.find(' ');
  name = header.substr(0, i);
  attributes.clear();
  if (name.empty()) return false;
  while (i != std::string::npos) {
    // ' key="value"' ; values hold no raw '"' (escaped as &quot;).
    size_t eq = header.find("=\"", i + 1);
    if (eq == std::string::npos) return false;
    size_t end = header.find('"', eq + 2);
    if (end == std::string::npos) return false;
    attributes.emplace_back(header.substr(i + 1, eq - i - 1), unescape_attribute(header.substr(eq + 2, end - eq - 2)));
    i = end + 1;
    if (i == header.size()) break;
    if (header[i] != ' ') return false;
  }
  return true;
}

ReplyParser::ReplyParser(const Vocabulary& vocab, bool thinking)
    : vocab_(vocab),
      open_(markup_id(vocab, kXtmlOpen)),
      close_(markup_id(vocab, kXtmlClose)),
      sep_(markup_id(vocab, kXtmlSep)),
      end_(markup_id(vocab, kXtmlEnd)),
      state_(thinking ? State::kThink : State::kResponse) {
  reply_.message.role = "assistant";
  if (thinking) reply_.message.reasoning_content = "";
}

ReplyChannel ReplyParser::channel() const {
  switch (state_) {
    case State::kThink:
    case State::kAfterThink: return ReplyChannel::kThink;
    case State::kResponse:
    case State::kAfterResponse: return ReplyChannel::kResponse;
    default: return ReplyChannel::kTools;
  }
}

std::string ReplyParser::where() const {
  switch (state_) {
    case State::kThink: return "in the think channel";
    case State::kAfterThink: return "after the think channel";
    case State::kResponse: return "in the response channel";
    case State::kAfterResponse: return "after the response channel";
    case State::kTools: return "in the tools block";
    case State::kCall:
    case State::kArgument:
    case State::kJson: return "in tool call " + std::to_string(reply_.message.tool_calls.size());
    case State::kAfterTools: return "after the tools block";
    case State::kClosed: return "after the message closed";
    case State::kBroken: return "after an error";
  }
  return "";
}

void ReplyParser::fail(const std::string& what) {
  if (reply_.problem.empty()) reply_.problem = what + " (token " + std::to_string(index_) + " of the reply)";
  // What the open channel holds so far is kept.
  if (state_ == State::kThink) reply_.message.reasoning_content = utf8::replace_invalid(value_);
  if (state_ == State::kResponse) reply_.message.content = {utf8::replace_invalid(value_)};
  state_ = State::kBroken;
}

void ReplyParser::flush(std::vector<ReplyPiece>& out) {
  std::string rest;
  decoder_.finish(rest);
  if (!rest.empty()) out.push_back({channel(), rest});
  decoder_ = StreamDecoder();
}

void ReplyParser::text(std::string_view bytes, std::vector<ReplyPiece>& out) {
  if (in_header_) {
    header_.append(bytes);
    return;
  }
  switch (state_) {
    case State::kThink:
    case State::kResponse:
    case State::kArgument:
    case State::kJson: {
      value_.append(bytes);
      std::string piece;
      decoder_.push(bytes, piece);
      if (!piece.empty()) out.push_back({channel(), std::move(piece)});
      return;
    }
    case State::kClosed: return;  // text after the message (before a stop id): not part of it
    default: fail("text \"" + utf8::replace_invalid(bytes) + "\" " + where() + ", outside any channel");
  }
}

void ReplyParser::open_tag(const std::string& header, std::vector<ReplyPiece>& out) {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  if (!parse_tag_header(header, name, attrs)) return fail("malformed tag \"<|open|>" + header + "<|sep|>\" " + where());
  auto attr = [&](const char* key) -> std::string {
    for (auto& [k, v] : attrs)
      if (k == key) return v;
    return {};
  };
  // The generation prompt's own opening tag, if the ids start with it.
  if (header_at_start_ &&
      ((state_ == State::kThink && name == "think") || (state_ == State::kResponse && name == "response")))
    return;
  if (state_ == State::kAfterThink && name == "response") {
    state_ = State::kResponse;
  } else if (state_ == State::kAfterResponse && name == "tools") {
    state_ = State::kTools;
  } else if (state_ == State::kTools && name == "call") {
    ToolCall call;
    call.name = attr("tool");
    call.arguments = JsonValue::object();
    reply_.message.tool_calls.push_back(std::move(call));
    out.push_back({ReplyChannel::kTools, reply_.message.tool_calls.back().name + "("});
    state_ = State::kCall;
  } else if (state_ == State::kCall && name == "argument") {
    key_ = attr("key");
    type_ = attr("type");
    if (!reply_.message.tool_calls.back().arguments.keys.empty()) out.push_back({ReplyChannel::kTools, ", "});
    out.push_back({ReplyChannel::kTools, key_ + "="});
    state_ = State::kArgument;
  } else if (state_ == State::kCall && name == "json") {
    state_ = State::kJson;
  } else {
    fail("unexpected <|open|>" + header + "<|sep|> " + where());
  }
  value_.clear();
}

void ReplyParser::close_tag(const std::string& header, std::vector<ReplyPiece>& out) {
  const std::string value = utf8::replace_invalid(value_);
  if (state_ == State::kThink && header == "think") {
    reply_.message.reasoning_content = value;
    state_ = State::kAfterThink;
  } else if (state_ == State::kResponse && header == "response") {
    reply_.message.content = {value};
    state_ = State::kAfterResponse;
  } else if (state_ == State::kArgument && header == "argument") {
    ToolCall& call = reply_.message.tool_calls.back();
    if (type_ == "string") {
      call.arguments.set(key_, JsonValue::string(value));
    } else {
      JsonValue parsed;
      std::string error;
      if (!parse_json(value, parsed, error)) {
        call.arguments.set(key_, JsonValue::string(value));
        return fail("argument \"" + key_ + "\" of type " + type_ + " does not hold JSON (" + error + ") " + where());
      }
      call.arguments.set(key_, std::move(parsed));
    }
    state_ = State::kCall;
  } else if (state_ == State::kJson && header == "json") {
    ToolCall& call = reply_.message.tool_calls.back();
    call.raw = true;
    call.raw_arguments = value;
    state_ = State::kCall;
  } else if (state_ == State::kCall && header == "call") {
    out.push_back({ReplyChannel::kTools, ")\n"});
    state_ = State::kTools;
  } else if (state_ == State::kTools && header == "tools") {
    state_ = State::kAfterTools;
  } else if ((state_ == State::kAfterResponse || state_ == State::kAfterTools) && header == "message") {
    state_ = State::kClosed;
    reply_.complete = true;
  } else {
    fail("unexpected <|close|>" + header + "<|sep|> " + where());
  }
  value_.clear();
}

void ReplyParser::push(TokenId id, std::vector<ReplyPiece>& out) {
  ++index_;
  if (state_ == State::kBroken) return;
  if (id >= vocab_.size()) return fail("token id " + std::to_string(id) + " is outside the vocabulary");
  if (!vocab_.is_special(id)) return text(vocab_.bytes(id), out);
  if (in_header_) {
    if (id != sep_) return fail("control token " + std::string(vocab_.bytes(id)) + " inside a tag " + where());
    in_header_ = false;
    flush(out);
    return header_is_open_ ? open_tag(header_, out) : close_tag(header_, out);
  }
  if (id == open_ || id == close_) {
    if (state_ == State::kClosed) return fail("more after <|close|>message<|sep|>: " + std::string(vocab_.bytes(id)));
    in_header_ = true;
    header_is_open_ = id == open_;
    header_at_start_ = index_ == 1;
    header_.clear();
    return;
  }
  if (state_ == State::kClosed) return;  // the stop id after the message
  std::string name(vocab_.bytes(id));
  if (id == end_ || id == vocab_.eos_id())
    return fail("the reply ended (" + name + ") " + where() + ", before <|close|>message<|sep|>");
  fail("control token " + name + " " + where());
}

ParsedReply ReplyParser::finish(std::vector<ReplyPiece>& out) {
  flush(out);
  if (state_ != State::kClosed && state_ != State::kBroken) {
    fail("the reply stops " + where() + " without <|close|>message<|sep|> (cut by the token limit?)");
  }
  return reply_;
}

ParsedReply parse_reply(const Vocabulary& vocab, const std::vector<TokenId>& ids, bool thinking) {
  ReplyParser parser(vocab, thinking);
  std::vector<ReplyPiece> pieces;
  for (TokenId id : ids) parser.push(id, pieces);
  return parser.finish(pieces);
}

}  // namespace k3
