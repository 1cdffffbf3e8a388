// Reading K3's reply back (SPEC section 5): the ids generated after the
// generation prompt -> an assistant message, and, token by token, which
// channel each piece of text belongs to, so a front end can show reasoning
// apart from the answer while it streams.
//
// A reply with thinking on reads: reasoning <|close|>think<|sep|>
// <|open|>response<|sep|> answer <|close|>response<|sep|> [<|open|>tools<|sep|>
// calls <|close|>tools<|sep|>] <|close|>message<|sep|>, then a stop id. Only
// special ids are structure; special spellings written as ordinary tokens
// are text. Anything else (a reply cut by the token limit, a control token
// inside a channel, a tag out of place) leaves the parts read so far and a
// problem that says what and where.
#pragma once

#include <string>
#include <vector>

#include "chat/chat_request.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/vocabulary.h"

namespace k3 {

enum class ReplyChannel { kThink, kResponse, kTools };

struct ReplyPiece {
  ReplyChannel channel;
  std::string text;  // UTF-8; for kTools a readable rendering of the calls
};

struct ParsedReply {
  ChatMessage message;    // role assistant; reasoning_content set when thinking
  bool complete = false;  // <|close|>message<|sep|> was read
  std::string problem;    // empty for a well-formed reply
  bool ok() const { return complete && problem.empty(); }
};

class ReplyParser {
 public:
  // `thinking`: the generation prompt opened the think channel (else the
  // response channel). The vocabulary must hold the XTML markup tokens.
  ReplyParser(const Vocabulary& vocab, bool thinking);

  // Reads one generated id; appends the text that is final now (nothing, or
  // one or more pieces) to `out`.
  void push(TokenId id, std::vector<ReplyPiece>& out);
  // True once the message is closed (a stop id may still follow) or the
  // reply can no longer be read.
  bool done() const { return state_ == State::kClosed || state_ == State::kBroken; }
  // End of generation: flushes held-back bytes to `out` and returns the message.
  ParsedReply finish(std::vector<ReplyPiece>& out);

 private:
  enum class State {
    kThink,
    kAfterThink,
    kResponse,
    kAfterResponse,
    kTools,
    kCall,
    kArgument,
    kJson,
    kAfterTools,
    kClosed,
    kBroken
  };
  void open_tag(const std::string& header, std::vector<ReplyPiece>& out);
  void close_tag(const std::string& header, std::vector<ReplyPiece>& out);
  void text(std::string_view bytes, std::vector<ReplyPiece>& out);
  void flush(std::vector<ReplyPiece>& out);
  void fail(const std::string& what);
  ReplyChannel channel() const;
  std::string where() const;

  const Vocabulary& vocab_;
  TokenId open_, close_, sep_, end_;
  State state_;
  uint64_t index_ = 0;  // ids read
  // A tag being read: between <|open|> or <|close|> and <|sep|>.
  bool in_header_ = false, header_is_open_ = false;
  bool header_at_start_ = false;  // the tag is the reply's first token
  std::string header_;
  std::string value_;  // bytes of the current channel or argument
  std::string key_, type_;
  StreamDecoder decoder_;
  ParsedReply reply_;
};

// The whole reply at once.
ParsedReply parse_reply(const Vocabulary& vocab, const std::vector<TokenId>& ids, bool thinking);

// A tag header "name key="value" ..." split into its name and unescaped
// attributes; false if it is not of that form.
bool parse_tag_header(const std::string& header, std::string& name,
                      std::vector<std::pair<std::string, std::string>>& attributes);

}  // namespace k3
