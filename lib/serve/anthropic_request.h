// The body of POST /v1/messages and POST /v1/messages/count_tokens
// (Anthropic's Messages API), read into the ParsedRequest the chat route's
// scheduler path takes: the conversation through anthropic_messages.h, the
// rest here. Every refusal is an ApiError (400, or 404 for an unknown model)
// whose message starts with the field; a top-level field not listed below is
// refused by name (fail closed), never ignored.
//
//   model, messages, system, tools, tool_choice      (both)
//   thinking {type: enabled, budget_tokens} | {type: adaptive} | {type: disabled}
//   output_config {effort}                           (both)
//   cache_control {type: ephemeral}                  (both; a hint k3 needs not)
//   max_tokens (required), stop_sequences, temperature (0..1), top_p, top_k,
//   metadata {user_id}, stream                       (messages only)
//
// Thinking maps onto K3's thinking and effort (SPEC section 5): disabled ->
// thinking off; enabled -> on, the effort from budget_tokens (under 4096
// low, under 16384 high, else max); adaptive or absent -> on at the default
// effort (max), as /v1/chat/completions; output_config.effort (low; medium
// and high -> high; xhigh and max -> max) sets the effort whatever the type.
// Sampling is greedy unless temperature > 0, as on every k3-serve route.
#pragma once

#include <string>
#include <string_view>

#include "serve/openai_request.h"

namespace k3::serve {

enum class MessagesEndpoint { kCreate, kCountTokens };

ParsedRequest parse_anthropic_request(std::string_view body, MessagesEndpoint endpoint, const RequestLimits& limits);

// The anthropic-version header ("" when absent): absent, or a date from
// 2023-06-01 (whose shapes are served) on; an older or malformed one is
// refused (400).
void check_anthropic_version(const std::string& version);

}  // namespace k3::serve
