// /v1/responses read as the chat request it amounts to: input strings and
// items (messages, function_call, function_call_output, reasoning),
// instructions, function tools, tool_choice, reasoning.effort,
// max_output_tokens; previous_response_id continues a kept conversation;
// refusals name the Responses field. And the chat reply rewritten as a
// Response object and as the documented stream of events.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "serve/api_error.h"
#include "serve/json_build.h"
#include "serve/response_extras.h"
#include "serve/response_store.h"
#include "serve/responses_request.h"
#include "serve/responses_route.h"
#include "serve/responses_stream.h"

namespace k3::serve {
namespace {

const RequestLimits kLimits{16, 100, "k3-tiny"};

JsonValue parsed(const std::string& text) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(parse_json(text, v, error)) << error;
  return v;
}

int status_of(const std::string& body, const ResponseStore& store, std::string* message = nullptr,
              std::string* param = nullptr) {
  try {
    parse_responses_request(body, kLimits, store);
  } catch (const ApiError& e) {
    if (message) *message = e.what();
    if (param) *param = e.param();
    return e.status();
  }
  return 200;
}

TEST(ResponsesRequest, StringInputAndInstructions) {
  ResponseStore store;
  ResponsesRequest r = parse_responses_request(
      R"({"model":"k3-tiny","input":"Hi","instructions":"Be brief.","max_output_tokens":9,"temperature":0.5,
          "reasoning":{"effort":"low","summary":"auto"},"store":false,"stream":true})",
      kLimits, store);
  EXPECT_EQ(write_json(r.chat.find("messages") ? *r.chat.find("messages") : JsonValue()),
            write_json(parsed(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])")));
  EXPECT_EQ(r.chat.find("max_tokens")->text, "9");
  EXPECT_EQ(r.chat.find("reasoning_effort")->text, "low");
  EXPECT_EQ(r.chat.find("temperature")->number, 0.5);
  EXPECT_EQ(r.chat.find("model")->text, "k3-tiny");
  EXPECT_FALSE(r.store);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.chat.find("stream"), nullptr);  // generated whole, streamed as events after
}

TEST(ResponsesRequest, ItemsBecomeChatMessages) {
  ResponseStore store;
  ResponsesRequest r = parse_responses_request(R"({"input":[
      {"role":"developer","content":"Use tools."},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in "},{"type":"input_text","text":"Paris?"}]},
      {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Call it."}]},
      {"type":"function_call","call_id":"c1","name":"weather","arguments":"{\"city\": \"Paris\"}"},
      {"type":"function_call","call_id":"c2","name":"time","arguments":"{}"},
      {"type":"function_call_output","call_id":"c1","output":"sunny"}],
    "tools":[{"type":"function","name":"weather","description":"d","parameters":{"type":"object"}}],
    "tool_choice":{"type":"function","name":"weather"}})",
                                               kLimits, store);
  EXPECT_EQ(write_json(*r.chat.find("messages")), write_json(parsed(R"([
      {"role":"system","content":"Use tools."},
      {"role":"user","content":[{"type":"text","text":"Weather in "},{"type":"text","text":"Paris?"}]},
      {"role":"assistant","content":"","reasoning_content":"Call it.","tool_calls":[
        {"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Paris\"}"}},
        {"id":"c2","type":"function","function":{"name":"time","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"sunny"}])")));
  EXPECT_EQ(
      write_json(*r.chat.find("tools")),
      write_json(parsed(
          R"([{"type":"function","function":{"name":"weather","description":"d","parameters":{"type":"object"}}}])")));
  EXPECT_EQ(write_json(*r.chat.find("tool_choice")),
            write_json(parsed(R"({"type":"function","function":{"name":"weather"}})")));
}

TEST(ResponsesRequest, PreviousResponseContinuesTheKeptConversation) {
  ResponseStore store(2);
  store.keep("resp_a", parsed(R"([{"role":"system","content":"old"},{"role":"user","content":"Hi"},
                                  {"role":"assistant","content":"Hello"}])"));
  ResponsesRequest r =
      parse_responses_request(R"({"previous_response_id":"resp_a","input":"And now?"})", kLimits, store);
  EXPECT_EQ(r.previous_response_id, "resp_a");
  EXPECT_EQ(write_json(*r.chat.find("messages")),
            write_json(parsed(R"([{"role":"system","content":"old"},{"role":"user","content":"Hi"},
                                  {"role":"assistant","content":"Hello"},{"role":"user","content":"And now?"}])")));
  // New instructions replace the kept ones.
  r = parse_responses_request(R"({"previous_response_id":"resp_a","instructions":"new","input":"x"})", kLimits, store);
  EXPECT_EQ(r.chat.find("messages")->items[0].find("content")->text, "new");
  EXPECT_EQ(r.chat.find("messages")->items.size(), 4u);
  std::string m, p;
  EXPECT_EQ(status_of(R"({"previous_response_id":"resp_zz","input":"x"})", store, &m, &p), 404);
  EXPECT_EQ(p, "previous_response_id");
  // Bounded: the oldest goes.
  store.keep("resp_b", JsonValue::array());
  store.keep("resp_c", JsonValue::array());
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.find("resp_a"));
  EXPECT_TRUE(store.find("resp_c"));
}

// What Codex 0.171.0 sends besides the fields above (its first request,
// trimmed): include, prompt_cache_key, client_metadata, reasoning.summary,
// developer messages, a namespace of functions and a hosted web_search.
const char* kCodexRequest = R"({"model":"k3-tiny","stream":true,"tool_choice":"auto","parallel_tool_calls":true,
  "reasoning":{"summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],
  "prompt_cache_key":"01a2","client_metadata":{"x-codex-installation-id":"5a8b"},
  "tools":[{"type":"function","name":"exec_command","strict":false,"parameters":{"type":"object"}},
    {"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[
      {"type":"function","name":"close_agent","description":"Close.","strict":false,"parameters":{"type":"object"}}]},
    {"type":"web_search","external_web_access":false}],
  "input":[{"type":"message","id":"msg_1","role":"developer","content":[{"type":"input_text","text":"Be a coder."}]},
    {"type":"message","id":"msg_2","role":"user","content":[{"type":"input_text","text":"Say hi"}]}]})";

TEST(ResponsesRequest, CodexHostedToolsAreRefusedByNameOrOmitted) {
  ResponseStore store;
  std::string m, p;
  EXPECT_EQ(status_of(kCodexRequest, store, &m, &p), 400);
  EXPECT_EQ(p, "tools[2].type");
  // The refusal says how to turn the tool off in Codex and in k3-serve.
  EXPECT_NE(m.find("\"web_search\" is not served"), std::string::npos) << m;
  EXPECT_NE(m.find("web_search = \"disabled\""), std::string::npos) << m;
  EXPECT_NE(m.find("--hosted-tools omit"), std::string::npos) << m;

  const ResponsesRequest r = parse_responses_request(kCodexRequest, kLimits, store, /*omit_hosted_tools=*/true);
  EXPECT_EQ(r.extras.omitted_tools, std::vector<std::string>{"web_search"});
  EXPECT_TRUE(r.extras.encrypted_reasoning);
  EXPECT_EQ(r.extras.namespaces, (std::map<std::string, std::string>{{"close_agent", "multi_agent_v1"}}));
  // A developer message is a system turn (K3's chat format has no developer role).
  EXPECT_EQ(write_json(*r.chat.find("messages")),
            write_json(parsed(R"([{"role":"system","content":[{"type":"text","text":"Be a coder."}]},
                                  {"role":"user","content":[{"type":"text","text":"Say hi"}]}])")));
  // The namespace's function is a tool like the others; web_search is not in the prompt.
  EXPECT_EQ(write_json(*r.chat.find("tools")), write_json(parsed(R"([
      {"type":"function","function":{"name":"exec_command","parameters":{"type":"object"},"strict":false}},
      {"type":"function","function":{"name":"close_agent","description":"Close.","parameters":{"type":"object"},
       "strict":false}}])")));
  EXPECT_FALSE(r.store);
  // Only hosted tools: no tools at all.
  const ResponsesRequest only =
      parse_responses_request(R"({"input":"x","tools":[{"type":"web_search"}]})", kLimits, store, true);
  EXPECT_EQ(only.chat.find("tools"), nullptr);
  EXPECT_EQ(only.extras.omitted_tools, std::vector<std::string>{"web_search"});
}

TEST(ResponsesRequest, CodexFieldsOfTheWrongShapeAreRefused) {
  ResponseStore store;
  std::string m, p;
  EXPECT_EQ(status_of(R"({"input":"x","include":["message.output_text.logprobs"]})", store, &m, &p), 400);
  EXPECT_EQ(p, "include[0]");
  EXPECT_NE(m.find("message.output_text.logprobs"), std::string::npos) << m;
  EXPECT_EQ(status_of(R"({"input":"x","include":"reasoning.encrypted_content"})", store, &m, &p), 400);
  EXPECT_EQ(p, "include");
  EXPECT_EQ(status_of(R"({"input":"x","prompt_cache_key":3})", store, &m, &p), 400);
  EXPECT_EQ(p, "prompt_cache_key");
  EXPECT_EQ(status_of(R"({"input":"x","client_metadata":"a"})", store, &m, &p), 400);
  EXPECT_EQ(p, "client_metadata");
  EXPECT_EQ(status_of(R"({"input":"x","reasoning":{"summary":"long"}})", store, &m, &p), 400);
  EXPECT_EQ(p, "reasoning.summary");
  EXPECT_EQ(status_of(R"({"input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"web_search"}]}]})",
                      store, &m, &p),
            400);
  EXPECT_EQ(p, "tools[0].tools[0].type");
  EXPECT_EQ(status_of(R"({"input":[{"type":"reasoning","encrypted_content":"gAAAAB"},{"role":"user","content":"x"}]})",
                      store, &m, &p),
            400);
  EXPECT_EQ(p, "input[0].encrypted_content");
  EXPECT_EQ(status_of(R"({"input":"x","include":[],"prompt_cache_key":"k","client_metadata":{},
                          "reasoning":{"summary":null}})",
                      store),
            200);
}

TEST(ResponsesRequest, EncryptedReasoningIsReadBackExactly) {
  // Every byte value, UTF-8 and JSON-special characters survive the trip.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (const std::string& text : {std::string(), std::string("Plan: \"ls\" \u00e9\n\t{}"), all}) {
    const std::string sealed = encrypted_reasoning(text);
    if (text.size() > 2) EXPECT_EQ(sealed.find(text), std::string::npos);  // not the text in the clear
    EXPECT_EQ(reasoning_of(sealed), text);
  }
  EXPECT_EQ(encrypted_reasoning("Hi"), "k3r1:4869");
  EXPECT_FALSE(reasoning_of("k3r1:486"));   // odd length
  EXPECT_FALSE(reasoning_of("k3r1:48g9"));  // not hex
  EXPECT_FALSE(reasoning_of("4869"));       // no tag
  // Sent back as an input item, it is the next assistant message's reasoning
  // (the summary, a client's rewrite of it, does not win).
  ResponseStore store;
  const std::string body = R"({"input":[{"role":"user","content":"Hi"},
      {"type":"reasoning","summary":[{"type":"summary_text","text":"other"}],"encrypted_content":")" +
                           encrypted_reasoning("Think \"first\".") + R"("},
      {"role":"assistant","content":"Hello"}]})";
  const ResponsesRequest r = parse_responses_request(body, kLimits, store);
  EXPECT_EQ(r.chat.find("messages")->items[1].find("reasoning_content")->text, "Think \"first\".");
}

TEST(ResponsesRequest, RefusalsNameTheResponsesField) {
  ResponseStore store;
  std::string m, p;
  EXPECT_EQ(status_of(R"({})", store, &m, &p), 400);
  EXPECT_EQ(p, "input");
  EXPECT_EQ(status_of(R"({"input":"x","truncation":"auto"})", store, &m, &p), 400);
  EXPECT_EQ(p, "truncation");
  EXPECT_EQ(m.rfind("truncation: is not supported", 0), 0u) << m;
  EXPECT_EQ(status_of(R"({"input":[{"type":"input_image","image_url":"x"}]})", store, &m, &p), 400);
  EXPECT_EQ(p, "input[0].type");
  EXPECT_EQ(status_of(R"({"input":[{"role":"user","content":[{"type":"input_image"}]}]})", store, &m, &p), 400);
  EXPECT_EQ(p, "input[0].content[0].type");
  EXPECT_EQ(status_of(R"({"input":"x","tools":[{"type":"web_search"}]})", store, &m, &p), 400);
  EXPECT_EQ(p, "tools[0].type");
  EXPECT_EQ(status_of(R"({"input":"x","reasoning":{"effort":"low","generate_summary":true}})", store, &m, &p), 400);
  EXPECT_EQ(p, "reasoning.generate_summary");
  EXPECT_EQ(status_of(R"({"input":"x","text":{"format":{"type":"json_object"}}})", store, &m, &p), 400);
  EXPECT_EQ(p, "text");
  EXPECT_EQ(status_of(R"({"input":"x","store":"yes"})", store, &m, &p), 400);
  EXPECT_EQ(p, "store");
  EXPECT_EQ(status_of(R"({"input":"x","parallel_tool_calls":false})", store, &m, &p), 400);
  EXPECT_EQ(status_of(R"({"input":[]})", store, &m, &p), 400);
  EXPECT_EQ(status_of(R"({"input":"x","text":{"format":{"type":"text"}},"parallel_tool_calls":true})", store), 200);
}

const char* kChatReply = R"({"id":"chatcmpl-abc","object":"chat.completion","created":7,"model":"k3-tiny",
  "choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny.","reasoning_content":"Look.",
    "tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Paris\"}"}}]},
    "logprobs":null,"finish_reason":"tool_calls"}],
  "usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":4}}})";

TEST(ResponsesReply, ChatReplyAsAResponse) {
  const JsonValue r = response_from_chat(parsed(kChatReply), "resp_prev", true);
  EXPECT_EQ(write_json(r), write_json(parsed(R"({"id":"resp_abc","object":"response","created_at":7,
    "status":"completed","error":null,"incomplete_details":null,"model":"k3-tiny","output":[
      {"type":"reasoning","id":"rs_abc","summary":[{"type":"summary_text","text":"Look."}]},
      {"type":"message","id":"msg_abc","status":"completed","role":"assistant",
       "content":[{"type":"output_text","text":"It is sunny.","annotations":[]}]},
      {"type":"function_call","id":"fc_abc_0","call_id":"call_1","name":"weather",
       "arguments":"{\"city\": \"Paris\"}","status":"completed"}],
    "parallel_tool_calls":true,"previous_response_id":"resp_prev","store":true,
    "usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},"output_tokens":5,
             "output_tokens_details":{"reasoning_tokens":0},"total_tokens":17}})")));
  JsonValue cut = parsed(kChatReply);
  const_cast<JsonValue&>(*cut.find("choices")->items[0].find("finish_reason")) = JsonValue::string("length");
  const JsonValue c = response_from_chat(cut, "", false);
  EXPECT_EQ(c.find("status")->text, "incomplete");
  EXPECT_EQ(c.find("incomplete_details")->find("reason")->text, "max_output_tokens");
  EXPECT_TRUE(c.find("previous_response_id")->is_null());
}

// kChatReply as the chat route streams it, with a prefill comment.
std::string chat_stream() {
  const std::string head = R"({"id":"chatcmpl-abc","object":"chat.completion.chunk","created":7,"model":"k3-tiny",)";
  auto chunk = [&](const std::string& delta, const char* finish) {
    return "data: " + head + R"("choices":[{"index":0,"delta":)" + delta + R"(,"logprobs":null,"finish_reason":)" +
           finish + "}]}\n\n";
  };
  return ": prefill 3/3\n\n" + chunk(R"({"role":"assistant","content":""})", "null") +
         chunk(R"({"reasoning_content":"Lo"})", "null") + chunk(R"({"reasoning_content":"ok."})", "null") +
         chunk(R"({"content":"It is "})", "null") + chunk(R"({"content":"sunny."})", "null") +
         chunk(R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather",)"
               R"("arguments":"{\"city\": \"Paris\"}"}}]})",
               "null") +
         chunk("{}", R"("tool_calls")") + "data: " + head +
         R"("choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,)"
         R"("prompt_tokens_details":{"cached_tokens":4}}})" +
         "\n\ndata: [DONE]\n\n";
}

TEST(ResponsesStream, EventsAsTheChunksComeAndTheSameResponse) {
  // Fed in pieces of 7 bytes: events come out as soon as a chunk is whole.
  ResponsesStream stream("", true);
  const std::string chat = chat_stream();
  std::string events;
  for (size_t i = 0; i < chat.size(); i += 7) events += stream.push(std::string_view(chat).substr(i, 7));
  std::vector<std::string> types;
  int64_t expected_sequence = 0;
  size_t at = 0;
  std::string text, reasoning;
  JsonValue last;
  while ((at = events.find("data: ", at)) != std::string::npos) {
    const size_t end = events.find("\n\n", at);
    last = parsed(events.substr(at + 6, end - at - 6));
    types.push_back(last.find("type")->text);
    EXPECT_EQ(last.find("sequence_number")->text, std::to_string(expected_sequence++));
    EXPECT_NE(events.rfind("event: " + types.back() + "\n", at), std::string::npos);
    if (types.back() == "response.output_text.delta") text += last.find("delta")->text;
    if (types.back() == "response.reasoning_summary_text.delta") reasoning += last.find("delta")->text;
    at = end;
  }
  EXPECT_EQ(types, (std::vector<std::string>{"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.reasoning_summary_part.added",
                                             "response.reasoning_summary_text.delta",
                                             "response.reasoning_summary_text.delta",
                                             "response.reasoning_summary_text.done",
                                             "response.reasoning_summary_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"}));
  EXPECT_EQ(text, "It is sunny.");
  EXPECT_EQ(reasoning, "Look.");
  // The completed response is the non-streamed one.
  EXPECT_EQ(write_json(*last.find("response")), write_json(response_from_chat(parsed(kChatReply), "", true)));
  EXPECT_FALSE(stream.failed());
}

TEST(ResponsesStream, CodexExtrasInTheStreamAndTheWholeReply) {
  ResponseExtras extras;
  extras.encrypted_reasoning = true;
  extras.namespaces["weather"] = "forecasts";
  extras.omitted_tools = {"web_search"};
  const JsonValue whole = response_from_chat(parsed(kChatReply), "", false, extras);
  const JsonValue& output = *whole.find("output");
  EXPECT_EQ(output.items[0].find("encrypted_content")->text, encrypted_reasoning("Look."));
  EXPECT_EQ(output.items[2].find("name")->text, "weather");
  EXPECT_EQ(output.items[2].find("namespace")->text, "forecasts");
  EXPECT_EQ(write_json(*whole.find("omitted_tools")), R"(["web_search"])");
  // Without them, none of the three fields.
  const JsonValue plain = response_from_chat(parsed(kChatReply), "", false);
  EXPECT_EQ(plain.find("output")->items[0].find("encrypted_content"), nullptr);
  EXPECT_EQ(plain.find("output")->items[2].find("namespace"), nullptr);
  EXPECT_EQ(plain.find("omitted_tools"), nullptr);

  ResponsesStream stream("", false, extras);
  const std::string events = stream.push(chat_stream());
  // The reasoning item's done event carries it, and the completed response is the whole reply.
  const size_t done = events.find("response.output_item.done");
  ASSERT_NE(done, std::string::npos);
  EXPECT_NE(events.substr(done, events.find("\n\n", done) - done).find(encrypted_reasoning("Look.")),
            std::string::npos);
  const size_t completed = events.rfind("data: ");
  const JsonValue last = parsed(events.substr(completed + 6, events.find("\n\n", completed) - completed - 6));
  EXPECT_EQ(write_json(*last.find("response")), write_json(whole));
}

TEST(ResponsesStream, AnErrorChunkIsAnErrorEvent) {
  ResponsesStream stream("", true);
  const std::string events =
      stream.push(R"(data: {"error":{"message":"generation failed: x","type":"server_error","param":null,"code":null}})"
                  "\n\ndata: [DONE]\n\n");
  EXPECT_TRUE(stream.failed());
  EXPECT_NE(events.find("event: error\n"), std::string::npos);
  EXPECT_NE(events.find("generation failed: x"), std::string::npos);
  EXPECT_EQ(events.find("response.completed"), std::string::npos);
  EXPECT_TRUE(stream.chat().is_null());
}

}  // namespace
}  // namespace k3::serve
