// POST /v1/messages and POST /v1/messages/count_tokens: Anthropic's
// Messages API, a second front over the chat route's machinery. The body is
// read by anthropic_request.h into the request /v1/chat/completions makes,
// prepared and queued by the same functions (completion_route.h), and the
// ids read back by lib/chat's ReplyParser into Anthropic's shapes
// (anthropic_response.h): the same conversation renders to the same prompt
// ids on both routes, so a greedy reply is the same on both.
//
// Errors are Anthropic's {"type": "error", "error": {"type", "message"}},
// with the HTTP status; once a stream has begun, an "error" event. The key,
// when the server has one, may come as x-api-key (Anthropic's clients) or
// as Authorization: Bearer.
#pragma once

#include <httplib.h>

#include <atomic>
#include <string_view>

#include "serve/http_server.h"

namespace k3::serve {

// The paths whose errors are Anthropic-shaped (/v1/messages and below).
bool is_messages_path(std::string_view path);

// Registers both routes; `ready` is false while the model loads (503).
void add_messages_routes(httplib::Server& server, const std::atomic<bool>& ready, const ServerOptions& options,
                         const ServeBackend& backend);

}  // namespace k3::serve
