#include "serve/anthropic_request.h"

#include <algorithm>
#include <charconv>
#include <climits>

#include "common/error.h"
#include "serve/anthropic_messages.h"
#include "serve/api_error.h"
#include "serve/request_fields.h"

namespace k3::serve {

namespace {

// K3's efforts are low, high and max: Anthropic's five levels fall onto them.
std::string k3_effort(const std::string& effort) {
  if (effort == "low") return "low";
  if (effort == "medium" || effort == "high") return "high";
  if (effort == "xhigh" || effort == "max") return "max";
  refuse_field("output_config.effort", "\"" + effort + "\" is not one of low, medium, high, xhigh, max");
}

std::string effort_of_budget(int64_t budget) { return budget < 4096 ? "low" : budget < 16384 ? "high" : "max"; }

// thinking and output_config -> K3's "thinking" and "thinking_effort"; the budget (0: none) in `budget`.
void read_thinking(const JsonValue& body, JsonValue& chat, int64_t& budget) {
  budget = 0;
  if (const JsonValue* t = present(body, "thinking")) {
    if (!t->is_object()) refuse_field("thinking", "must be an object with a \"type\"" + found_kind(*t));
    const JsonValue* type = t->find("type");
    if (!type || !type->is_string()) refuse_field("thinking.type", "must be \"enabled\", \"adaptive\" or \"disabled\"");
    if (type->text == "disabled") {
      only_keys(*t, "thinking", {"type"});
      chat.set("thinking", JsonValue(false));
    } else if (type->text == "enabled" || type->text == "adaptive") {
      if (type->text == "enabled") {
        only_keys(*t, "thinking", {"type", "budget_tokens", "display"});
        const JsonValue* b = t->find("budget_tokens");
        if (!b) refuse_field("thinking.budget_tokens", "missing (at least 1024 with type enabled)");
        budget = integer_in(*b, "thinking.budget_tokens", 1024, INT32_MAX);
        chat.set("thinking_effort", effort_of_budget(budget));
      } else {
        only_keys(*t, "thinking", {"type", "display"});
      }
      if (const JsonValue* d = present(*t, "display"); d && !(d->is_string() && d->text == "summarized"))
        refuse_field("thinking.display", "only \"summarized\" is supported (k3 returns the whole thinking)");
      chat.set("thinking", JsonValue(true));
    } else {
      refuse_field("thinking.type", "\"" + type->text + "\" is not one of enabled, adaptive, disabled");
    }
  }
  if (const JsonValue* oc = present(body, "output_config")) {
    if (!oc->is_object()) refuse_field("output_config", "must be an object" + found_kind(*oc));
    only_keys(*oc, "output_config", {"effort", "format"});
    if (present(*oc, "format")) refuse_field("output_config.format", "structured output is not supported");
    if (const JsonValue* e = present(*oc, "effort")) {
      if (!e->is_string()) refuse_field("output_config.effort", "must be a string" + found_kind(*e));
      const std::string effort = k3_effort(e->text);
      if (!(chat.find("thinking") && !chat.find("thinking")->boolean)) chat.set("thinking_effort", effort);
    }
  }
}

void read_cache_control(const JsonValue& body) {
  const JsonValue* cc = present(body, "cache_control");
  if (!cc) return;
  if (!cc->is_object()) refuse_field("cache_control", "must be an object" + found_kind(*cc));
  only_keys(*cc, "cache_control", {"type", "ttl"});
  const JsonValue* type = cc->find("type");
  if (!type || !type->is_string() || type->text != "ephemeral")
    refuse_field("cache_control.type", "must be \"ephemeral\"");
}

void read_generation(const JsonValue& body, ParsedRequest& out, const RequestLimits& limits, int64_t budget) {
  const JsonValue* m = present(body, "max_tokens");
  if (!m) refuse_field("max_tokens", "missing (the most tokens to generate)");
  out.max_tokens = integer_in(*m, "max_tokens", 1, limits.context);
  if (budget > 0 && budget >= *out.max_tokens)
    refuse_field("thinking.budget_tokens", "must be less than max_tokens (" + std::to_string(*out.max_tokens) + ")");
  if (const JsonValue* t = present(body, "temperature")) {
    if (!is_number(*t) || !(number_of(*t) >= 0 && number_of(*t) <= 1))
      refuse_field("temperature", "must be a number from 0 to 1" + found_kind(*t));
    out.sampling.temperature = number_of(*t);
  }
  if (const JsonValue* p = present(body, "top_p")) {
    if (!is_number(*p) || !(number_of(*p) > 0 && number_of(*p) <= 1))
      refuse_field("top_p", "must be a number in (0, 1]" + found_kind(*p));
    out.sampling.top_p = number_of(*p);
  }
  if (const JsonValue* k = present(body, "top_k"))
    out.sampling.top_k = static_cast<int32_t>(integer_in(*k, "top_k", 1, INT32_MAX));
  if (const JsonValue* s = present(body, "stop_sequences")) {
    if (!s->is_array() || s->items.size() > 16)
      refuse_field("stop_sequences", "must be a list of up to 16 strings" + found_kind(*s));
    for (size_t i = 0; i < s->items.size(); ++i) {
      const std::string field = "stop_sequences[" + std::to_string(i) + "]";
      if (!s->items[i].is_string()) refuse_field(field, "must be a string" + found_kind(s->items[i]));
      if (s->items[i].text.empty()) refuse_field(field, "must not be empty");
      out.stop.push_back(s->items[i].text);
    }
  }
  if (const JsonValue* md = present(body, "metadata")) {
    if (!md->is_object()) refuse_field("metadata", "must be an object" + found_kind(*md));
    only_keys(*md, "metadata", {"user_id"});
    if (const JsonValue* u = present(*md, "user_id"); u && !u->is_string())
      refuse_field("metadata.user_id", "must be a string" + found_kind(*u));
  }
  if (const JsonValue* s = present(body, "stream")) {
    if (!s->is_bool()) refuse_field("stream", "must be true or false" + found_kind(*s));
    out.stream = s->boolean;
  }
}

}  // namespace

ParsedRequest parse_anthropic_request(std::string_view text, MessagesEndpoint endpoint, const RequestLimits& limits) {
  if (json_depth(text, limits.max_depth) > limits.max_depth)
    throw ApiError(400, "request body: nested deeper than " + std::to_string(limits.max_depth) + " levels");
  JsonValue body;
  std::string error;
  if (!parse_json(text, body, error)) throw ApiError(400, "request body: not valid JSON (" + error + ")");
  if (!body.is_object()) throw ApiError(400, "request body: must be a JSON object" + found_kind(body));
  const bool create = endpoint == MessagesEndpoint::kCreate;
  if (create)
    only_keys(body, "",
              {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config", "cache_control",
               "max_tokens", "stop_sequences", "temperature", "top_p", "top_k", "metadata", "stream"});
  else
    only_keys(body, "",
              {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config", "cache_control"});
  const JsonValue* model = present(body, "model");
  if (!model) refuse_field("model", "missing (GET /v1/models lists \"" + limits.model_name + "\")");
  if (!model->is_string()) refuse_field("model", "must be a string" + found_kind(*model));
  if (model->text != limits.model_name)
    throw ApiError(
        404, "model: \"" + model->text + "\" is not served here (GET /v1/models lists \"" + limits.model_name + "\")",
        "model");
  ParsedRequest out;
  out.endpoint = Endpoint::kChat;
  JsonValue chat = anthropic_chat_json(body);
  // Without a "thinking" field the server's default (k3-serve --thinking,
  // --effort), as for a chat request that names no thinking control.
  chat.set("thinking", JsonValue(limits.thinking));
  chat.set("thinking_effort", limits.effort.empty() ? JsonValue() : JsonValue::string(limits.effort));
  int64_t budget = 0;
  read_thinking(body, chat, budget);
  read_cache_control(body);
  if (create) read_generation(body, out, limits, budget);
  try {
    out.chat = parse_chat_request(chat);
  } catch (const Error& e) {
    std::string message = e.what();
    if (message.rfind("request: ", 0) == 0) message.erase(0, 9);
    throw ApiError(400, message);
  }
  return out;
}

void check_anthropic_version(const std::string& version) {
  if (version.empty()) return;
  // A dated version from 2023-06-01 on: the shapes served are 2023-06-01's,
  // which the later versions keep (the pinned SDK of the tests sends 2026-10-21).
  const bool dated =
      version.size() == 10 && version[4] == '-' && version[7] == '-' &&
      std::all_of(version.begin(), version.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
  if (dated && version >= "2023-06-01") return;
  throw ApiError(400, "anthropic-version: \"" + version + "\" is not served (2023-06-01 or later)",
                 "anthropic-version");
}

}  // namespace k3::serve
