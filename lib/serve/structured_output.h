// Structured output in k3-serve: the constraint of a chat request
// (chat/reply_constraint.h) made with the one vocabulary trie the server
// builds, the first time a request asks for one. Routes other than
// /v1/chat/completions (Anthropic's forced tool_choice, the Responses API)
// make theirs through the same ReplyConstraints (reply_constraints()).
#pragma once

#include <memory>
#include <vector>

#include "chat/chat_request.h"
#include "chat/reply_constraint.h"
#include "constrain/output_constraint.h"
#include "tokenizer/tokenizer.h"

namespace k3::serve {

// The server's ReplyConstraints for `tok` (built once, thread-safe).
const ReplyConstraints& reply_constraints(const Tokenizer& tok);

// The constraint `request` asks for (nullptr: none). A schema or tool it
// cannot enforce is an ApiError(400) naming the field and the keyword.
std::shared_ptr<OutputConstraint> request_constraint(const ChatRequest& request, const Tokenizer& tok,
                                                     const std::vector<int32_t>& stop_ids);

}  // namespace k3::serve
