#include "chat/chat_session.h"

#include <algorithm>
#include <span>

#include "chat/xtml_renderer.h"
#include "common/error.h"

namespace k3 {

namespace {

std::span<const int32_t> as_ids(const std::vector<TokenId>& ids, size_t from, size_t to) {
  return std::span<const int32_t>(reinterpret_cast<const int32_t*>(ids.data()) + from, to - from);
}

JsonValue user_message(const std::string& text) {
  JsonValue m = JsonValue::object();
  m.set("role", JsonValue::string("user"));
  m.set("content", JsonValue::string(text));
  return m;
}

}  // namespace

std::vector<int32_t> chat_stop_ids(const Vocabulary& vocab, const std::vector<int>& model_eos_ids) {
  std::vector<int32_t> ids(model_eos_ids.begin(), model_eos_ids.end());
  const TokenId end = vocab.special_id(kXtmlEnd);
  if (end != Vocabulary::kNoToken && std::find(ids.begin(), ids.end(), static_cast<int32_t>(end)) == ids.end())
    ids.push_back(static_cast<int32_t>(end));
  return ids;
}

void check_chat_messages(const std::vector<JsonValue>& messages) {
  JsonValue request = JsonValue::object();
  JsonValue list;
  list.kind = JsonValue::Kind::kArray;
  list.items = messages;
  request.set("messages", std::move(list));
  render_chat(parse_chat_request(request));
}

ChatSession::ChatSession(const Tokenizer& tok, Session& session, ChatOptions options)
    : tok_(tok), session_(session), options_(std::move(options)) {
  session_.reset();
}

ChatRequest ChatSession::request_with(const std::optional<std::string>& user_text) const {
  JsonValue request = JsonValue::object();
  JsonValue messages;
  messages.kind = JsonValue::Kind::kArray;
  messages.items = messages_;
  if (user_text) messages.items.push_back(user_message(*user_text));
  request.set("messages", std::move(messages));
  JsonValue thinking;
  thinking.kind = JsonValue::Kind::kBool;
  thinking.boolean = options_.thinking;
  request.set("thinking", thinking);
  request.set("thinking_effort", options_.effort ? JsonValue::string(*options_.effort) : JsonValue());
  return parse_chat_request(request);
}

void ChatSession::set_messages(std::vector<JsonValue> messages) {
  std::swap(messages_, messages);
  try {
    render_chat(request_with(std::nullopt));  // refuses what a request would refuse, naming the message
  } catch (...) {
    std::swap(messages_, messages);
    throw;
  }
  session_.reset();  // another conversation: nothing of the model state carries over
}

void ChatSession::reset(std::vector<JsonValue> keep) {
  set_messages(std::move(keep));
}

std::vector<TokenId> ChatSession::prompt_ids(const std::string& user_text) const {
  return encode_chat(tok_, render_chat(request_with(user_text))).ids;
}

TurnReport ChatSession::reply(const std::string& user_text,
                              const std::function<void(const std::vector<ReplyPiece>&)>& on_pieces,
                              const std::function<bool()>& interrupted, const Engine::Progress& progress) {
  const ChatRequest request = request_with(user_text);
  const ChatPrompt prompt = encode_chat(tok_, render_chat(request));
  const std::vector<TokenId>& ids = prompt.ids;
  TurnReport report;
  report.prompt_ids = static_cast<int64_t>(ids.size());

  // Evaluates only what the model has not seen (Session::prefill_reusing).
  // The save point for the next turn: after the whole prompt when nothing
  // trails the conversation (a reply re-renders starting with the generation
  // prompt's tags; the next turn checks the ids), else at the end of the
  // unchanged prefix (SPEC section 5).
  GenerationSession& gen = session_.generation();
  const GenerationCounters before = gen.counters();
  const size_t point = prompt.trailing_notes ? prompt.prefix_ids : ids.size();
  const std::span<const int32_t> all = as_ids(ids, 0, ids.size());
  size_t reused = 0;
  if (options_.reuse_state) {
    reused = session_.prefill_reusing(all, point, progress);
  } else {
    session_.reset();
    session_.prefill(all, progress);
  }
  report.reused_ids = static_cast<int64_t>(reused);
  report.prefilled_ids = static_cast<int64_t>(ids.size() - reused);
  if (options_.keep_first_rows) report.first_row = gen.current_row();

  ReplyParser parser(tok_.vocab(), request.thinking);
  std::vector<TokenId> generated;
  std::vector<ReplyPiece> pieces;
  session_.generate(
      options_.max_tokens,
      [&](int32_t id) {
        generated.push_back(static_cast<TokenId>(id));
        pieces.clear();
        parser.push(static_cast<TokenId>(id), pieces);
        if (!pieces.empty()) on_pieces(pieces);
      },
      [&] {
        if (interrupted && interrupted()) report.interrupted = true;
        // A closed message needs no stop id: its re-rendering ends with <|end_of_msg|>.
        return report.interrupted || parser.done();
      });
  pieces.clear();
  report.reply = parser.finish(pieces);
  if (!pieces.empty()) on_pieces(pieces);

  messages_.push_back(user_message(user_text));
  messages_.push_back(chat_message_json(report.reply.message));
  const GenerationCounters& after = gen.counters();
  report.generated = after.generated - before.generated;
  report.passes = after.generate_passes - before.generate_passes;
  report.drafts_proposed = after.drafts_proposed - before.drafts_proposed;
  report.drafts_accepted = after.drafts_accepted - before.drafts_accepted;
  report.prefill_seconds = after.prefill_seconds - before.prefill_seconds;
  report.decode_seconds = after.decode_seconds - before.decode_seconds;
  return report;
}

}  // namespace k3
