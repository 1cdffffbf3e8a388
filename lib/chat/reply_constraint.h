// Structured output for K3's chat replies (SPEC section 5): the constraint
// (constrain/output_constraint.h) a reply is generated under when a request
// asks for JSON or forces a tool call. The library API front ends call
// (k3-serve's /v1/chat/completions and other routes, k3-chat --json-schema).
//
// With thinking on, the thinking section is free text (only markup is kept
// out of it, and the turn may not end there) up to <|close|>; then
// "think<|sep|><|open|>response<|sep|>" follows as one forced sequence. After
// the response's opening:
//   json_answer       the answer is one JSON value of the grammar, then
//                     <|close|>response<|sep|><|close|>message<|sep|> and a stop id
//   forced_tool_call  the answer is empty and the reply holds one call of
//                     one of the tools: <|close|>response<|sep|><|open|>tools<|sep|>
//                     <|open|>call tool="NAME" index="1"<|sep|><|open|>json type="object"<|sep|>
//                     then the arguments, one JSON value of that tool's grammar,
//                     then the closing tags and a stop id. The reply parser reads
//                     the arguments back as the call's JSON text.
//   strict_tool_calls the answer is free text (no markup but its closing);
//                     then either the message closes and a stop id ends it,
//                     or the reply opens its tools section: the first call's
//                     name is one of the tools and its arguments, in the
//                     json form above, one JSON value of that tool's
//                     grammar; after that call the reply is free again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/chat_request.h"
#include "chat/xtml_segments.h"
#include "constrain/json_grammar.h"
#include "constrain/output_constraint.h"
#include "constrain/vocabulary_trie.h"
#include "tokenizer/tokenizer.h"

namespace k3 {

struct ForcedTool {
  std::string name;
  std::shared_ptr<const JsonGrammar> arguments;
};

class ReplyConstraints {
 public:
  // Builds the vocabulary trie once (a fraction of a second at K3 size);
  // `tok` must outlive this object and every constraint it makes.
  explicit ReplyConstraints(const Tokenizer& tok);

  const VocabularyTrie& vocabulary() const { return trie_; }

  std::unique_ptr<OutputConstraint> json_answer(std::shared_ptr<const JsonGrammar> grammar, bool thinking,
                                                const std::vector<int32_t>& stop_ids) const;
  std::unique_ptr<OutputConstraint> forced_tool_call(const std::vector<ForcedTool>& tools, bool thinking,
                                                     const std::vector<int32_t>& stop_ids) const;
  std::unique_ptr<OutputConstraint> strict_tool_calls(const std::vector<ForcedTool>& tools, bool thinking,
                                                      const std::vector<int32_t>& stop_ids) const;

  // What an OpenAI-style request asks for: tool_choice "required" or a named
  // function (the tools' parameters; a strict tool's schema must compile, a
  // tool that is not strict falls back to any JSON object when its schema
  // uses a keyword not enforced), else response_format json_schema or
  // json_object, else, under tool_choice auto (or none given) with a tool
  // declared strict: true, strict_tool_calls over every function tool;
  // nullptr when it asks for none. Throws Error(kBadInput)
  // starting with the field ("response_format.json_schema.schema: json
  // schema: #/...: keyword \"pattern\" is not supported ...").
  std::unique_ptr<OutputConstraint> for_request(const ChatRequest& request, const std::vector<int32_t>& stop_ids) const;
  // Whether for_request makes a constraint for `request` (cheap: no trie needed).
  static bool constrains(const ChatRequest& request);

  // The grammar of a tool declaration's arguments ({"type":"function",
  // "function":{"name","parameters","strict"}}); `field` labels errors.
  static std::shared_ptr<const JsonGrammar> tool_arguments(const JsonValue& tool, const std::string& field);

 private:
  std::vector<int32_t> encode(const std::vector<Segment>& segments) const;
  // Steps up to the response's opening (thinking: free, then forced).
  std::vector<ConstraintStep> answer_opening(bool thinking) const;
  // The function tools of `request` (a named choice: only that one).
  std::vector<ForcedTool> callable_tools(const ChatRequest& request) const;

  const Tokenizer& tok_;
  VocabularyTrie trie_;
  std::vector<int32_t> specials_but_close_;
  int32_t close_ = -1;
};

}  // namespace k3
