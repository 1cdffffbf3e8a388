#include "chat/reply_constraint.h"

#include "chat/xtml_segments.h"
#include "common/error.h"
#include "constrain/json_schema_compiler.h"

namespace k3 {

namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& what) {
  throw Error(ExitCode::kBadInput, field + ": " + what);
}

std::shared_ptr<const JsonGrammar> compiled(const JsonValue& schema, const std::string& field) {
  try {
    return std::make_shared<JsonGrammar>(compile_json_schema(schema));
  } catch (const Error& e) {
    if (e.code() != ExitCode::kBadInput) throw;
    refuse(field, e.what());
  }
}

}  // namespace

ReplyConstraints::ReplyConstraints(const Tokenizer& tok)
    : tok_(tok), trie_(VocabularyTrie::from_vocabulary(tok.vocab())) {
  const Vocabulary& v = tok.vocab();
  const TokenId close = v.special_id(kXtmlClose);
  if (close == Vocabulary::kNoToken)
    throw Error(ExitCode::kBadModel, "the vocabulary has no <|close|> token: structured output needs K3's chat markup");
  close_ = static_cast<int32_t>(close);
  for (TokenId id = v.num_ranks(); id < v.size(); ++id)
    if (id != close) specials_but_close_.push_back(static_cast<int32_t>(id));
}

std::vector<int32_t> ReplyConstraints::encode(const std::vector<Segment>& segments) const {
  std::vector<TokenId> ids;
  encode_segments(tok_, segments, ids);
  return {ids.begin(), ids.end()};
}

std::vector<ConstraintStep> ReplyConstraints::answer_opening(bool thinking) const {
  std::vector<ConstraintStep> steps;
  if (!thinking) return steps;  // the generation prompt opened the response
  XtmlWriter w;
  w.close("think");
  w.open("response");
  std::vector<int32_t> ids = encode(w.segments());
  ids.erase(ids.begin());  // <|close|>: the free step's last id
  // Thinking is not constrained, but markup other than its closing tag would
  // break the reply, and a stop id would end it before the answer.
  steps.push_back(ConstraintStep::free(specials_but_close_, close_));
  steps.push_back(ConstraintStep::forced({ids}));
  return steps;
}

std::unique_ptr<OutputConstraint> ReplyConstraints::json_answer(std::shared_ptr<const JsonGrammar> grammar,
                                                                bool thinking,
                                                                const std::vector<int32_t>& stop_ids) const {
  std::vector<ConstraintStep> steps = answer_opening(thinking);
  steps.push_back(ConstraintStep::json(std::move(grammar)));
  XtmlWriter w;
  w.close("response");
  w.close("message");
  steps.push_back(ConstraintStep::forced({encode(w.segments())}));
  steps.push_back(ConstraintStep::end(stop_ids));
  return std::make_unique<OutputConstraint>(std::move(steps), trie_);
}

namespace {

// The tags that open a call of `name` (index 1) in the json form, from the
// response's closing tag on.
XtmlWriter call_opening(const std::string& name) {
  XtmlWriter w;
  w.close("response");
  w.open("tools");
  w.open("call", {{"tool", name}, {"index", "1"}});
  w.open("json", {{"type", "object"}});
  return w;
}

}  // namespace

std::unique_ptr<OutputConstraint> ReplyConstraints::forced_tool_call(const std::vector<ForcedTool>& tools,
                                                                     bool thinking,
                                                                     const std::vector<int32_t>& stop_ids) const {
  if (tools.empty()) throw Error(ExitCode::kInternal, "forced_tool_call: no tool");
  std::vector<ConstraintStep> steps = answer_opening(thinking);
  XtmlWriter tail;
  tail.close("json");
  tail.close("call");
  tail.close("tools");
  tail.close("message");
  const std::vector<int32_t> closing = encode(tail.segments());
  std::vector<std::vector<int32_t>> openings;
  std::vector<std::vector<ConstraintStep>> branches;
  for (const ForcedTool& t : tools) {
    openings.push_back(encode(call_opening(t.name).segments()));
    branches.push_back(
        {ConstraintStep::json(t.arguments), ConstraintStep::forced({closing}), ConstraintStep::end(stop_ids)});
  }
  steps.push_back(ConstraintStep::forced(std::move(openings), std::move(branches)));
  return std::make_unique<OutputConstraint>(std::move(steps), trie_);
}

std::unique_ptr<OutputConstraint> ReplyConstraints::strict_tool_calls(const std::vector<ForcedTool>& tools,
                                                                      bool thinking,
                                                                      const std::vector<int32_t>& stop_ids) const {
  if (tools.empty()) throw Error(ExitCode::kInternal, "strict_tool_calls: no tool");
  std::vector<ConstraintStep> steps = answer_opening(thinking);
  // The answer: free text up to the response's closing tag (its <|close|>).
  steps.push_back(ConstraintStep::free(specials_but_close_, /*until=*/close_));
  XtmlWriter no_call;
  no_call.close("response");
  no_call.close("message");
  std::vector<std::vector<int32_t>> endings = {encode(no_call.segments())};
  std::vector<std::vector<ConstraintStep>> branches = {{ConstraintStep::end(stop_ids)}};
  XtmlWriter call_end;
  call_end.close("json");
  call_end.close("call");
  const std::vector<int32_t> call_closing = encode(call_end.segments());
  // After the first call: the tools section and the message close, or
  // another call opens, which is free (its name, its arguments, the rest).
  XtmlWriter close_all, next_call;
  close_all.close("tools");
  close_all.close("message");
  next_call.open("call");
  std::vector<int32_t> another = encode(next_call.segments());
  another.pop_back();  // <|sep|>: the call's attributes come before it
  const ConstraintStep after_call = ConstraintStep::forced(
      {encode(close_all.segments()), another}, {{ConstraintStep::end(stop_ids)}, {ConstraintStep::free({}, -1)}});
  for (const ForcedTool& t : tools) {
    endings.push_back(encode(call_opening(t.name).segments()));
    branches.push_back({ConstraintStep::json(t.arguments), ConstraintStep::forced({call_closing}), after_call});
  }
  for (std::vector<int32_t>& ids : endings) ids.erase(ids.begin());  // <|close|>: the free step's last id
  steps.push_back(ConstraintStep::forced(std::move(endings), std::move(branches)));
  return std::make_unique<OutputConstraint>(std::move(steps), trie_);
}

std::shared_ptr<const JsonGrammar> ReplyConstraints::tool_arguments(const JsonValue& tool, const std::string& field) {
  const JsonValue* fn = tool.find("function");
  if (!fn || !fn->is_object())
    refuse(field, "a forced call needs a function tool ({\"type\":\"function\",\"function\":{...}})");
  const JsonValue* params = fn->find("parameters");
  const JsonValue* strict = fn->find("strict");
  const bool is_strict = strict && strict->is_bool() && strict->boolean;
  if (!params || params->is_null()) return std::make_shared<JsonGrammar>(json_object_grammar());
  if (is_strict) return compiled(*params, field + ".function.parameters");
  try {
    return std::make_shared<JsonGrammar>(compile_json_schema(*params));
  } catch (const Error& e) {
    if (e.code() != ExitCode::kBadInput) throw;
    return std::make_shared<JsonGrammar>(json_object_grammar());  // not strict: still a JSON object
  }
}

std::vector<ForcedTool> ReplyConstraints::callable_tools(const ChatRequest& request) const {
  std::vector<ForcedTool> tools;
  for (size_t i = 0; i < request.tools->items.size(); ++i) {
    const JsonValue& t = request.tools->items[i];
    const JsonValue* fn = t.find("function");
    const JsonValue* name = fn ? fn->find("name") : nullptr;
    if (!name || !name->is_string()) continue;
    if (request.tool_choice == "function" && name->text != request.tool_choice_name) continue;
    tools.push_back({name->text, tool_arguments(t, "tools[" + std::to_string(i) + "]")});
  }
  return tools;
}

namespace {

bool declares_strict_tool(const ChatRequest& request) {
  if (!request.tools) return false;
  for (const JsonValue& t : request.tools->items) {
    const JsonValue* fn = t.find("function");
    const JsonValue* strict = fn ? fn->find("strict") : nullptr;
    if (strict && strict->is_bool() && strict->boolean) return true;
  }
  return false;
}

bool strict_calls_under_auto(const ChatRequest& request) {
  return (request.tool_choice.empty() || request.tool_choice == "auto") && declares_strict_tool(request);
}

}  // namespace

bool ReplyConstraints::constrains(const ChatRequest& request) {
  return request.tool_choice == "required" || request.tool_choice == "function" ||
         request.response_format != ResponseFormat::kText || strict_calls_under_auto(request);
}

std::unique_ptr<OutputConstraint> ReplyConstraints::for_request(const ChatRequest& request,
                                                                const std::vector<int32_t>& stop_ids) const {
  if (request.tool_choice == "required" || request.tool_choice == "function") {
    if (!request.tools) refuse("tool_choice", "\"" + request.tool_choice + "\" needs tools");
    std::vector<ForcedTool> tools = callable_tools(request);
    if (tools.empty())
      refuse("tool_choice", request.tool_choice == "function"
                                ? "no function tool is named \"" + request.tool_choice_name + "\""
                                : std::string("no function tool to call"));
    return forced_tool_call(tools, request.thinking, stop_ids);
  }
  if (request.response_format == ResponseFormat::kJsonSchema)
    return json_answer(compiled(request.response_schema, "response_format.json_schema.schema"), request.thinking,
                       stop_ids);
  if (request.response_format == ResponseFormat::kJsonObject)
    return json_answer(std::make_shared<JsonGrammar>(json_object_grammar()), request.thinking, stop_ids);
  if (strict_calls_under_auto(request)) return strict_tool_calls(callable_tools(request), request.thinking, stop_ids);
  return nullptr;
}

}  // namespace k3
