// The body of POST /v1/chat/completions and POST /v1/completions, read into
// what the scheduler needs. Every refusal is an ApiError (400, or 404 for an
// unknown model) whose message starts with the field, e.g.
// "max_tokens: must be an integer from 1 to 8192 (found -3)"; nothing in a
// request names a file the server reads or writes.
//
// Fields served (README-level list in docs/serve.md):
//   chat: messages (system, developer = system, user, assistant, tool;
//     content strings or text parts), tools, tool_choice, response_format,
//     chat_template_kwargs {thinking, thinking_effort}, reasoning_effort
//   completions: prompt (a string, an array of token ids, or a one-element
//     array holding either)
//   both: model, max_tokens / max_completion_tokens, the sampler's settings
//     under their API names (temperature, top_p, top_k, min_p,
//     repetition_penalty, frequency_penalty, presence_penalty, repeat_last_n:
//     each checked by its one rule in sampling/sampling_settings.h, the rule
//     the k3-forward flags obey), seed, stop (a string or up to 4),
//     stream, stream_options.include_usage, n (1 to 16), logit_bias
//   chat: logprobs (true/false), top_logprobs (0 to 20)
//   completions: logprobs (0 to 20: the top ids reported)
// Fields that change nothing here (user, metadata, store, echo false) are
// accepted; any other field, and the values K3 cannot honour (echo,
// non-text content parts), are refused with the field's name
// (docs/serve.md's table of request fields).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_request.h"
#include "common/json_depth.h"  // json_depth: checked before a body is parsed
#include "sampling/sampler.h"

namespace k3::serve {

enum class Endpoint { kChat, kCompletion };

struct RequestLimits {
  int max_depth = 64;      // nesting of arrays and objects
  int64_t context = 8192;  // positions a sequence may reach
  std::string model_name;  // the one model served
  // What a chat request that names neither reasoning_effort nor
  // chat_template_kwargs gets (k3-serve --thinking, --effort).
  bool thinking = true;
  std::string effort = "max";  // "": no effort note
};

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::optional<ChatRequest> chat;  // kChat
  std::string prompt_text;          // kCompletion with a text prompt
  std::vector<int32_t> prompt_ids;  // kCompletion with an id prompt
  bool prompt_is_ids = false;
  SamplingParams sampling;            // greedy unless temperature > 0
  std::optional<int64_t> max_tokens;  // nullopt: up to the context
  std::vector<std::string> stop;      // stop strings
  bool stream = false;
  bool include_usage = false;
  // Choices generated (n); choice i samples with seed + i (docs/serve.md).
  int n = 1;
  // Per generated id: its logprob and the `logprobs` most likely ids'; -1: none.
  int logprobs = -1;
};

constexpr int kMaxChoices = 16;      // n
constexpr int kMaxTopLogprobs = 20;  // top_logprobs (chat), logprobs (completions)
constexpr size_t kMaxLogitBiases = 1024;

ParsedRequest parse_openai_request(std::string_view body, Endpoint endpoint, const RequestLimits& limits);

}  // namespace k3::serve
