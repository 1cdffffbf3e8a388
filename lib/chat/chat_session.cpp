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

}  // namespace

JsonValue text_message(const std::string& role, const std::string& content) {
  JsonValue m = JsonValue::object();
  m.set("role", JsonValue::string(role));
  m.set("content", JsonValue::string(content));
  return m;
}

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
  if (user_text) messages.items.push_back(input_message(*user_text));
  request.set("messages", std::move(messages));
  JsonValue thinking;
  thinking.kind = JsonValue::Kind::kBool;
  thinking.boolean = options_.thinking;
  request.set("thinking", thinking);
  request.set("thinking_effort", options_.effort ? JsonValue::string(*options_.effort) : JsonValue());
  if (options_.tools) request.set("tools", *options_.tools);
  if (options_.response_schema) {
    JsonValue format = JsonValue::object();
    format.set("type", "json_schema");
    JsonValue js = JsonValue::object();
    js.set("name", "answer");
    js.set("strict", JsonValue(true));
    js.set("schema", *options_.response_schema);
    format.set("json_schema", std::move(js));
    request.set("response_format", std::move(format));
  }
  return parse_chat_request(request);
}

JsonValue ChatSession::input_message(const std::string& text) const {
  // The last assistant message and the tool results after it.
  size_t answered = 0;
  for (size_t i = messages_.size(); i > 0; --i) {
    const JsonValue& m = messages_[i - 1];
    const JsonValue* role = m.find("role");
    if (!role || !role->is_string()) break;
    if (role->text == "tool") {
      ++answered;
      continue;
    }
    if (role->text != "assistant") break;
    const JsonValue* calls = m.find("tool_calls");
    if (!calls || !calls->is_array() || answered >= calls->items.size()) break;
    const JsonValue* id = calls->items[answered].find("id");
    JsonValue t = JsonValue::object();
    t.set("role", JsonValue::string("tool"));
    if (id && id->is_string()) t.set("tool_call_id", *id);
    const JsonValue* fn = calls->items[answered].find("function");
    const JsonValue* name = fn ? fn->find("name") : nullptr;
    if (name && name->is_string()) t.set("name", *name);
    t.set("content", JsonValue::string(text));
    return t;
  }
  return text_message("user", text);
}

void ChatSession::set_messages(std::vector<JsonValue> messages) {
  std::swap(messages_, messages);
  try {
    const RenderedChat rendered = render_chat(request_with(std::nullopt));  // refuses what a request would refuse
    if (options_.context) {
      const size_t n = encode_chat(tok_, rendered).ids.size();
      if (n >= options_.context)
        throw Error(ExitCode::kResource, "the conversation is " + std::to_string(n) +
                                             " ids, and the planned context of " + std::to_string(options_.context) +
                                             " positions (--ctx) leaves no room for a reply: raise --ctx or start a "
                                             "new conversation");
    }
  } catch (...) {
    std::swap(messages_, messages);
    throw;
  }
}

void ChatSession::reset(std::vector<JsonValue> keep) {
  set_messages(std::move(keep));
  session_.reset();  // another conversation: nothing of the model state carries over
}

std::vector<int32_t> ChatSession::next_prompt_start() const {
  // Two different next messages share everything before their text.
  const std::vector<TokenId> a = prompt_ids("a"), b = prompt_ids("b");
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return std::vector<int32_t>(a.begin(), a.begin() + static_cast<ptrdiff_t>(n));
}

std::vector<TokenId> ChatSession::prompt_ids(const std::string& user_text) const {
  return encode_chat(tok_, render_chat(request_with(user_text))).ids;
}

namespace {

// Evaluates only what the model has not seen (Session::prefill_reusing).
// The save point for the next turn: after the whole prompt when nothing
// trails the conversation (a reply re-renders starting with the generation
// prompt's tags; the next turn checks the ids), else at the end of the
// unchanged prefix (SPEC section 5).
void prefill_prompt(Session& session, bool reuse_state, const ChatPrompt& prompt, const Session::Progress& progress,
                    TurnReport& report) {
  const std::vector<TokenId>& ids = prompt.ids;
  const size_t point = prompt.trailing_notes ? prompt.prefix_ids : ids.size();
  const std::span<const int32_t> all = as_ids(ids, 0, ids.size());
  size_t reused = 0;
  if (reuse_state) {
    reused = session.prefill_reusing(all, point, progress);
  } else {
    session.reset();
    session.prefill(all, progress);
  }
  report.reused_ids = static_cast<int64_t>(reused);
  report.prefilled_ids = static_cast<int64_t>(ids.size() - reused);
}

// The turn's share of the session's counters.
void count_turn(const GenerationCounters& before, const GenerationCounters& after, TurnReport& report) {
  report.generated = after.generated - before.generated;
  report.passes = after.generate_passes - before.generate_passes;
  report.drafts_proposed = after.drafts_proposed - before.drafts_proposed;
  report.drafts_accepted = after.drafts_accepted - before.drafts_accepted;
  report.prefill_seconds = after.prefill_seconds - before.prefill_seconds;
  report.decode_seconds = after.decode_seconds - before.decode_seconds;
}

}  // namespace

TurnReport ChatSession::reply(const std::string& user_text,
                              const std::function<void(const std::vector<ReplyPiece>&)>& on_pieces,
                              const std::function<bool()>& interrupted, const Session::Progress& progress) {
  const ChatRequest request = request_with(user_text);
  const ChatPrompt prompt = encode_chat(tok_, render_chat(request));
  const std::vector<TokenId>& ids = prompt.ids;
  TurnReport report;
  report.prompt_ids = static_cast<int64_t>(ids.size());
  // Positions past the planned context are memory the plan does not hold
  // (55 kB of MLA cache each at K3 size): refused before anything is evaluated.
  if (options_.context && ids.size() >= options_.context)
    throw Error(ExitCode::kBadInput, "with it the conversation is " + std::to_string(ids.size()) +
                                         " ids, and the planned context of " + std::to_string(options_.context) +
                                         " positions (--ctx) leaves no room for a reply: send a shorter message, "
                                         "/reset, or raise --ctx");
  const int64_t room = options_.context ? static_cast<int64_t>(options_.context - ids.size()) : options_.max_tokens;

  const GenerationCounters before = session_.counters();
  prefill_prompt(session_, options_.reuse_state, prompt, progress, report);
  if (options_.keep_first_rows) report.first_row = session_.current_row();

  ReplyParser parser(tok_.vocab(), request.thinking);
  std::unique_ptr<OutputConstraint> constraint;
  if (options_.response_schema) {
    if (!constraints_) constraints_ = std::make_unique<ReplyConstraints>(tok_);
    constraint = constraints_->for_request(request, session_.stop_conditions().ids());
  }
  session_.set_constraint(constraint.get());
  struct Unset {
    Session& s;
    ~Unset() { s.set_constraint(nullptr); }
  } unset{session_};
  std::vector<TokenId> generated;
  std::vector<ReplyPiece> pieces;
  const GenerationEnd end = session_.generate(
      std::min(options_.max_tokens, room),
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
  // A pass cut within a layer (Session::set_stop_within_pass) ends here without asking again.
  if (end == GenerationEnd::kInterrupted && interrupted && interrupted()) report.interrupted = true;
  pieces.clear();
  report.reply = parser.finish(pieces);
  if (!pieces.empty()) on_pieces(pieces);

  // Stopped by Ctrl-C: the conversation is as before this turn.
  if (!report.interrupted) {
    messages_.push_back(input_message(user_text));
    messages_.push_back(chat_message_json(report.reply.message));
  }
  count_turn(before, session_.counters(), report);
  return report;
}

}  // namespace k3
