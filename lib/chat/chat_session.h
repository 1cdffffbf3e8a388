// Layer chat: conversations (XTML rendering and reply parsing, the chat session and loop).
//
// A conversation with the model in one process: the transcript (OpenAI-style
// messages), the model state, and one reply per turn.
//
// Each turn renders the whole conversation again (SPEC section 5: that is
// what the reference does), but evaluates only what the model has not seen:
//   - when the previous prompt plus the ids the model generated are a prefix
//     of the new prompt (the reply re-renders to the same ids), the state
//     simply goes on from the end of the reply;
//   - otherwise it goes back to a save point taken at the end of the previous
//     prompt's unchanged prefix (SPEC section 5: everything before its
//     trailing notes and generation prompt; without trailing notes the whole
//     previous prompt, as a reply re-renders starting with the generation
//     prompt's tags) and evaluates the re-rendered reply and the new message
//     from there;
//   - a different conversation (after /effort, /think) starts over.
// The logits are bit-identical to one fresh run over the re-rendered prompt
// (the engine computes a token's logits the same way in any batch).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_request.h"
#include "chat/reply_constraint.h"
#include "chat/reply_parser.h"
#include "common/json_value.h"
#include "engine/session.h"
#include "tokenizer/tokenizer.h"

namespace k3 {

struct ChatOptions {
  bool thinking = true;
  std::optional<std::string> effort = std::string("max");  // nullopt: no effort note
  int64_t max_tokens = 4096;                               // per reply
  bool reuse_state = true;       // false: evaluate the whole prompt every turn (for comparison)
  bool keep_first_rows = false;  // keep the logits each reply's first id was drawn from
  // Positions the memory plan holds (k3-chat: --ctx, default 8192); 0: no
  // bound. A conversation never grows past it: a transcript that does not
  // fit with room for one reply id is refused (kResource), a message that
  // would make it not fit is refused (kBadInput, the conversation goes on),
  // and a reply is cut where the context ends.
  uint64_t context = 0;
  std::optional<JsonValue> tools;  // OpenAI tool declarations (k3-chat --tools FILE): a non-empty array
  // k3-chat --json-schema FILE: every answer is one JSON value of this schema
  // (response_format json_schema: the note is rendered, the reply constrained).
  std::optional<JsonValue> response_schema;
};

struct TurnReport {
  int64_t prompt_ids = 0;     // ids of the rendered prompt
  int64_t reused_ids = 0;     // of them, already in the model state
  int64_t prefilled_ids = 0;  // evaluated by this turn's prefill
  double prefill_seconds = 0;
  int64_t generated = 0;
  int64_t passes = 0;           // weight passes of the reply (fewer than ids when drafts were kept)
  int64_t drafts_proposed = 0;  // speculative drafts verified, and of them kept
  int64_t drafts_accepted = 0;
  double decode_seconds = 0;
  bool interrupted = false;
  ParsedReply reply;
  std::vector<float> first_row;  // keep_first_rows
};

// {"role": `role`, "content": `content`}.
JsonValue text_message(const std::string& role, const std::string& content);

// The stop ids of a chat: the model's (config, generation_config.json,
// tokenizer eos_token) and <|end_of_msg|>, which ends every message.
std::vector<int32_t> chat_stop_ids(const Vocabulary& vocab, const std::vector<int>& model_eos_ids);

// Refuses (Error(kBadInput) naming the message and field) a transcript that
// does not render as a request would, without a model.
void check_chat_messages(const std::vector<JsonValue>& messages);

class ChatSession {
 public:
  // `session` (a Session of the model, engine/session.h) must stop at
  // chat_stop_ids(); it holds the model state and the save point.
  ChatSession(const Tokenizer& tok, Session& session, ChatOptions options);

  const std::vector<JsonValue>& messages() const { return messages_; }
  // Replaces the transcript (a resumed history; /undo and /retry going
  // back); checked like a request, and against options().context
  // (Error(kResource) naming both sizes). The model state stays: the next
  // turn evaluates only what it lacks (a transcript cut back finds the
  // session's save point of an earlier turn).
  void set_messages(std::vector<JsonValue> messages);
  // Forgets the transcript (keeping `keep` as its start) and the model state.
  void reset(std::vector<JsonValue> keep = {});
  ChatOptions& options() { return options_; }

  // The message `text` becomes: the result of the first tool call of the
  // last reply that has no answer yet ({"role": "tool", "tool_call_id",
  // "content"}), else a user message.
  JsonValue input_message(const std::string& text) const;

  // The prompt the model would see now, with the given user text appended.
  std::vector<TokenId> prompt_ids(const std::string& user_text) const;
  // The ids every next prompt starts with: the conversation rendered up to
  // where the next message's text would begin (chat_state.h checks a saved
  // state against them).
  std::vector<int32_t> next_prompt_start() const;

  Session& session() { return session_; }
  // One turn: appends the user message, renders and evaluates the prompt,
  // streams the reply's pieces to `on_pieces`, and appends the reply (also
  // a partial one cut by max_tokens) to the transcript. A turn stopped by
  // `interrupted` (Ctrl-C, report.interrupted) or by an exception from
  // `progress` leaves the transcript as it was before it, and the next turn
  // goes on from the model state of the turn before (a save point).
  TurnReport reply(const std::string& user_text, const std::function<void(const std::vector<ReplyPiece>&)>& on_pieces,
                   const std::function<bool()>& interrupted, const Session::Progress& progress = nullptr);

 private:
  ChatRequest request_with(const std::optional<std::string>& user_text) const;

  const Tokenizer& tok_;
  Session& session_;
  ChatOptions options_;
  std::unique_ptr<ReplyConstraints> constraints_;  // made at the first constrained reply
  std::vector<JsonValue> messages_;
};

}  // namespace k3
