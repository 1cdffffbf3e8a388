// POST /v1/chat/completions and POST /v1/completions: a request body ->
// prompt ids (the chat rendered as SPEC section 5 says) -> a Job on the
// scheduler -> the reply, streamed as SSE chunks or as one JSON body.
#pragma once

#include <httplib.h>

#include "serve/http_server.h"
#include "serve/openai_request.h"
#include "serve/slot_scheduler.h"

namespace k3::serve {

class Job;

// A chat or completion request made ready for the scheduler: its prompt ids
// (a chat rendered as SPEC section 5 says), the kept prefix, stop ids, the
// token limit checked against the context. Shared by every route that
// generates (Chat Completions, Anthropic's Messages).
struct PreparedJob {
  JobSpec spec;
  bool thinking = false;  // the chat prompt opened the think channel
};
PreparedJob prepare_job(const ParsedRequest& request, const ServerOptions& options, const ServeBackend& backend);

// Queues the job; when the queue is full, ApiError 429 with Retry-After set
// on `res` (503 when the server is stopping).
std::shared_ptr<Job> submit_job(JobSpec spec, const ServerOptions& options, const ServeBackend& backend,
                                httplib::Response& res);

// "PREFIX" followed by the time and a counter: unique within the server's run.
std::string new_response_id(const char* prefix);

void handle_completion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint,
                       const ServerOptions& options, const ServeBackend& backend);

// POST /tokenize: {"messages": [...], ...} -> {"tokens": [...], "count": N,
// "max_model_len": context}; {"prompt": "text"} tokenizes text.
void handle_tokenize(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                     const ServeBackend& backend);

}  // namespace k3::serve
