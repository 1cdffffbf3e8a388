// POST /v1/chat/completions and POST /v1/completions: a request body ->
// prompt ids (the chat rendered as SPEC section 5 says) -> a Job on the
// scheduler -> the reply, streamed as SSE chunks or as one JSON body.
#pragma once

#include <httplib.h>

#include "serve/http_server.h"
#include "serve/openai_request.h"

namespace k3::serve {

void handle_completion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint,
                       const ServerOptions& options, const ServeBackend& backend);

// POST /tokenize: {"messages": [...], ...} -> {"tokens": [...], "count": N,
// "max_model_len": context}; {"prompt": "text"} tokenizes text.
void handle_tokenize(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                     const ServeBackend& backend);

}  // namespace k3::serve
