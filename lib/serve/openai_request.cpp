#include "serve/openai_request.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "common/cli_limits.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "sampling/sampling_settings.h"
#include "serve/api_error.h"
#include "serve/json_build.h"
#include "serve/request_fields.h"

namespace k3::serve {

namespace {

bool bool_field(const JsonValue& obj, const char* key, bool fallback) {
  const JsonValue* v = present(obj, key);
  if (!v) return fallback;
  if (!v->is_bool()) refuse_field(key, "must be true or false" + found_kind(*v));
  return v->boolean;
}

// The sampler's settings under their API names, each checked by the one
// rule sampling_settings.h gives it (the same the k3-forward flags obey).
void read_sampling_settings(const JsonValue& body, SamplingParams& out) {
  const std::pair<SamplingSetting, double*> reals[] = {
      {SamplingSetting::kTemperature, &out.temperature},
      {SamplingSetting::kTopP, &out.top_p},
      {SamplingSetting::kMinP, &out.min_p},
      {SamplingSetting::kRepetitionPenalty, &out.penalties.repetition},
      {SamplingSetting::kFrequencyPenalty, &out.penalties.frequency},
      {SamplingSetting::kPresencePenalty, &out.penalties.presence},
  };
  const std::pair<SamplingSetting, int32_t*> integers[] = {
      {SamplingSetting::kTopK, &out.top_k},
      {SamplingSetting::kRepeatLastN, &out.penalties.last_n},
  };
  auto value_of = [&](SamplingSetting setting) -> std::optional<double> {
    const std::string field = setting_name(setting, SettingNames::kApiField);
    const JsonValue* v = present(body, field.c_str());
    if (!v) return std::nullopt;
    const std::string rule = setting_rule(setting).rule;
    if (!is_number(*v)) refuse_field(field, rule + found_kind(*v));
    const double x = number_of(*v);
    if (!setting_accepts(setting, x))
      refuse_field(field, rule + " (found " + (v->kind == JsonValue::Kind::kInt ? v->text : json_number(x)) + ")");
    return x;
  };
  for (const auto& [setting, target] : reals)
    if (const std::optional<double> x = value_of(setting)) *target = *x;
  for (const auto& [setting, target] : integers)
    if (const std::optional<double> x = value_of(setting)) *target = static_cast<int32_t>(*x);
}

// logit_bias {"ID": bias}: each key a token id (its range against the
// vocabulary is prepare_job's to check), each bias within [-100, 100].
void read_logit_bias(const JsonValue& v, SamplingParams& out) {
  if (!v.is_object()) refuse_field("logit_bias", "must be an object of token ids to biases" + found_kind(v));
  if (v.keys.size() > kMaxLogitBiases)
    refuse_field("logit_bias",
                 "at most " + std::to_string(kMaxLogitBiases) + " ids (found " + std::to_string(v.keys.size()) + ")");
  for (size_t i = 0; i < v.keys.size(); ++i) {
    const std::string& key = v.keys[i];
    const std::string field = "logit_bias." + key;
    int32_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || ec != std::errc() || end != key.data() + key.size() || id < 0)
      refuse_field(field, "the key must be a token id (a non-negative integer)");
    const JsonValue& b = v.items[i];
    if (!is_number(b) || !(number_of(b) >= kMinLogitBias && number_of(b) <= kMaxLogitBias))
      refuse_field(field, "must be a number from -100 to 100" +
                              (is_number(b) ? " (found " + json_number(number_of(b)) + ")" : found_kind(b)));
    out.logit_bias.push_back({id, static_cast<float>(number_of(b))});
  }
}

// n, logprobs (chat: true/false with top_logprobs; completions: the count of
// top ids), logit_bias; echo is refused unless false.
void read_choice_fields(const JsonValue& body, ParsedRequest& out) {
  if (const JsonValue* n = present(body, "n")) out.n = static_cast<int>(integer_in(*n, "n", 1, kMaxChoices));
  if (const JsonValue* e = present(body, "echo"); e && !(e->is_bool() && !e->boolean))
    refuse_field("echo", "is not supported");
  const JsonValue* lp = present(body, "logprobs");
  const JsonValue* top = present(body, "top_logprobs");
  if (out.endpoint == Endpoint::kChat) {
    if (lp && !lp->is_bool()) refuse_field("logprobs", "must be true or false" + found_kind(*lp));
    if (lp && lp->boolean) out.logprobs = 0;
    if (top) {
      if (out.logprobs < 0) refuse_field("top_logprobs", "needs \"logprobs\": true");
      out.logprobs = static_cast<int>(integer_in(*top, "top_logprobs", 0, kMaxTopLogprobs));
    }
  } else if (lp) {
    out.logprobs = static_cast<int>(integer_in(*lp, "logprobs", 0, kMaxTopLogprobs));
  }
  if (const JsonValue* b = present(body, "logit_bias")) read_logit_bias(*b, out.sampling);
}

void read_sampling(const JsonValue& body, ParsedRequest& out, const RequestLimits& limits) {
  read_sampling_settings(body, out.sampling);
  if (const JsonValue* s = present(body, "seed"))
    out.sampling.seed = static_cast<uint64_t>(integer_in(*s, "seed", 0, static_cast<int64_t>(kMaxSeed)));
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (const JsonValue* m = present(body, key)) out.max_tokens = integer_in(*m, key, 1, limits.context);
  if (const JsonValue* stop = present(body, "stop")) {
    if (stop->is_string()) {
      out.stop.push_back(stop->text);
    } else if (stop->is_array() && stop->items.size() <= 4) {
      for (size_t i = 0; i < stop->items.size(); ++i) {
        if (!stop->items[i].is_string())
          refuse_field("stop[" + std::to_string(i) + "]", "must be a string" + found_kind(stop->items[i]));
        out.stop.push_back(stop->items[i].text);
      }
    } else {
      refuse_field("stop", "must be a string or a list of up to 4 strings" + found_kind(*stop));
    }
    for (const std::string& s : out.stop)
      if (s.empty()) refuse_field("stop", "a stop string must not be empty");
  }
  read_choice_fields(body, out);
  out.stream = bool_field(body, "stream", false);
  if (const JsonValue* so = present(body, "stream_options")) {
    if (!so->is_object()) refuse_field("stream_options", "must be an object" + found_kind(*so));
    if (const JsonValue* u = present(*so, "include_usage")) {
      if (!u->is_bool()) refuse_field("stream_options.include_usage", "must be true or false" + found_kind(*u));
      out.include_usage = u->boolean;
    }
  }
}

// The request in the shape parse_chat_request reads: OpenAI's names for K3's
// thinking controls become "thinking" and "thinking_effort".
JsonValue chat_request_json(const JsonValue& body, const RequestLimits& limits) {
  JsonValue req = JsonValue::object();
  req.set("thinking", json_bool(limits.thinking));
  req.set("thinking_effort", limits.effort.empty() ? JsonValue() : JsonValue::string(limits.effort));
  const JsonValue* messages = body.find("messages");
  if (!messages) refuse_field("messages", "missing (a chat request needs a list of messages)");
  if (!messages->is_array()) refuse_field("messages", "must be a list of messages" + found_kind(*messages));
  if (messages->items.empty()) refuse_field("messages", "must hold at least one message");
  JsonValue copy = *messages;
  for (JsonValue& m : copy.items)  // OpenAI's "developer" role is the system message of older models
    if (JsonValue* role = m.is_object() ? const_cast<JsonValue*>(m.find("role")) : nullptr;
        role && role->is_string() && role->text == "developer")
      role->text = "system";
  req.set("messages", std::move(copy));
  for (const char* key : {"tools", "tool_choice", "response_format"})
    if (const JsonValue* v = body.find(key)) req.set(key, *v);
  if (const JsonValue* effort = present(body, "reasoning_effort")) {
    if (!effort->is_string()) refuse_field("reasoning_effort", "must be a string" + found_kind(*effort));
    const std::string& e = effort->text;
    if (e == "none") {
      req.set("thinking", json_bool(false));
    } else if (e == "minimal" || e == "low" || e == "medium" || e == "high" || e == "max") {
      // An effort asks for thinking, whatever the server's default.
      req.set("thinking", json_bool(true));
      req.set("thinking_effort", JsonValue::string(e == "minimal" ? "low" : e == "medium" ? "high" : e));
    } else {
      refuse_field("reasoning_effort", "\"" + e + "\" is not supported (none, minimal, low, medium, high or max)");
    }
  }
  if (const JsonValue* kwargs = present(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) refuse_field("chat_template_kwargs", "must be an object" + found_kind(*kwargs));
    for (size_t i = 0; i < kwargs->keys.size(); ++i) {
      const std::string& key = kwargs->keys[i];
      if (key == "thinking" || key == "enable_thinking") req.set("thinking", kwargs->items[i]);
      else if (key == "thinking_effort") req.set("thinking_effort", kwargs->items[i]);
      else refuse_field("chat_template_kwargs." + key, "unknown (thinking and thinking_effort are K3's)");
    }
  }
  return req;
}

// Every field k3-serve reads for the endpoint, and those that change nothing
// here (user, metadata, store). Any other is refused with its name rather
// than ignored: a client that asks for best_of or suffix would otherwise get
// a reply that silently is not what it asked for.
void refuse_unknown_fields(const JsonValue& body, Endpoint endpoint) {
  static const std::set<std::string, std::less<>> kBoth = {
      "model",          "max_tokens",       "temperature",       "top_p", "top_k",    "min_p", "repetition_penalty",
      "repeat_last_n",  "presence_penalty", "frequency_penalty", "seed",  "stop",     "n",     "stream",
      "stream_options", "logprobs",         "logit_bias",        "user",  "metadata", "store"};
  static const std::set<std::string, std::less<>> kChat = {"messages",
                                                           "tools",
                                                           "tool_choice",
                                                           "response_format",
                                                           "chat_template_kwargs",
                                                           "reasoning_effort",
                                                           "max_completion_tokens",
                                                           "top_logprobs"};
  static const std::set<std::string, std::less<>> kCompletion = {"prompt", "echo"};
  const auto& own = endpoint == Endpoint::kChat ? kChat : kCompletion;
  for (const std::string& key : body.keys)
    if (!kBoth.contains(key) && !own.contains(key))
      refuse_field(key, std::string("is not supported by k3-serve's ") +
                            (endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions") +
                            " (docs/serve.md lists the fields served)");
}

void read_prompt(const JsonValue& body, ParsedRequest& out, const RequestLimits& limits) {
  const JsonValue* p = body.find("prompt");
  if (!p || p->is_null()) refuse_field("prompt", "missing (a string or a list of token ids)");
  const JsonValue* one = p;
  if (p->is_array() && p->items.size() == 1 && (p->items[0].is_string() || p->items[0].is_array())) one = &p->items[0];
  if (one->is_string()) {
    if (one->text.empty()) refuse_field("prompt", "must not be empty");
    out.prompt_text = one->text;
    return;
  }
  if (!one->is_array()) refuse_field("prompt", "must be a string or a list of token ids" + found_kind(*one));
  if (one->items.empty()) refuse_field("prompt", "must not be empty");
  out.prompt_is_ids = true;
  for (size_t i = 0; i < one->items.size(); ++i)
    out.prompt_ids.push_back(
        static_cast<int32_t>(integer_in(one->items[i], "prompt[" + std::to_string(i) + "]", 0, INT32_MAX)));
  if (static_cast<int64_t>(out.prompt_ids.size()) >= limits.context)
    throw ApiError(400,
                   "prompt: " + std::to_string(out.prompt_ids.size()) + " ids do not fit the context of " +
                       std::to_string(limits.context) + " positions (start k3-serve with a larger --ctx)",
                   "prompt", "context_length_exceeded");
}

}  // namespace

ParsedRequest parse_openai_request(std::string_view text, Endpoint endpoint, const RequestLimits& limits) {
  if (json_depth(text, limits.max_depth) > limits.max_depth)
    throw ApiError(400, "request body: nested deeper than " + std::to_string(limits.max_depth) + " levels", "",
                   "too_deep");
  JsonValue body;
  std::string error;
  if (!parse_json(text, body, error)) throw ApiError(400, "request body: not valid JSON (" + error + ")");
  if (!body.is_object()) throw ApiError(400, "request body: must be a JSON object" + found_kind(body));
  ParsedRequest out;
  out.endpoint = endpoint;
  if (const JsonValue* model = present(body, "model")) {
    if (!model->is_string()) refuse_field("model", "must be a string" + found_kind(*model));
    if (model->text != limits.model_name)
      throw ApiError(
          404, "model: \"" + model->text + "\" is not served here (GET /v1/models lists \"" + limits.model_name + "\")",
          "model", "model_not_found");
  }
  refuse_unknown_fields(body, endpoint);
  read_sampling(body, out, limits);
  if (endpoint == Endpoint::kCompletion) {
    read_prompt(body, out, limits);
    return out;
  }
  try {
    out.chat = parse_chat_request(chat_request_json(body, limits));
  } catch (const Error& e) {
    // "request: messages[2].role: ..." -> param "messages[2].role"
    std::string message = e.message();
    if (message.rfind("request: ", 0) == 0) message.erase(0, 9);
    const size_t colon = message.find(": ");
    throw ApiError(400, message, colon == std::string::npos ? "" : message.substr(0, colon));
  }
  return out;
}

}  // namespace k3::serve
