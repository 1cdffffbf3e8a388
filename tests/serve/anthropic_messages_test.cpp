// Anthropic's Messages API without a server: a conversation in Anthropic's
// shape renders to exactly the prompt ids of the same conversation sent to
// /v1/chat/completions (SPEC section 5); thinking, effort and sampling map as
// documented; every field and block not implemented is refused by name (fail
// closed); the streamed events follow Anthropic's sequence and concatenate to
// the non-streamed body; a tool call K3 writes comes back as a tool_use block.
#include <gtest/gtest.h>

#include <string>

#include "chat/xtml_renderer.h"
#include "serve/anthropic_request.h"
#include "serve/anthropic_response.h"
#include "serve/api_error.h"
#include "serve/json_build.h"
#include "serve/openai_request.h"
#include "serve/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace k3::serve {
namespace {

const RequestLimits kLimits{16, 32768, "k3-tiny"};

ParsedRequest messages(const std::string& body, MessagesEndpoint e = MessagesEndpoint::kCreate) {
  return parse_anthropic_request(body, e, kLimits);
}

// The status and message of a refused body (200 when it is accepted).
int status_of(const std::string& body, std::string* message = nullptr, MessagesEndpoint e = MessagesEndpoint::kCreate) {
  try {
    messages(body, e);
  } catch (const ApiError& err) {
    if (message) *message = err.what();
    return err.status();
  }
  return 200;
}

class AnthropicTest : public ::testing::Test {
 protected:
  Tokenizer tok = Tokenizer::load(K3_TEST_DATA "/k3-tiny");
  std::vector<TokenId> ids(const ParsedRequest& r) { return encode_chat(tok, render_chat(*r.chat)).ids; }
};

// Every block kind, in both shapes: the same ids.
TEST_F(AnthropicTest, SameConversationSameIdsAsChatCompletions) {
  const ParsedRequest a = messages(R"({"model":"k3-tiny","max_tokens":50,
    "system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}},{"type":"text","text":" Use tools."}],
    "tools":[{"name":"get_weather","description":"Weather for a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
             {"name":"now","input_schema":{"type":"object","properties":{}}}],
    "tool_choice":{"type":"any"},
    "messages":[
      {"role":"user","content":"Weather in Paris and the time?"},
      {"role":"assistant","content":[{"type":"thinking","thinking":"Two calls.","signature":"abc"},{"type":"text","text":"Checking."},
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","days":2}},
        {"type":"tool_use","id":"toolu_2","name":"now","input":{}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"12:00"}],"is_error":true},
        {"type":"tool_result","tool_use_id":"toolu_1","content":"{\"temp_c\": 21}"},{"type":"text","text":"Thanks."}]},
      {"role":"system","content":"Answer in French."},{"role":"user","content":"Go on."}]})");
  const ParsedRequest o = parse_openai_request(R"({"model":"k3-tiny","max_tokens":50,
    "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
             {"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}],
    "tool_choice":"required",
    "messages":[
      {"role":"system","content":[{"type":"text","text":"Be brief."},{"type":"text","text":" Use tools."}]},
      {"role":"user","content":"Weather in Paris and the time?"},
      {"role":"assistant","reasoning_content":"Two calls.","content":"Checking.","tool_calls":[
        {"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"days\": 2}"}},
        {"id":"toolu_2","type":"function","function":{"name":"now","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"toolu_2","content":[{"type":"text","text":"Error: "},{"type":"text","text":"12:00"}]},
      {"role":"tool","tool_call_id":"toolu_1","content":"{\"temp_c\": 21}"},
      {"role":"user","content":[{"type":"text","text":"Thanks."}]},
      {"role":"system","content":"Answer in French."},{"role":"user","content":"Go on."}]})",
                                               Endpoint::kChat, kLimits);
  EXPECT_EQ(ids(a), ids(o));
  EXPECT_EQ(a.chat->tool_choice, "required");
  EXPECT_EQ(a.chat->messages.size(), 8u);
  EXPECT_EQ(a.chat->messages[3].content, (std::vector<std::string>{"Error: ", "12:00"}));
  // A named tool is OpenAI's named function; none and auto are themselves.
  const std::string conv =
      R"("model":"k3-tiny","max_tokens":9,"tools":[{"name":"now","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(messages("{" + conv + R"(,"tool_choice":{"type":"tool","name":"now"}})").chat->tool_choice, "function");
  EXPECT_EQ(messages("{" + conv + R"(,"tool_choice":{"type":"none"}})").chat->tool_choice, "none");
  EXPECT_EQ(
      messages("{" + conv + R"(,"tool_choice":{"type":"auto","disable_parallel_tool_use":false}})").chat->tool_choice,
      "auto");
}

TEST_F(AnthropicTest, ThinkingEffortAndSampling) {
  const std::string conv = R"("model":"k3-tiny","messages":[{"role":"user","content":"x"}])";
  const ParsedRequest plain = messages("{" + conv + R"(,"max_tokens":30000})");
  EXPECT_TRUE(plain.chat->thinking);  // absent: the server's default, as /v1/chat/completions
  EXPECT_EQ(plain.chat->effort, "max");
  EXPECT_FALSE(plain.stream);
  EXPECT_TRUE(plain.sampling.greedy());
  EXPECT_FALSE(messages("{" + conv + R"(,"max_tokens":9,"thinking":{"type":"disabled"}})").chat->thinking);
  for (const auto& [budget, effort] : std::vector<std::pair<int, std::string>>{
           {1024, "low"}, {4095, "low"}, {4096, "high"}, {16383, "high"}, {16384, "max"}}) {
    const ParsedRequest r =
        messages("{" + conv + R"(,"max_tokens":30000,"thinking":{"type":"enabled","budget_tokens":)" +
                 std::to_string(budget) + "}}");
    EXPECT_TRUE(r.chat->thinking);
    EXPECT_EQ(r.chat->effort, effort) << budget;
  }
  EXPECT_EQ(
      messages("{" + conv + R"(,"max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1999}})").chat->effort,
      "low");  // the budget must be under max_tokens: one under is
  const ParsedRequest adaptive =
      messages("{" + conv + R"(,"max_tokens":9,"thinking":{"type":"adaptive"},"output_config":{"effort":"medium"}})");
  EXPECT_TRUE(adaptive.chat->thinking);
  EXPECT_EQ(adaptive.chat->effort, "high");
  EXPECT_EQ(messages("{" + conv + R"(,"max_tokens":9,"output_config":{"effort":"xhigh"}})").chat->effort, "max");
  EXPECT_EQ(messages("{" + conv + R"(,"max_tokens":9,"output_config":{"effort":"low"}})").chat->effort, "low");
  const ParsedRequest s = messages("{" + conv + R"(,"max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,
      "stop_sequences":["\n\n","END"],"stream":true,"metadata":{"user_id":"u1"},"cache_control":{"type":"ephemeral"}})");
  EXPECT_EQ(s.max_tokens, 7);
  EXPECT_EQ(s.sampling.temperature, 0.5);
  EXPECT_EQ(s.sampling.top_p, 0.9);
  EXPECT_EQ(s.sampling.top_k, 40);
  EXPECT_EQ(s.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(s.stream);
  // count_tokens: the conversation only, no max_tokens.
  EXPECT_FALSE(
      messages("{" + conv + R"(,"thinking":{"type":"disabled"}})", MessagesEndpoint::kCountTokens).chat->thinking);
}

TEST_F(AnthropicTest, RefusalsNameTheField) {
  const std::string conv = R"("model":"k3-tiny","messages":[{"role":"user","content":"x"}])";
  const std::string ok = "{" + conv + R"(,"max_tokens":9)";
  struct Case {
    std::string body;
    int status;
    std::string field;  // the message starts with it
  };
  const std::vector<Case> cases = {
      {"{", 400, "request body"},
      {ok + R"(,"service_tier":"auto"})", 400, "service_tier: "},
      {ok + R"(,"seed":3})", 400, "seed: "},
      {"{" + conv + "}", 400, "max_tokens: "},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"}]})", 400, "model: "},
      {R"({"model":"claude-x","max_tokens":9,"messages":[{"role":"user","content":"x"}]})", 404, "model: "},
      {ok + R"(,"max_tokens":32769})", 400, "max_tokens: "},
      {ok + R"(,"temperature":1.5})", 400, "temperature: "},
      {ok + R"(,"top_k":0})", 400, "top_k: "},
      {ok + R"(,"top_p":0})", 400, "top_p: "},
      {ok + R"(,"stop_sequences":[""]})", 400, "stop_sequences[0]: "},
      {ok + R"(,"metadata":{"tier":"x"}})", 400, "metadata.tier: "},
      {ok + R"(,"thinking":{"type":"enabled","budget_tokens":1000}})", 400, "thinking.budget_tokens: "},
      {ok + R"(,"thinking":{"type":"enabled","budget_tokens":2000}})", 400, "thinking.budget_tokens: "},
      {"{" + conv + R"(,"max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2000}})", 400,
       "thinking.budget_tokens: "},
      {ok + R"(,"thinking":{"type":"enabled"}})", 400, "thinking.budget_tokens: "},
      {ok + R"(,"thinking":{"type":"adaptive","display":"omitted"}})", 400, "thinking.display: "},
      {ok + R"(,"thinking":{"type":"between_tools"}})", 400, "thinking.type: "},
      {ok + R"(,"output_config":{"format":{"type":"json_schema"}}})", 400, "output_config.format: "},
      {ok + R"(,"output_config":{"effort":"huge"}})", 400, "output_config.effort: "},
      {ok + R"(,"cache_control":{"type":"permanent"}})", 400, "cache_control.type: "},
      {ok + R"(,"tools":[{"type":"web_search_20250305","name":"web_search"}]})", 400, "tools[0].type: "},
      {ok + R"(,"tools":[{"name":"f"}]})", 400, "tools[0].input_schema: "},
      {ok + R"(,"tools":[{"name":"f","input_schema":{},"strict":true}]})", 400, "tools[0].strict: "},
      {ok + R"(,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool","name":"g"}})", 400,
       "tool_choice.name: "},
      {ok + R"(,"tool_choice":{"type":"any","disable_parallel_tool_use":true}})", 400,
       "tool_choice.disable_parallel_tool_use: "},
      {ok + R"(,"tool_choice":"auto"})", 400, "tool_choice: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[]})", 400, "messages: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"tool","content":"x"}]})", 400, "messages[0].role: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"system","content":[{"type":"image"}]},{"role":"user","content":"x"}]})",
       400, "messages[0].content[0].type: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":"x","name":"n"}]})", 400,
       "messages[0].name: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})",
       400, "messages[0].content[0].type: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":[]}]})", 400, "messages[0].content: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"x","extra":1}]}]})",
       400, "messages[0].content[0].extra: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure"}]})",
       400, "messages[1]: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"}]},{"role":"user","content":"y"}]})",
       400, "messages[1].content[0].type: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]})",
       400, "messages[0].content[0].tool_use_id: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t1"}]}]})",
       400, "messages[2].content[1]: "},
      {R"({"model":"k3-tiny","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{}"}]},{"role":"user","content":"y"}]})",
       400, "messages[1].content[0].input: "},
  };
  for (const Case& c : cases) {
    std::string m;
    EXPECT_EQ(status_of(c.body, &m), c.status) << c.body;
    EXPECT_EQ(m.rfind(c.field, 0), 0u) << m << " for " << c.body;
  }
  std::string m;
  EXPECT_EQ(status_of("{" + conv + R"(,"max_tokens":9})", &m, MessagesEndpoint::kCountTokens), 400);
  EXPECT_EQ(m.rfind("max_tokens: ", 0), 0u) << m;
  EXPECT_NO_THROW(check_anthropic_version(""));
  EXPECT_NO_THROW(check_anthropic_version("2023-06-01"));
  EXPECT_NO_THROW(check_anthropic_version("2026-10-21"));
  EXPECT_THROW(check_anthropic_version("2023-01-01"), ApiError);
  EXPECT_THROW(check_anthropic_version("latest"), ApiError);
}

TEST(AnthropicError, Shape) {
  EXPECT_EQ(anthropic_error_body(400, "max_tokens: missing"),
            R"({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: missing"}})");
  EXPECT_STREQ(anthropic_error_type(401), "authentication_error");
  EXPECT_STREQ(anthropic_error_type(404), "not_found_error");
  EXPECT_STREQ(anthropic_error_type(413), "request_too_large");
  EXPECT_STREQ(anthropic_error_type(429), "rate_limit_error");
  EXPECT_STREQ(anthropic_error_type(500), "api_error");
  EXPECT_STREQ(anthropic_error_type(503), "overloaded_error");
}

TEST(StopStrings, NamesTheStopReadFirst) {
  StopStrings s({"zz", "END"});
  EXPECT_EQ(s.push("abc EN"), "abc ");
  EXPECT_EQ(s.push("D zz"), "");
  EXPECT_EQ(s.matched(), "END");
}

// A server-sent event: its name and data.
struct Event {
  std::string name;
  JsonValue data;
};

std::vector<Event> parse_events(const std::vector<std::string>& chunks) {
  std::vector<Event> out;
  for (const std::string& c : chunks) {
    EXPECT_EQ(c.rfind("event: ", 0), 0u) << c;
    const size_t nl = c.find('\n');
    Event e{c.substr(7, nl - 7), JsonValue()};
    EXPECT_EQ(c.compare(nl + 1, 6, "data: "), 0) << c;
    EXPECT_EQ(c.substr(c.size() - 2), "\n\n");
    std::string error;
    EXPECT_TRUE(parse_json(c.substr(nl + 7, c.size() - nl - 9), e.data, error)) << c;
    EXPECT_EQ(e.data.find("type")->text, e.name);
    out.push_back(std::move(e));
  }
  return out;
}

class MessageWriterTest : public AnthropicTest {
 protected:
  // The reply ids K3 would write for `assistant` (an OpenAI-shaped message) after `user`.
  std::vector<int32_t> reply_ids(const std::string& user, const std::string& assistant, bool thinking) {
    const std::string head = R"({"messages":[{"role":"user","content":")" + user + "\"}]";
    const std::string flag = std::string(",\"thinking\":") + (thinking ? "true" : "false") + "}";
    const ChatPrompt prompt = encode_chat(tok, render_chat(parse_chat_request(head + flag)));
    ChatRequest with =
        parse_chat_request(R"({"messages":[{"role":"user","content":")" + user + "\"}," + assistant + "]" + flag);
    with.add_generation_prompt = false;
    const ChatPrompt all = encode_chat(tok, render_chat(with));
    std::vector<int32_t> ids(all.ids.begin() + static_cast<ptrdiff_t>(prompt.ids.size()), all.ids.end());
    ids.push_back(static_cast<int32_t>(tok.vocab().special_id("<|end_of_msg|>")));
    return ids;
  }
  std::vector<Event> run(MessageWriter& w, const std::vector<int32_t>& ids, EndReason why, const Usage& usage) {
    std::vector<std::string> chunks = w.start(Usage{usage.prompt_tokens, 0, 0});
    for (int32_t id : ids)
      for (std::string& c : w.push(id)) chunks.push_back(c);
    for (std::string& c : w.finish(why, usage)) chunks.push_back(c);
    return parse_events(chunks);
  }
};

TEST_F(MessageWriterTest, StreamedEventsEqualTheBody) {
  const std::vector<int32_t> ids =
      reply_ids("Hi", R"({"role":"assistant","reasoning_content":"Think é.","content":"Hello there, friend."})", true);
  MessageWriter w(tok.vocab(), true, {}, "msg_1", "k3-tiny");
  const Usage usage{10, static_cast<int64_t>(ids.size()), 4};
  const std::vector<Event> ev = run(w, ids, EndReason::kStop, usage);
  // The documented order: message_start, ping, each block's start/deltas/stop, message_delta, message_stop.
  std::vector<std::string> names;
  for (const Event& e : ev)
    if (names.empty() || names.back() != e.name) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "ping", "content_block_start", "content_block_delta",
                                             "content_block_stop", "content_block_start", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  std::string thinking, text, signature;
  for (const Event& e : ev) {
    if (e.name != "content_block_delta") continue;
    const JsonValue& d = *e.data.find("delta");
    const std::string& type = d.find("type")->text;
    const std::string& index = e.data.find("index")->text;
    if (type == "thinking_delta") {
      thinking += d.find("thinking")->text;
      EXPECT_EQ(index, "0");
    }
    if (type == "signature_delta") signature = d.find("signature")->text;
    if (type == "text_delta") {
      text += d.find("text")->text;
      EXPECT_EQ(index, "1");
    }
  }
  EXPECT_EQ(thinking, "Think é.");
  EXPECT_EQ(text, "Hello there, friend.");
  EXPECT_EQ(signature, "k3:unsigned");
  const JsonValue& start = *ev[0].data.find("message");
  EXPECT_EQ(start.find("id")->text, "msg_1");
  EXPECT_TRUE(start.find("stop_reason")->is_null());
  EXPECT_EQ(start.find("usage")->find("input_tokens")->text, "10");
  const JsonValue& md = ev[ev.size() - 2].data;
  EXPECT_EQ(md.find("delta")->find("stop_reason")->text, "end_turn");
  EXPECT_EQ(write_json(*md.find("usage")),
            R"({"input_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4, "output_tokens": )" +
                std::to_string(ids.size()) + "}");
  JsonValue body;
  std::string error;
  ASSERT_TRUE(parse_json(w.body(usage), body, error));
  EXPECT_EQ(body.find("type")->text, "message");
  EXPECT_EQ(body.find("role")->text, "assistant");
  EXPECT_EQ(body.find("stop_reason")->text, "end_turn");
  const JsonValue& content = *body.find("content");
  ASSERT_EQ(content.items.size(), 2u);
  EXPECT_EQ(content.items[0].find("type")->text, "thinking");
  EXPECT_EQ(content.items[0].find("thinking")->text, thinking);
  EXPECT_EQ(content.items[0].find("signature")->text, "k3:unsigned");
  EXPECT_EQ(content.items[1].find("type")->text, "text");
  EXPECT_EQ(content.items[1].find("text")->text, text);
  EXPECT_EQ(write_json(*body.find("usage")), write_json(*md.find("usage")));
}

TEST_F(MessageWriterTest, ToolUseBlocks) {
  const std::vector<int32_t> ids = reply_ids(
      "Weather?",
      R"({"role":"assistant","content":"On it.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"days\": 2}"}}]})",
      false);
  MessageWriter w(tok.vocab(), false, {}, "msg_2", "k3-tiny");
  const std::vector<Event> ev = run(w, ids, EndReason::kStop, Usage{});
  JsonValue body;
  std::string error;
  ASSERT_TRUE(parse_json(w.body(Usage{}), body, error));
  EXPECT_EQ(body.find("stop_reason")->text, "tool_use");
  const JsonValue& content = *body.find("content");
  ASSERT_EQ(content.items.size(), 2u);
  EXPECT_EQ(content.items[0].find("text")->text, "On it.");
  const JsonValue& use = content.items[1];
  EXPECT_EQ(use.find("type")->text, "tool_use");
  EXPECT_EQ(use.find("name")->text, "get_weather");
  EXPECT_EQ(use.find("id")->text.rfind("toolu_", 0), 0u);
  EXPECT_EQ(write_json(*use.find("input")), R"({"city": "Paris", "days": 2})");
  // Streamed: a tool_use start with an empty input, then the input as one input_json_delta.
  std::string partial;
  bool started = false;
  for (const Event& e : ev) {
    if (e.name == "content_block_start" && e.data.find("content_block")->find("type")->text == "tool_use") {
      started = true;
      EXPECT_EQ(e.data.find("index")->text, "1");
      EXPECT_TRUE(e.data.find("content_block")->find("input")->keys.empty());
    }
    if (e.name == "content_block_delta" && e.data.find("delta")->find("type")->text == "input_json_delta")
      partial += e.data.find("delta")->find("partial_json")->text;
  }
  EXPECT_TRUE(started);
  EXPECT_EQ(partial, R"({"city": "Paris", "days": 2})");
}

TEST_F(MessageWriterTest, StopSequenceAndMaxTokens) {
  const std::vector<int32_t> ids = reply_ids("Hi", R"({"role":"assistant","content":"one two three four"})", false);
  MessageWriter w(tok.vocab(), false, {" three"}, "msg_3", "k3-tiny");
  run(w, ids, EndReason::kCancelled, Usage{});
  EXPECT_TRUE(w.stop_sequence_matched());
  JsonValue body;
  std::string error;
  ASSERT_TRUE(parse_json(w.body(Usage{}), body, error));
  EXPECT_EQ(body.find("stop_reason")->text, "stop_sequence");
  EXPECT_EQ(body.find("stop_sequence")->text, " three");
  EXPECT_EQ(body.find("content")->items.at(0).find("text")->text, "one two");
  MessageWriter cut(tok.vocab(), false, {}, "msg_4", "k3-tiny");
  run(cut, std::vector<int32_t>(ids.begin(), ids.begin() + 3), EndReason::kLength, Usage{});
  ASSERT_TRUE(parse_json(cut.body(Usage{}), body, error));
  EXPECT_EQ(body.find("stop_reason")->text, "max_tokens");
  EXPECT_TRUE(body.find("stop_sequence")->is_null());
}

}  // namespace
}  // namespace k3::serve
