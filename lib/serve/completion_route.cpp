#include "serve/completion_route.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>

#include "chat/xtml_renderer.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "serve/api_error.h"
#include "serve/client_connection.h"
#include "serve/json_build.h"
#include "serve/openai_response.h"
#include "serve/request_log.h"
#include "serve/slot_scheduler.h"
#include "serve/structured_output.h"
#include "tokenizer/tokenizer.h"

namespace k3::serve {

std::string new_response_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%llx%04llx", prefix, static_cast<unsigned long long>(now),
                static_cast<unsigned long long>(++counter & 0xffff));
  return buf;
}

namespace {

constexpr std::chrono::milliseconds kPoll{100};

// "request: messages[1].role: ..." (lib/chat's refusals) -> ApiError(400) with the field as param.
[[noreturn]] void refuse_chat(const Error& e) {
  std::string message = e.message();
  if (message.rfind("request: ", 0) == 0) message.erase(0, 9);
  const size_t colon = message.find(": ");
  throw ApiError(400, message, colon == std::string::npos ? "" : message.substr(0, colon));
}

std::vector<int32_t> prompt_ids(const ParsedRequest& pr, const Tokenizer& tok, ChatPrompt* chat) {
  std::vector<int32_t> ids;
  if (pr.endpoint == Endpoint::kChat) {
    try {
      *chat = encode_chat(tok, render_chat(*pr.chat));
    } catch (const Error& e) {
      refuse_chat(e);
    }
    ids.assign(chat->ids.begin(), chat->ids.end());
    return ids;
  }
  if (pr.prompt_is_ids) {
    const int64_t vocab = tok.vocab().size();
    for (size_t i = 0; i < pr.prompt_ids.size(); ++i)
      if (pr.prompt_ids[i] >= vocab)
        throw ApiError(400,
                       "prompt[" + std::to_string(i) + "]: id " + std::to_string(pr.prompt_ids[i]) +
                           " is outside the vocabulary (0.." + std::to_string(vocab - 1) + ")",
                       "prompt");
    return pr.prompt_ids;
  }
  const std::vector<TokenId> t = tok.encode(pr.prompt_text);
  return {t.begin(), t.end()};
}

}  // namespace

PreparedJob prepare_job(const ParsedRequest& pr, const ServerOptions& options, const ServeBackend& backend) {
  PreparedJob out;
  ChatPrompt chat;
  out.spec.prompt = prompt_ids(pr, *backend.tokenizer, &chat);
  if (pr.endpoint == Endpoint::kChat) {
    // The part the conversation's next request starts with (SPEC section 5):
    // without trailing notes the whole prompt, since a reply re-renders
    // starting with the generation prompt's tags.
    out.spec.keep_prefix = chat.trailing_notes ? chat.prefix_ids : chat.ids.size();
    out.spec.stop = StopConditions(backend.eos_ids, backend.chat_stop_ids, false);
    out.thinking = pr.chat->thinking;
    out.spec.constraint = request_constraint(*pr.chat, *backend.tokenizer, out.spec.stop.ids());
  } else {
    out.spec.stop = StopConditions(backend.eos_ids, {}, false);
  }
  const int64_t n = static_cast<int64_t>(out.spec.prompt.size());
  if (n == 0) throw ApiError(400, "prompt: no ids to evaluate", "prompt");
  const int64_t room = options.context - n;
  if (room < 1)
    throw ApiError(400,
                   "the prompt has " + std::to_string(n) + " ids: over the context of " +
                       std::to_string(options.context) + " positions (start k3-serve with a larger --ctx)",
                   pr.endpoint == Endpoint::kChat ? "messages" : "prompt", "context_length_exceeded");
  if (pr.max_tokens && *pr.max_tokens > room)
    throw ApiError(400,
                   "max_tokens: " + std::to_string(*pr.max_tokens) + " is more than the " + std::to_string(room) +
                       " positions left after the prompt's " + std::to_string(n) + " ids in the context of " +
                       std::to_string(options.context) + ": ask for at most " + std::to_string(room) +
                       ", or start k3-serve with a larger --ctx",
                   "max_tokens", "context_length_exceeded");
  out.spec.max_new = pr.max_tokens ? *pr.max_tokens : room;
  out.spec.sampling = pr.sampling;
  return out;
}

std::shared_ptr<Job> submit_job(JobSpec spec, const ServerOptions& options, const ServeBackend& backend,
                                httplib::Response& res) {
  std::shared_ptr<Job> job = backend.scheduler->submit(std::move(spec));
  if (job) {
    request_log::attach(job);  // its ids and times go into the request's log line and /metrics
    return job;
  }
  if (backend.scheduler->stopping()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
  res.set_header("Retry-After", std::to_string(options.retry_after_seconds));
  throw ApiError(
      429,
      "every slot is busy and the queue is full: retry after " + std::to_string(options.retry_after_seconds) + " s", "",
      "queue_full");
}

namespace {

// What a streamed reply carries from one provider call to the next.
struct Stream {
  std::shared_ptr<Job> job;
  ReplyWriter writer;
  Usage usage;
  bool began = false, finished = false;
  int64_t prefill_sent = -1;  // the prompt ids done the last progress comment said
};

// While the prompt is evaluated: an SSE comment ": prefill DONE/TOTAL" (prompt
// ids evaluated or continued from a kept state, of the prompt's ids) whenever
// that changed, and always "TOTAL/TOTAL" before the first token. Clients
// ignore comment lines; a chat page shows them as progress.
std::string prefill_note(Stream& s) {
  const auto [done, total] = s.job->prefill();
  if (total == 0 || done == s.prefill_sent) return "";
  s.prefill_sent = done;
  return ": prefill " + std::to_string(done) + "/" + std::to_string(total) + "\n\n";
}

std::vector<std::string> take(Stream& s, std::chrono::milliseconds timeout) {
  std::vector<std::string> out;
  std::vector<int32_t> ids;
  const bool done = s.job->wait(ids, timeout);
  for (int32_t id : ids) {
    if (s.writer.stop_string_matched()) break;
    ++s.usage.completion_tokens;
    for (std::string& c : s.writer.push(id, s.job->spec().stop.stops(id))) out.push_back(std::move(c));
    if (s.writer.stop_string_matched()) s.job->cancel();
  }
  if (done && !s.job->error().empty()) {  // failed: no finish_reason, the route sends the error
    s.finished = true;
    return out;
  }
  if (done) {
    s.usage.cached_tokens = s.job->cached_tokens();
    const EndReason why = s.writer.stop_string_matched() ? EndReason::kStop : s.job->end_reason();
    for (std::string& c : s.writer.finish(why, s.usage)) out.push_back(std::move(c));
    s.finished = true;
  }
  return out;
}

// /tokenize takes either body: a top-level "messages" member makes it a chat
// request (a "messages" anywhere else, a prompt's text included, does not).
Endpoint tokenize_endpoint(std::string_view body, int max_depth) {
  JsonValue v;
  std::string error;
  const bool chat = json_depth(body, max_depth) <= max_depth && parse_json(body, v, error) && v.is_object() &&
                    v.find("messages") != nullptr;
  return chat ? Endpoint::kChat : Endpoint::kCompletion;  // a refusal is parse_openai_request's to name
}

}  // namespace

void handle_completion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint,
                       const ServerOptions& options, const ServeBackend& backend) {
  RequestLimits limits{options.max_depth, options.context, options.model_name, options.thinking, options.effort};
  const ParsedRequest pr = parse_openai_request(req.body, endpoint, limits);
  PreparedJob p = prepare_job(pr, options, backend);
  const int64_t prompt_tokens = static_cast<int64_t>(p.spec.prompt.size());
  std::shared_ptr<Job> job = submit_job(std::move(p.spec), options, backend, res);
  const bool chat = endpoint == Endpoint::kChat;
  ResponseMeta meta{new_response_id(chat ? "chatcmpl-" : "cmpl-"), static_cast<int64_t>(std::time(nullptr)),
                    options.model_name};
  auto stream = std::make_shared<Stream>(Stream{
      job, ReplyWriter(endpoint, backend.tokenizer->vocab(), p.thinking, pr.stop, meta, pr.stream && pr.include_usage),
      Usage{prompt_tokens, 0, 0}});
  if (!pr.stream) {
    while (!stream->finished) {
      take(*stream, kPoll);
      if (client_gone()) job->cancel();  // its slot frees at the next pass, as a stream's does
    }
    if (job->shut_out()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
    if (const std::string error = job->error(); !error.empty())
      throw ApiError(500, "the prompt could not be evaluated: " + error, "", "engine_error");
    res.set_content(stream->writer.body(stream->usage), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream](size_t, httplib::DataSink& sink) {
        std::vector<std::string> out;
        if (!stream->began) {
          out = stream->writer.start();
          stream->began = true;
        }
        std::vector<std::string> fresh = take(*stream, kPoll);
        if (std::string note = prefill_note(*stream); !note.empty()) out.push_back(std::move(note));
        for (std::string& c : fresh) out.push_back(std::move(c));
        if (stream->finished && !stream->job->error().empty()) {  // the headers are sent: the error is an event
          out.push_back(sse_event(stream->job->shut_out()
                                      ? error_body(503, "the server is shutting down", "", "shutting_down")
                                      : error_body(500, "generation failed: " + stream->job->error())));
          out.push_back(sse_done());
        }
        for (const std::string& c : out)
          if (!sink.write(c.data(), c.size())) {  // the client is gone: its slot frees at the next pass
            stream->job->cancel();
            return false;
          }
        if (stream->finished) sink.done();
        return true;
      },
      [stream](bool success) {
        if (!success) stream->job->cancel();
      });
}

void handle_tokenize(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                     const ServeBackend& backend) {
  RequestLimits limits{options.max_depth, options.context, options.model_name, options.thinking, options.effort};
  const ParsedRequest pr = parse_openai_request(req.body, tokenize_endpoint(req.body, options.max_depth), limits);
  ChatPrompt rendered;
  const std::vector<int32_t> ids = prompt_ids(pr, *backend.tokenizer, &rendered);
  // Written as they come: a JsonValue per id (a 7 MB prompt has millions)
  // cost more time and memory than tokenizing.
  JsonWriter w;
  w.begin_object();
  w.key("count").value(static_cast<int64_t>(ids.size()));
  w.key("max_model_len").value(options.context);
  w.key("tokens").begin_array();
  for (int32_t id : ids) w.value(static_cast<int64_t>(id));
  w.end_array().end_object();
  res.set_content(w.take(), "application/json");
}

}  // namespace k3::serve
