// The reply parser: an assistant message rendered by the XTML renderer, its
// ids from <|open|>think<|sep|> onward fed back as if generated, parses to
// the same message, with every piece of streamed text in the right channel;
// malformed replies give the parts read so far and a problem naming what.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/chat_request.h"
#include "chat/python_json.h"
#include "chat/reply_parser.h"
#include "chat/xtml_renderer.h"
#include "tokenizer/tokenizer.h"

namespace {

using k3::TokenId;

const k3::Tokenizer& tiny() {
  static const k3::Tokenizer* t = new k3::Tokenizer(k3::Tokenizer::load(std::string(K3_TEST_DATA) + "/k3-tiny"));
  return *t;
}

const char* kAssistant =
    R"({"role":"assistant","reasoning_content":"Two tools: search, then calc.\n<|close|>think is text",
  "content":"Let me look that up — «ok» [EOS].","tool_calls":[
  {"id":"c1","type":"function","function":{"name":"search","arguments":{"q":"kimi \"k3\"","limit":5,"exact":true,
    "lang":null,"ratio":0.25,"big":1e+20,"tags":["a","b"],"opts":{"z":1,"a":[1.0,2]}}}},
  {"id":"c2","type":"function","function":{"name":"calc","arguments":"{not json"}}]})";

// The ids of the assistant message from its <|open|>think<|sep|> on.
std::vector<TokenId> generated_part(const std::string& assistant, bool thinking) {
  const std::string req = std::string("{\"thinking\":") + (thinking ? "true" : "false") +
                          ",\"add_generation_prompt\":false,\"messages\":[{\"role\":\"user\",\"content\":\"q\"}," +
                          assistant + "]}";
  const k3::RenderedChat r = k3::render_chat(k3::parse_chat_request(req));
  std::vector<TokenId> ids;
  size_t start = 0;
  const std::string channel = thinking ? "think" : "response";
  for (size_t i = 0; i < r.segments.size(); ++i) {
    if (start == 0 && i > 0 && r.segments[i].text == channel && r.segments[i - 1].markup) start = ids.size() - 1;
    k3::encode_segments(tiny(), {r.segments[i]}, ids);
  }
  return std::vector<TokenId>(ids.begin() + static_cast<ptrdiff_t>(start), ids.end());
}

std::string calls_json(const k3::ChatMessage& m) {
  std::string out;
  for (const k3::ToolCall& c : m.tool_calls)
    out += c.name + (c.raw ? " raw " + c.raw_arguments : " " + k3::python_json_dumps(c.arguments)) + "\n";
  return out;
}

k3::ChatMessage original() {
  return k3::parse_chat_request(std::string("{\"messages\":[") + kAssistant + "]}").messages[0];
}

TEST(ReplyParser, RenderedAssistantMessageParsesBackToTheSameMessage) {
  std::vector<TokenId> ids = generated_part(kAssistant, true);
  ASSERT_EQ(ids.front(), tiny().vocab().special_id("<|open|>"));
  ids.push_back(tiny().vocab().eos_id());  // the stop id after <|end_of_msg|> is ignored too
  k3::ReplyParser parser(tiny().vocab(), true);
  std::vector<k3::ReplyPiece> pieces;
  for (TokenId id : ids) parser.push(id, pieces);
  const k3::ParsedReply reply = parser.finish(pieces);
  EXPECT_TRUE(reply.ok()) << reply.problem;
  const k3::ChatMessage want = original();
  EXPECT_EQ(reply.message.role, "assistant");
  EXPECT_EQ(reply.message.reasoning_content, want.reasoning_content);
  ASSERT_EQ(reply.message.content.size(), 1u);
  EXPECT_EQ(reply.message.content[0], want.content[0]);
  EXPECT_EQ(calls_json(reply.message), calls_json(want));
  EXPECT_EQ(k3::python_json_dumps(reply.message.tool_calls[0].arguments),
            R"({"q": "kimi \"k3\"", "limit": 5, "exact": true, "lang": null, "ratio": 0.25, "big": 1e+20, )"
            R"("tags": ["a", "b"], "opts": {"z": 1, "a": [1.0, 2]}})");
  // Streamed pieces: each channel's text in order.
  std::string think, response, tools;
  for (const auto& p : pieces)
    (p.channel == k3::ReplyChannel::kThink      ? think
     : p.channel == k3::ReplyChannel::kResponse ? response
                                                : tools) += p.text;
  EXPECT_EQ(think, *want.reasoning_content);
  EXPECT_EQ(response, want.content[0]);
  EXPECT_EQ(tools,
            "search(q=kimi \"k3\", limit=5, exact=true, lang=null, ratio=0.25, big=1e+20, tags=[\"a\", \"b\"], "
            "opts={\"z\": 1, \"a\": [1.0, 2]})\ncalc({not json)\n");
  // Rendering the parsed message again gives the same ids.
  k3::ChatMessage back = reply.message;
  for (size_t i = 0; i < back.tool_calls.size(); ++i) back.tool_calls[i].id = want.tool_calls[i].id;
  const std::string again = k3::python_json_dumps(k3::chat_message_json(back));
  std::vector<TokenId> ids2 = generated_part(again, true);
  ids.pop_back();
  EXPECT_EQ(ids2, ids);
}

TEST(ReplyParser, WithoutThinkingTheReplyStartsInTheResponse) {
  const std::string msg = R"({"role":"assistant","content":"plain answer"})";
  const std::vector<TokenId> ids = generated_part(msg, false);
  const k3::ParsedReply r = k3::parse_reply(tiny().vocab(), ids, false);
  EXPECT_TRUE(r.ok()) << r.problem;
  EXPECT_EQ(r.message.content, std::vector<std::string>{"plain answer"});
  EXPECT_FALSE(r.message.reasoning_content.has_value());
  // Without the leading <|open|>response<|sep|> (the prompt already has it): the same.
  const k3::ParsedReply r2 = k3::parse_reply(tiny().vocab(), std::vector<TokenId>(ids.begin() + 3, ids.end()), false);
  EXPECT_TRUE(r2.ok()) << r2.problem;
  EXPECT_EQ(r2.message.content, r.message.content);
}

TEST(ReplyParser, TruncatedReplyKeepsWhatWasReadAndSaysSo) {
  const std::vector<TokenId> ids = generated_part(R"({"role":"assistant","reasoning_content":"think first",
      "content":"The answer is forty-two, as everyone knows."})",
                                                  true);
  // Cut inside the response text.
  const std::vector<TokenId> cut(ids.begin(), ids.end() - 12);
  const k3::ParsedReply r = k3::parse_reply(tiny().vocab(), cut, true);
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.problem.find("in the response channel without <|close|>message<|sep|>"), std::string::npos) << r.problem;
  EXPECT_EQ(r.message.reasoning_content, "think first");
  ASSERT_EQ(r.message.content.size(), 1u);
  EXPECT_FALSE(r.message.content[0].empty());
  EXPECT_EQ(std::string("The answer is forty-two, as everyone knows.").rfind(r.message.content[0], 0), 0u);
  // Cut inside the reasoning.
  const k3::ParsedReply t = k3::parse_reply(tiny().vocab(), std::vector<TokenId>(ids.begin(), ids.begin() + 5), true);
  EXPECT_NE(t.problem.find("in the think channel"), std::string::npos) << t.problem;
  EXPECT_FALSE(t.message.reasoning_content->empty());
}

TEST(ReplyParser, ControlTokenInsideContentIsAProblem) {
  std::vector<TokenId> ids =
      generated_part(R"({"role":"assistant","reasoning_content":"r","content":"abc def"})", true);
  // A [BOS] inside the response text.
  const TokenId bos = tiny().vocab().bos_id();
  size_t at = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    if (tiny().vocab().bytes(ids[i]) == " def") at = i;
  ASSERT_GT(at, 0u);
  ids.insert(ids.begin() + static_cast<ptrdiff_t>(at), bos);
  const k3::ParsedReply r = k3::parse_reply(tiny().vocab(), ids, true);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.problem.find("control token [BOS] in the response channel"), std::string::npos) << r.problem;
  EXPECT_EQ(r.message.content, std::vector<std::string>{"abc"});
  // A stop id before the message closes.
  std::vector<TokenId> early = generated_part(R"({"role":"assistant","content":"x"})", true);
  // Drop <|close|>message<|sep|><|end_of_msg|>.
  const TokenId close = tiny().vocab().special_id("<|close|>");
  while (early.back() != close) early.pop_back();
  early.pop_back();
  early.push_back(tiny().vocab().special_id("<|end_of_msg|>"));
  const k3::ParsedReply e = k3::parse_reply(tiny().vocab(), early, true);
  EXPECT_NE(e.problem.find("the reply ended (<|end_of_msg|>) after the response channel"), std::string::npos)
      << e.problem;
  EXPECT_EQ(e.message.content, std::vector<std::string>{"x"});
  // A tag out of place.
  std::vector<TokenId> bad = tiny().encode("<|open|>tools<|sep|>", true);
  const k3::ParsedReply b = k3::parse_reply(tiny().vocab(), bad, true);
  EXPECT_NE(b.problem.find("unexpected <|open|>tools<|sep|> in the think channel"), std::string::npos) << b.problem;
}

TEST(ReplyParser, TagHeaders) {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  ASSERT_TRUE(k3::parse_tag_header("argument key=\"a &quot;b&quot; &amp;amp;\" type=\"string\"", name, attrs));
  EXPECT_EQ(name, "argument");
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(attrs[0].second, "a \"b\" &amp;");
  EXPECT_FALSE(k3::parse_tag_header("call tool=x", name, attrs));
}

}  // namespace
