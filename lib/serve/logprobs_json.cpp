#include "serve/logprobs_json.h"

#include "serve/json_build.h"
#include "tokenizer/stream_decoder.h"

namespace k3::serve {

namespace {

std::string token_text(std::string_view bytes) {
  StreamDecoder decoder;
  std::string text;
  decoder.push(bytes, text);
  decoder.finish(text);
  return text;
}

JsonValue chat_entry(const TokenLogprob& t, const Vocabulary& vocab) {
  const std::string_view bytes = vocab.bytes(static_cast<TokenId>(t.id));
  JsonValue out = JsonValue::object();
  out.set("token", JsonValue::string(token_text(bytes)));
  out.set("logprob", json_float(t.logprob));
  JsonValue b = json_array();
  for (unsigned char c : bytes) b.items.push_back(json_int(c));
  out.set("bytes", std::move(b));
  return out;
}

JsonValue chat_logprobs(std::span<const PositionLogprobs> logprobs, const Vocabulary& vocab) {
  JsonValue content = json_array();
  for (const PositionLogprobs& p : logprobs) {
    JsonValue entry = chat_entry(p.chosen, vocab);
    JsonValue top = json_array();
    for (const TokenLogprob& t : p.top) top.items.push_back(chat_entry(t, vocab));
    entry.set("top_logprobs", std::move(top));
    content.items.push_back(std::move(entry));
  }
  JsonValue out = JsonValue::object();
  out.set("content", std::move(content));
  out.set("refusal", JsonValue());
  return out;
}

JsonValue completion_logprobs(std::span<const PositionLogprobs> logprobs, const Vocabulary& vocab, int64_t offset) {
  JsonValue tokens = json_array(), values = json_array(), tops = json_array(), offsets = json_array();
  for (const PositionLogprobs& p : logprobs) {
    const std::string_view bytes = vocab.bytes(static_cast<TokenId>(p.chosen.id));
    tokens.items.push_back(JsonValue::string(token_text(bytes)));
    values.items.push_back(json_float(p.chosen.logprob));
    JsonValue top = JsonValue::object();
    for (const TokenLogprob& t : p.top)
      top.set(token_text(vocab.bytes(static_cast<TokenId>(t.id))), json_float(t.logprob));
    tops.items.push_back(std::move(top));
    offsets.items.push_back(json_int(offset));
    offset += static_cast<int64_t>(bytes.size());
  }
  JsonValue out = JsonValue::object();
  out.set("tokens", std::move(tokens));
  out.set("token_logprobs", std::move(values));
  out.set("top_logprobs", std::move(tops));
  out.set("text_offset", std::move(offsets));
  return out;
}

}  // namespace

JsonValue logprobs_json(Endpoint endpoint, std::span<const PositionLogprobs> logprobs, const Vocabulary& vocab,
                        int64_t text_offset) {
  return endpoint == Endpoint::kChat ? chat_logprobs(logprobs, vocab)
                                     : completion_logprobs(logprobs, vocab, text_offset);
}

}  // namespace k3::serve
