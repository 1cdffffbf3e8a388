// k3-serve's request parsing, limits, API-key checks, stop strings and
// response writing, without a server: refusals name the field with an
// OpenAI-shaped status; thinking controls map to K3's; the streamed deltas
// concatenate to the non-streamed answer; a tool call K3 writes comes back in
// OpenAI's tool_calls shape (its ids made by rendering an assistant message
// with that call, SPEC section 5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "chat/python_json.h"
#include "chat/xtml_renderer.h"
#include "common/error.h"
#include "sampling/sampling_settings.h"
#include "serve/api_error.h"
#include "serve/bearer_auth.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "serve/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace k3::serve {
namespace {

const RequestLimits kLimits{8, 100, "k3-tiny"};

int status_of(const std::string& body, Endpoint e = Endpoint::kChat, std::string* message = nullptr) {
  try {
    parse_openai_request(body, e, kLimits);
  } catch (const ApiError& err) {
    if (message) *message = err.what();
    return err.status();
  }
  return 200;
}

TEST(OpenAiRequest, ChatFieldsAndThinkingControls) {
  ParsedRequest r = parse_openai_request(
      R"({"model":"k3-tiny","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]}],
          "max_tokens":7,"temperature":0.5,"top_p":0.9,"seed":3,"stop":["\n\n","END"],"stream":true,
          "stream_options":{"include_usage":true},"chat_template_kwargs":{"thinking":false},"user":"x"})",
      Endpoint::kChat, kLimits);
  ASSERT_TRUE(r.chat);
  EXPECT_EQ(r.chat->messages[0].role, "system");
  EXPECT_FALSE(r.chat->thinking);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.seed, 3u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r.stream && r.include_usage);
  ParsedRequest e = parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"medium"})",
                                         Endpoint::kChat, kLimits);
  EXPECT_TRUE(e.chat->thinking);
  EXPECT_EQ(e.chat->effort, "high");
  EXPECT_FALSE(parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"})",
                                    Endpoint::kChat, kLimits)
                   .chat->thinking);
  EXPECT_EQ(parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":3})",
                                 Endpoint::kChat, kLimits)
                .max_tokens,
            3);
}

TEST(OpenAiRequest, CompletionPrompts) {
  EXPECT_EQ(parse_openai_request(R"({"prompt":"Hello"})", Endpoint::kCompletion, kLimits).prompt_text, "Hello");
  ParsedRequest ids = parse_openai_request(R"({"prompt":[5, 6, 7]})", Endpoint::kCompletion, kLimits);
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(parse_openai_request(R"({"prompt":[[8]]})", Endpoint::kCompletion, kLimits).prompt_ids,
            (std::vector<int32_t>{8}));
}

TEST(OpenAiRequest, RefusalsNameTheField) {
  std::string m;
  EXPECT_EQ(status_of("{", Endpoint::kChat, &m), 400);
  EXPECT_NE(m.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(status_of("[1]"), 400);
  EXPECT_EQ(status_of(R"({"model":"gpt-4","messages":[{"role":"user","content":"x"}]})", Endpoint::kChat, &m), 404);
  EXPECT_NE(m.find("gpt-4"), std::string::npos);
  EXPECT_EQ(status_of(R"({"messages":"hi"})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("messages: ", 0), 0u) << m;
  EXPECT_EQ(status_of(R"({"messages":[]})"), 400);
  EXPECT_EQ(status_of(R"({"messages":[{"role":"robot","content":"x"}]})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("messages[0].role: ", 0), 0u) << m;
  const std::string msg = R"("messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(status_of("{" + msg + R"(,"max_tokens":0})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("max_tokens: ", 0), 0u) << m;
  EXPECT_EQ(status_of("{" + msg + R"(,"max_tokens":101})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"max_tokens":"5"})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"max_tokens":99999999999999999999999})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"temperature":-1})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"top_p":0})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"n":17})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("n: must be an integer from 1 to 16", 0), 0u) << m;
  EXPECT_EQ(status_of("{" + msg + R"(,"stop":["a","b","c","d","e"]})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"stream":"yes"})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"logprobs":3})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"top_logprobs":3})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("top_logprobs: needs \"logprobs\": true", 0), 0u) << m;
  EXPECT_EQ(status_of(R"({"prompt":"a","logprobs":true})", Endpoint::kCompletion), 400);
  EXPECT_EQ(status_of(R"({"prompt":"a","logit_bias":{"-1":5}})", Endpoint::kCompletion, &m), 400);
  EXPECT_EQ(m.rfind("logit_bias.-1: the key must be a token id", 0), 0u) << m;
  EXPECT_EQ(status_of(R"({"prompt":"a","logit_bias":{"7":-100.5}})", Endpoint::kCompletion), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"frequency_penalty":2.5})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"best_of":2})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("best_of: is not supported", 0), 0u) << m;
  EXPECT_EQ(status_of(R"({"prompt":"a","suffix":"b"})", Endpoint::kCompletion, &m), 400);
  EXPECT_EQ(m.rfind("suffix: is not supported", 0), 0u) << m;
  // Each endpoint's own fields only: a completion has no messages, a chat no prompt.
  EXPECT_EQ(status_of(R"({"prompt":"a","tools":[]})", Endpoint::kCompletion, &m), 400);
  EXPECT_EQ(m.rfind("tools: ", 0), 0u) << m;
  EXPECT_EQ(status_of("{" + msg + R"(,"echo":false})", Endpoint::kChat, &m), 400);
  EXPECT_EQ(m.rfind("echo: ", 0), 0u) << m;
  EXPECT_EQ(status_of(R"({"prompt":"a","user":"u","metadata":{},"store":false,"echo":false})", Endpoint::kCompletion),
            200);
  EXPECT_EQ(status_of("{" + msg + R"(,"reasoning_effort":"extreme"})"), 400);
  EXPECT_EQ(status_of("{" + msg + R"(,"chat_template_kwargs":{"other":1}})"), 400);
  EXPECT_EQ(status_of(R"({"prompt":[-1]})", Endpoint::kCompletion), 400);
  EXPECT_EQ(status_of(R"({"prompt":[1,2.5]})", Endpoint::kCompletion), 400);
  EXPECT_EQ(status_of(R"({"prompt":{}})", Endpoint::kCompletion), 400);
  EXPECT_EQ(status_of(R"({"prompt":""})", Endpoint::kCompletion), 400);
  std::string long_ids = "[";
  for (int i = 0; i < 100; ++i) long_ids += (i ? ",1" : "1");
  EXPECT_EQ(status_of(R"({"prompt":)" + long_ids + "]}", Endpoint::kCompletion, &m), 400);
  EXPECT_NE(m.find("context"), std::string::npos);
}

TEST(OpenAiRequest, SamplingFieldsAreTheSamplersSettings) {
  ParsedRequest r = parse_openai_request(
      R"({"prompt":"a","temperature":0.7,"top_k":40,"min_p":0.05,"repetition_penalty":1.1,"frequency_penalty":-0.5,
          "presence_penalty":1.5,"repeat_last_n":-1})",
      Endpoint::kCompletion, kLimits);
  EXPECT_EQ(r.sampling.temperature, 0.7);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_EQ(r.sampling.min_p, 0.05);
  EXPECT_EQ(r.sampling.penalties.repetition, 1.1);
  EXPECT_EQ(r.sampling.penalties.frequency, -0.5);
  EXPECT_EQ(r.sampling.penalties.presence, 1.5);
  EXPECT_EQ(r.sampling.penalties.last_n, -1);
  // Defaults: what k3-forward uses without the flags.
  const SamplingParams d = parse_openai_request(R"({"prompt":"a"})", Endpoint::kCompletion, kLimits).sampling;
  const SamplingParams none;
  EXPECT_EQ(d.top_k, none.top_k);
  EXPECT_EQ(d.min_p, none.min_p);
  EXPECT_EQ(d.penalties.last_n, none.penalties.last_n);
  EXPECT_FALSE(d.penalties.active());
}

// The server and the flags cannot disagree: for every setting and a sweep of
// values, the field is accepted exactly when the flag's check accepts it,
// and a refusal names the field with the flag's rule.
TEST(OpenAiRequest, ChoicesLogprobsAndLogitBias) {
  const ParsedRequest c = parse_openai_request(
      R"({"messages":[{"role":"user","content":"x"}],"n":3,"logprobs":true,"top_logprobs":4,"logit_bias":{"7":-100,"12":2.5}})",
      Endpoint::kChat, kLimits);
  EXPECT_EQ(c.n, 3);
  EXPECT_EQ(c.logprobs, 4);
  ASSERT_EQ(c.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(c.sampling.logit_bias[0].id, 7);
  EXPECT_EQ(c.sampling.logit_bias[0].bias, -100.0f);
  EXPECT_EQ(c.sampling.logit_bias[1].id, 12);
  EXPECT_EQ(c.sampling.logit_bias[1].bias, 2.5f);
  EXPECT_EQ(
      parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", Endpoint::kChat, kLimits)
          .logprobs,
      0);
  EXPECT_EQ(
      parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":false})", Endpoint::kChat, kLimits)
          .logprobs,
      -1);
  EXPECT_EQ(parse_openai_request(R"({"prompt":"a","logprobs":2})", Endpoint::kCompletion, kLimits).logprobs, 2);
  const ParsedRequest d = parse_openai_request(R"({"prompt":"a"})", Endpoint::kCompletion, kLimits);
  EXPECT_EQ(d.n, 1);
  EXPECT_EQ(d.logprobs, -1);
  EXPECT_TRUE(d.sampling.logit_bias.empty());
}

TEST(OpenAiRequest, FieldsAndFlagsShareEachSettingsRange) {
  const SamplingSetting all[] = {SamplingSetting::kTemperature,
                                 SamplingSetting::kTopK,
                                 SamplingSetting::kTopP,
                                 SamplingSetting::kMinP,
                                 SamplingSetting::kRepetitionPenalty,
                                 SamplingSetting::kFrequencyPenalty,
                                 SamplingSetting::kPresencePenalty,
                                 SamplingSetting::kRepeatLastN};
  const char* values[] = {"-3", "-2", "-1.5", "-1", "-0.5", "0", "0.5", "1", "1.5", "2", "2.5", "3", "1e300"};
  for (SamplingSetting setting : all) {
    const std::string field = setting_name(setting, SettingNames::kApiField);
    for (const char* v : values) {
      SamplingParams p;
      const double x = std::strtod(v, nullptr);
      // An integer setting given a fraction or a huge value: a value its check refuses too.
      auto as_int = [x](int32_t refused) {
        return std::fabs(x) < 1e9 && x == std::floor(x) ? static_cast<int32_t>(x) : refused;
      };
      switch (setting) {
        case SamplingSetting::kTemperature: p.temperature = x; break;
        case SamplingSetting::kTopK: p.top_k = as_int(-1); break;
        case SamplingSetting::kTopP: p.top_p = x; break;
        case SamplingSetting::kMinP: p.min_p = x; break;
        case SamplingSetting::kRepetitionPenalty: p.penalties.repetition = x; break;
        case SamplingSetting::kFrequencyPenalty: p.penalties.frequency = x; break;
        case SamplingSetting::kPresencePenalty: p.penalties.presence = x; break;
        case SamplingSetting::kRepeatLastN: p.penalties.last_n = as_int(-2); break;
      }
      bool flag_ok = true;
      std::string flag_message;
      try {
        validate_sampling_params(p);
      } catch (const Error& e) {
        flag_ok = false;
        flag_message = e.what();
      }
      std::string m;
      const int status = status_of(R"({"prompt":"a",")" + field + "\":" + v + "}", Endpoint::kCompletion, &m);
      EXPECT_EQ(status == 200, flag_ok) << field << " " << v << ": " << m << " / " << flag_message;
      if (!flag_ok) {
        EXPECT_EQ(m.rfind(field + ": " + setting_rule(setting).rule, 0), 0u) << m;
        EXPECT_EQ(flag_message.rfind(setting_name(setting, SettingNames::kFlag) + " " + setting_rule(setting).rule, 0),
                  0u)
            << flag_message;
      }
    }
  }
}

TEST(OpenAiRequest, NestingDepthIsRefusedBeforeParsing) {
  EXPECT_EQ(json_depth(R"({"a":[{"b":"[[[["}]})", 100), 3);
  EXPECT_EQ(json_depth(R"("\"[[[")", 100), 0);
  const std::string deep = std::string(9, '[') + std::string(9, ']');
  std::string m;
  EXPECT_EQ(status_of(R"({"messages":[{"role":"user","content":"x"}],"x":)" + deep + "}", Endpoint::kChat, &m), 400);
  EXPECT_NE(m.find("nested deeper than 8"), std::string::npos);
  EXPECT_EQ(json_depth(std::string(1000000, '['), 64), 65);  // stops counting past the limit
}

// run_guarded: whatever a route throws reaches the reply as one ApiError.
TEST(RunGuarded, EachFailureBecomesOneApiError) {
  auto reply_to = [](auto handler) {
    std::vector<ApiError> replies;
    run_guarded(handler, [&](const ApiError& e) { replies.push_back(e); });
    return replies;
  };
  EXPECT_TRUE(reply_to([] {}).empty());
  auto one = [&](auto handler) {
    const std::vector<ApiError> r = reply_to(handler);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? ApiError(0, "") : r[0];
  };
  const ApiError refused = one([] { throw ApiError(429, "busy", "", "queue_full"); });
  EXPECT_EQ(refused.status(), 429);
  EXPECT_EQ(refused.code(), "queue_full");
  EXPECT_EQ(one([] { throw Error(ExitCode::kBadInput, "bad id"); }).status(), 400);
  EXPECT_EQ(one([] { throw Error(ExitCode::kBadInput, "bad id"); }).message(), "bad id");
  EXPECT_EQ(one([] { throw Error(ExitCode::kInternal, "x"); }).status(), 500);
  const ApiError oom = one([] { throw std::bad_alloc(); });
  EXPECT_EQ(oom.status(), 503);
  EXPECT_EQ(oom.code(), "out_of_memory");
  const ApiError other = one([] { throw std::runtime_error("boom"); });
  EXPECT_EQ(other.status(), 500);
  EXPECT_EQ(other.message(), "internal error: boom");
  EXPECT_EQ(other.code(), "internal_error");
}

TEST(OpenAiError, Shape) {
  EXPECT_EQ(
      error_body(404, "model: \"x\" is not served", "model", "model_not_found"),
      R"({"error": {"message": "model: \"x\" is not served", "type": "not_found_error", "param": "model", "code": "model_not_found"}})");
  EXPECT_EQ(error_body(429, "busy"),
            R"({"error": {"message": "busy", "type": "rate_limit_error", "param": null, "code": null}})");
}

TEST(BearerAuth, ConstantTimeCompareAndHosts) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret2"));
  EXPECT_FALSE(constant_time_equal("secret", "secre"));
  EXPECT_FALSE(constant_time_equal("secret", ""));
  EXPECT_TRUE(bearer_matches("Bearer secret", "secret"));
  EXPECT_TRUE(bearer_matches("bearer  secret ", "secret"));
  EXPECT_FALSE(bearer_matches("Basic secret", "secret"));
  EXPECT_FALSE(bearer_matches("Bearer", "secret"));
  EXPECT_FALSE(bearer_matches("", "secret"));
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("::"));
  EXPECT_FALSE(is_loopback_host("192.168.1.2"));
  EXPECT_FALSE(is_loopback_host("example.com"));
}

TEST(StopStrings, CutAtTheFirstStopHoweverSplit) {
  const std::string text = "abc END def";
  for (size_t split = 0; split <= text.size(); ++split) {
    StopStrings s({"END", "zz"});
    std::string out = s.push(text.substr(0, split));
    out += s.push(text.substr(split));
    out += s.finish();
    EXPECT_EQ(out, "abc ") << split;
    EXPECT_TRUE(s.stopped());
  }
  StopStrings none({"END"});
  EXPECT_EQ(none.push("EN"), "");  // may start a stop string: held back
  EXPECT_EQ(none.push("x"), "ENx");
  EXPECT_EQ(none.finish(), "");
}

// The SSE events' JSON objects.
std::vector<JsonValue> events(const std::vector<std::string>& chunks) {
  std::vector<JsonValue> out;
  for (const std::string& c : chunks) {
    EXPECT_EQ(c.rfind("data: ", 0), 0u);
    EXPECT_EQ(c.substr(c.size() - 2), "\n\n");
    const std::string payload = c.substr(6, c.size() - 8);
    if (payload == "[DONE]") continue;
    JsonValue v;
    std::string error;
    EXPECT_TRUE(parse_json(payload, v, error)) << payload;
    out.push_back(v);
  }
  return out;
}

class ReplyWriterTest : public ::testing::Test {
 protected:
  Tokenizer tok = Tokenizer::load(K3_TEST_DATA "/k3-tiny");
  // The reply ids K3 would write for `assistant` after `user`: the rendered
  // conversation with the reply minus the prompt.
  std::vector<int32_t> reply_ids(const std::string& user, const std::string& assistant, bool thinking) {
    const std::string head = R"({"messages":[{"role":"user","content":")" + user + "\"}]";
    const std::string flag = std::string(",\"thinking\":") + (thinking ? "true" : "false") + "}";
    const ChatPrompt prompt = encode_chat(tok, render_chat(parse_chat_request(head + flag)));
    const std::string full = R"({"messages":[{"role":"user","content":")" + user + "\"}," + assistant + "]" + flag;
    ChatRequest with = parse_chat_request(full);
    with.add_generation_prompt = false;
    const ChatPrompt all = encode_chat(tok, render_chat(with));
    EXPECT_GE(all.ids.size(), prompt.ids.size());
    EXPECT_TRUE(std::equal(prompt.ids.begin(), prompt.ids.end(), all.ids.begin()));
    std::vector<int32_t> ids(all.ids.begin() + static_cast<ptrdiff_t>(prompt.ids.size()), all.ids.end());
    ids.push_back(static_cast<int32_t>(tok.vocab().special_id("<|end_of_msg|>")));
    return ids;
  }
};

TEST_F(ReplyWriterTest, StreamedDeltasEqualTheBody) {
  const std::vector<int32_t> ids =
      reply_ids("Hi", R"({"role":"assistant","reasoning_content":"Think é.","content":"Hello there, friend."})", true);
  ReplyWriter w(Endpoint::kChat, tok.vocab(), true, {}, ResponseMeta{"chatcmpl-1", 5, "k3-tiny"}, true);
  std::vector<std::string> chunks = w.start();
  for (size_t i = 0; i < ids.size(); ++i)
    for (std::string& c : w.push(ids[i], i + 1 == ids.size())) chunks.push_back(c);
  const Usage usage{10, static_cast<int64_t>(ids.size()), 4};
  for (std::string& c : w.finish(EndReason::kStop, usage)) chunks.push_back(c);
  EXPECT_EQ(chunks.back(), "data: [DONE]\n\n");
  std::string reasoning, content, finish;
  const std::vector<JsonValue> ev = events(chunks);
  for (const JsonValue& e : ev) {
    ASSERT_EQ(e.find("object")->text, "chat.completion.chunk");
    if (e.find("choices")->items.empty()) continue;
    const JsonValue& choice = e.find("choices")->items[0];
    if (const JsonValue* r = choice.find("delta")->find("reasoning_content")) reasoning += r->text;
    if (const JsonValue* c = choice.find("delta")->find("content")) content += c->text;
    if (choice.find("finish_reason")->is_string()) finish = choice.find("finish_reason")->text;
  }
  EXPECT_EQ(reasoning, "Think é.");
  EXPECT_EQ(content, "Hello there, friend.");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(python_json_dumps(*ev.back().find("usage")),
            R"({"prompt_tokens": 10, "completion_tokens": )" + std::to_string(ids.size()) + R"(, "total_tokens": )" +
                std::to_string(10 + ids.size()) + R"(, "prompt_tokens_details": {"cached_tokens": 4}})");
  JsonValue body;
  std::string error;
  ASSERT_TRUE(parse_json(w.body(usage), body, error));
  const JsonValue& message = *body.find("choices")->items[0].find("message");
  EXPECT_EQ(message.find("content")->text, content);
  EXPECT_EQ(message.find("reasoning_content")->text, reasoning);
  EXPECT_EQ(body.find("object")->text, "chat.completion");
}

TEST_F(ReplyWriterTest, ToolCallsInOpenAiShape) {
  const std::vector<int32_t> ids = reply_ids(
      "Weather?",
      R"({"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"days\": 2}"}}]})",
      false);
  ReplyWriter w(Endpoint::kChat, tok.vocab(), false, {}, ResponseMeta{"chatcmpl-2", 5, "k3-tiny"}, false);
  std::vector<std::string> chunks = w.start();
  for (size_t i = 0; i < ids.size(); ++i)
    for (std::string& c : w.push(ids[i], i + 1 == ids.size())) chunks.push_back(c);
  for (std::string& c : w.finish(EndReason::kStop, Usage{})) chunks.push_back(c);
  JsonValue body;
  std::string error;
  ASSERT_TRUE(parse_json(w.body(Usage{}), body, error));
  const JsonValue& choice = body.find("choices")->items[0];
  EXPECT_EQ(choice.find("finish_reason")->text, "tool_calls");
  const JsonValue& call = choice.find("message")->find("tool_calls")->items.at(0);
  EXPECT_EQ(call.find("type")->text, "function");
  EXPECT_EQ(call.find("function")->find("name")->text, "get_weather");
  EXPECT_EQ(call.find("function")->find("arguments")->text, R"({"city": "Paris", "days": 2})");
  EXPECT_EQ(choice.find("message")->find("reasoning_content"), nullptr);  // thinking off: absent
  // Streamed: the same call in one delta, with its index.
  bool streamed = false;
  for (const JsonValue& e : events(chunks))
    if (const JsonValue* tc = e.find("choices")->items[0].find("delta")->find("tool_calls")) {
      EXPECT_EQ(tc->items.at(0).find("index")->text, "0");
      EXPECT_EQ(tc->items.at(0).find("function")->find("arguments")->text, R"({"city": "Paris", "days": 2})");
      streamed = true;
    }
  EXPECT_TRUE(streamed);
}

TEST_F(ReplyWriterTest, CompletionTextAndStopStrings) {
  const std::vector<TokenId> t = tok.encode("one two three four");
  ReplyWriter w(Endpoint::kCompletion, tok.vocab(), false, {" three"}, ResponseMeta{"cmpl-1", 5, "k3-tiny"}, false);
  std::string text;
  for (TokenId id : t)
    for (const JsonValue& e : events(w.push(static_cast<int32_t>(id), false)))
      text += e.find("choices")->items[0].find("text")->text;
  EXPECT_TRUE(w.stop_string_matched());
  for (const JsonValue& e : events(w.finish(EndReason::kCancelled, Usage{})))
    if (!e.find("choices")->items.empty()) text += e.find("choices")->items[0].find("text")->text;
  EXPECT_EQ(text, "one two");
  EXPECT_EQ(w.content(), "one two");
  JsonValue body;
  std::string error;
  ASSERT_TRUE(parse_json(w.body(Usage{}), body, error));
  EXPECT_EQ(body.find("choices")->items[0].find("finish_reason")->text, "stop");
  EXPECT_EQ(body.find("object")->text, "text_completion");
}

}  // namespace
}  // namespace k3::serve
