#include "serve/completion_route.h"

#include <algorithm>
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
#include "serve/streamed_reply.h"
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

// logit_bias's ids against the vocabulary: a 400 naming every id outside it.
void check_logit_bias_ids(const std::vector<LogitBias>& biases, int64_t vocab) {
  std::string outside;
  for (const LogitBias& b : biases)
    if (b.id >= vocab) outside += (outside.empty() ? "" : ", ") + std::to_string(b.id);
  if (!outside.empty())
    throw ApiError(400,
                   "logit_bias: ids " + outside + " are outside the vocabulary (0.." + std::to_string(vocab - 1) + ")",
                   "logit_bias");
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
    // And where the system prompt and tool list end: the part a new conversation starts with.
    if (options.system_keep_min > 0 && chat.system_ids >= options.system_keep_min)
      out.spec.system_prefix = chat.system_ids;
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
  out.spec.logprobs = pr.logprobs;
  check_logit_bias_ids(pr.sampling.logit_bias, static_cast<int64_t>(backend.tokenizer->vocab().size()));
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

// One choice of a reply (n > 1: several, each its own job on the scheduler).
struct Choice {
  std::shared_ptr<Job> job;
  ReplyWriter writer;
  int64_t made = 0;  // ids taken
  bool finished = false;
};

std::vector<std::string> take(Choice& c, std::chrono::milliseconds timeout) {
  std::vector<std::string> out;
  std::vector<int32_t> ids;
  const bool done = c.job->wait(ids, timeout);
  const std::vector<PositionLogprobs> logprobs =
      c.job->spec().logprobs >= 0 ? c.job->take_logprobs() : std::vector<PositionLogprobs>{};
  for (size_t i = 0; i < ids.size(); ++i) {
    if (c.writer.stop_string_matched()) break;
    ++c.made;
    if (i < logprobs.size()) c.writer.add_logprobs(logprobs[i]);
    for (std::string& chunk : c.writer.push(ids[i], c.job->spec().stop.stops(ids[i]))) out.push_back(std::move(chunk));
    if (c.writer.stop_string_matched()) c.job->cancel();
  }
  if (done && !c.job->error().empty()) {  // failed: no finish_reason, the route sends the error
    c.finished = true;
    return out;
  }
  if (done) {
    const EndReason why = c.writer.stop_string_matched() ? EndReason::kStop : c.job->end_reason();
    for (std::string& chunk : c.writer.finish_choice(why)) out.push_back(std::move(chunk));
    c.finished = true;
  }
  return out;
}

// A reply's choices and their chunks (streamed_reply.h).
struct Stream final : StreamedReply {
  std::vector<Choice> choices;
  int64_t prompt_tokens = 0;

  bool finished() const override {
    return std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.finished; });
  }
  const Job* failed() const override {
    for (const Choice& c : choices)
      if (c.finished && !c.job->error().empty()) return c.job.get();
    return nullptr;
  }
  void cancel() override {
    for (Choice& c : choices) c.job->cancel();
  }
  // The prompt counted once, the ids of every choice (OpenAI's usage for n > 1).
  Usage usage() const {
    Usage u{prompt_tokens, 0, choices.front().job->cached_tokens()};
    for (const Choice& c : choices) u.completion_tokens += c.made;
    return u;
  }
  std::vector<std::string> start() override {
    std::vector<std::string> out;
    for (Choice& c : choices)
      for (std::string& chunk : c.writer.start()) out.push_back(std::move(chunk));
    return out;
  }
  // Every unfinished choice's new chunks: the first waits up to kPoll, the
  // others give what they have.
  std::vector<std::string> take() override {
    std::vector<std::string> out;
    bool waited = false;
    for (Choice& c : choices) {
      if (c.finished) continue;
      for (std::string& chunk : serve::take(c, waited ? std::chrono::milliseconds(0) : kPoll))
        out.push_back(std::move(chunk));
      waited = true;
    }
    return out;
  }
  const Job& lead() const override { return *choices.front().job; }
  std::vector<std::string> failure(const Job& job) override {
    return {sse_event(job.shut_out() ? error_body(503, "the server is shutting down", "", "shutting_down")
                                     : error_body(500, "generation failed: " + job.error())),
            sse_done()};
  }
  std::vector<std::string> close() override { return choices.front().writer.close(usage()); }
};

// The request's n jobs: choice i samples with seed + i (docs/serve.md), so
// it is the n = 1 request with that seed. All or none are queued.
std::vector<std::shared_ptr<Job>> submit_choices(const PreparedJob& p, int n, const ServerOptions& options,
                                                 const ServeBackend& backend, httplib::Response& res) {
  std::vector<std::shared_ptr<Job>> jobs;
  try {
    for (int i = 0; i < n; ++i) {
      JobSpec spec = p.spec;
      spec.sampling.seed += static_cast<uint64_t>(i);
      jobs.push_back(submit_job(std::move(spec), options, backend, res));
    }
  } catch (...) {
    for (const auto& job : jobs) job->cancel();
    throw;
  }
  return jobs;
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
  const PreparedJob p = prepare_job(pr, options, backend);
  const bool chat = endpoint == Endpoint::kChat;
  ResponseMeta meta{new_response_id(chat ? "chatcmpl-" : "cmpl-"), static_cast<int64_t>(std::time(nullptr)),
                    options.model_name};
  meta.logprobs = pr.logprobs >= 0;
  auto stream = std::make_shared<Stream>();
  stream->prompt_tokens = static_cast<int64_t>(p.spec.prompt.size());
  for (std::shared_ptr<Job>& job : submit_choices(p, pr.n, options, backend, res)) {
    meta.choice = static_cast<int64_t>(stream->choices.size());
    stream->choices.push_back(Choice{std::move(job), ReplyWriter(endpoint, backend.tokenizer->vocab(), p.thinking,
                                                                 pr.stop, meta, pr.stream && pr.include_usage)});
  }
  if (!pr.stream) {
    while (!stream->finished()) {
      stream->take();
      if (client_gone() || stream->failed()) stream->cancel();  // the slots free at the next pass, as a stream's do
    }
    if (const Job* failed = stream->failed()) {
      if (failed->shut_out()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
      throw ApiError(500, "the prompt could not be evaluated: " + failed->error(), "", "engine_error");
    }
    std::vector<const ReplyWriter*> writers;
    for (const Choice& c : stream->choices) writers.push_back(&c.writer);
    res.set_content(ReplyWriter::body(writers, stream->usage()), "application/json");
    return;
  }
  stream_reply(res, stream);
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
