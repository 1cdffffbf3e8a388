// Per-token log-probabilities (sampling/logprobs.h) in OpenAI's two shapes.
//
// Chat (choices[i].logprobs): {"content": [{"token", "logprob", "bytes",
// "top_logprobs": [{"token", "logprob", "bytes"}, ...]}, ...], "refusal": null}.
// Completions (choices[i].logprobs): {"tokens": [...], "token_logprobs":
// [...], "top_logprobs": [{token: logprob, ...}, ...], "text_offset": [...]}.
//
// Every generated id is listed, in order: the think channel's, the
// template's tags and the id that ended the generation included, so the
// list is the one k3-forward --logprobs writes for the same ids. A token's
// text is its bytes read as UTF-8 (an incomplete or invalid sequence as
// U+FFFD); "bytes" gives them exactly.
#pragma once

#include <span>

#include "common/json_value.h"
#include "sampling/logprobs.h"
#include "serve/openai_request.h"
#include "tokenizer/vocabulary.h"

namespace k3::serve {

// `text_offset`: the completion's byte offset of the first id (its later
// ones count the ids' bytes from there).
JsonValue logprobs_json(Endpoint endpoint, std::span<const PositionLogprobs> logprobs, const Vocabulary& vocab,
                        int64_t text_offset = 0);

}  // namespace k3::serve
