#include "serve/messages_route.h"

#include <chrono>
#include <memory>

#include "common/error.h"
#include "serve/anthropic_request.h"
#include "serve/anthropic_response.h"
#include "serve/api_error.h"
#include "serve/client_connection.h"
#include "serve/completion_route.h"
#include "serve/json_build.h"
#include "serve/slot_scheduler.h"
#include "serve/streamed_reply.h"
#include "tokenizer/tokenizer.h"

namespace k3::serve {

namespace {

constexpr std::chrono::milliseconds kPoll{100};

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(anthropic_error_body(status, message), "application/json");
}

// A message's ids and their events; streamed, a StreamedReply.
struct MessageStream final : StreamedReply {
  std::shared_ptr<Job> job;
  MessageWriter writer;
  Usage usage;
  bool done = false;

  MessageStream(std::shared_ptr<Job> j, MessageWriter w, Usage u) : job(std::move(j)), writer(std::move(w)), usage(u) {}

  std::vector<std::string> take(std::chrono::milliseconds timeout) {
    std::vector<std::string> out;
    std::vector<int32_t> ids;
    const bool ended = job->wait(ids, timeout);
    for (int32_t id : ids) {
      if (writer.stop_sequence_matched()) break;
      ++usage.completion_tokens;
      for (std::string& e : writer.push(id)) out.push_back(std::move(e));
      if (writer.stop_sequence_matched()) job->cancel();
    }
    if (ended) {
      done = true;
      if (!job->error().empty()) return out;  // failed: no message_delta, the error is sent instead
      usage.cached_tokens = job->cached_tokens();
      const EndReason why = writer.stop_sequence_matched() ? EndReason::kStop : job->end_reason();
      for (std::string& e : writer.finish(why, usage)) out.push_back(std::move(e));
    }
    return out;
  }
  // The usage known at the start: every prompt id to evaluate; message_delta has the final one.
  std::vector<std::string> start() override { return writer.start(usage); }
  std::vector<std::string> take() override { return take(kPoll); }
  const Job& lead() const override { return *job; }
  bool finished() const override { return done; }
  const Job* failed() const override { return done && !job->error().empty() ? job.get() : nullptr; }
  std::vector<std::string> failure(const Job& failed) override {
    return {sse_named_event("error", anthropic_error_json(500, "generation failed: " + failed.error()))};
  }
  std::vector<std::string> close() override { return {}; }  // message_delta and message_stop came with the last ids
  void cancel() override { job->cancel(); }
};

ParsedRequest parse(const httplib::Request& req, MessagesEndpoint endpoint, const ServerOptions& options) {
  check_anthropic_version(req.get_header_value("anthropic-version"));
  return parse_anthropic_request(
      req.body, endpoint,
      RequestLimits{options.max_depth, options.context, options.model_name, options.thinking, options.effort});
}

void handle_messages(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                     const ServeBackend& backend) {
  const ParsedRequest pr = parse(req, MessagesEndpoint::kCreate, options);
  PreparedJob p = prepare_job(pr, options, backend);
  const int64_t prompt_tokens = static_cast<int64_t>(p.spec.prompt.size());
  std::shared_ptr<Job> job = submit_job(std::move(p.spec), options, backend, res);
  auto stream = std::make_shared<MessageStream>(
      job, MessageWriter(backend.tokenizer->vocab(), p.thinking, pr.stop, new_response_id("msg_"), options.model_name),
      Usage{prompt_tokens, 0, 0});
  if (!pr.stream) {
    while (!stream->finished()) {
      stream->take(kPoll);
      if (client_gone()) job->cancel();  // its slot frees at the next pass, as a stream's does
    }
    if (job->shut_out()) throw ApiError(503, "the server is shutting down", "", "shutting_down");
    if (const std::string error = job->error(); !error.empty())
      throw ApiError(500, "the prompt could not be evaluated: " + error);
    res.set_content(stream->writer.body(stream->usage), "application/json");
    return;
  }
  stream_reply(res, stream);
}

void handle_count_tokens(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                         const ServeBackend& backend) {
  const ParsedRequest pr = parse(req, MessagesEndpoint::kCountTokens, options);
  const PreparedJob p = prepare_job(pr, options, backend);
  JsonValue out = JsonValue::object();
  out.set("input_tokens", json_int(static_cast<int64_t>(p.spec.prompt.size())));
  res.set_content(write_json(out), "application/json");
}

}  // namespace

bool is_messages_path(std::string_view path) { return path == "/v1/messages" || path.rfind("/v1/messages/", 0) == 0; }

void add_messages_routes(httplib::Server& server, const std::atomic<bool>& ready, const ServerOptions& options,
                         const ServeBackend& backend) {
  // The server outlives its routes: they hold its readiness, options and backend by address.
  const std::atomic<bool>* is_ready = &ready;
  const ServerOptions* opts = &options;
  const ServeBackend* back = &backend;
  auto route = [is_ready, opts, back](auto handler) {
    return [is_ready, opts, back, handler](const httplib::Request& req, httplib::Response& res) {
      if (!*is_ready) {
        res.set_header("Retry-After", "5");
        send_error(res, 503, "the model is still loading (GET /health says when it is ready)");
        return;
      }
      run_guarded([&] { handler(req, res, *opts, *back); },
                  [&](const ApiError& e) { send_error(res, e.status(), e.message()); });  // Anthropic's shape
    };
  };
  server.Post("/v1/messages", route(handle_messages));
  server.Post("/v1/messages/count_tokens", route(handle_count_tokens));
}

}  // namespace k3::serve
