// K3's chat program under structured output (chat/reply_constraint.h), on
// the tiny model's vocabulary without a model: replies made of ids the
// constraint allows, chosen at random, read back by the reply parser as a
// well-formed message whose answer (or forced call's arguments) validates.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "chat/reply_constraint.h"
#include "chat/reply_parser.h"
#include "chat/xtml_segments.h"
#include "common/error.h"
#include "constrain/json_schema_compiler.h"
#include "constrain/schema_validator.h"

namespace k3 {
namespace {

const Tokenizer& tiny() {
  static const Tokenizer* t = new Tokenizer(Tokenizer::load(std::string(K3_TEST_DATA) + "/k3-tiny"));
  return *t;
}

std::vector<int32_t> stop_ids() {
  return {static_cast<int32_t>(tiny().vocab().special_id("<|end_of_msg|>")),
          static_cast<int32_t>(tiny().vocab().eos_id())};
}

// Random allowed ids until a stop id (at most `limit`); a stop id is taken as soon as it is allowed.
std::vector<TokenId> generate(OutputConstraint& c, const VocabularyTrie& trie, uint64_t seed, size_t limit = 4000) {
  std::mt19937_64 rng(seed);
  const auto stops = stop_ids();
  std::vector<TokenId> out;
  while (out.size() < limit && !c.finished()) {
    const TokenMask& m = c.allowed();
    std::vector<int32_t> ids, closing;
    int32_t stop = -1;
    for (int64_t id = 0; id < m.size(); ++id)
      if (m.allowed(id)) {
        ids.push_back(static_cast<int32_t>(id));
        if (!trie.plain().allowed(id)) closing.push_back(static_cast<int32_t>(id));
        if (std::find(stops.begin(), stops.end(), id) != stops.end()) stop = static_cast<int32_t>(id);
      }
    // Thinking: the closing tag now and then; elsewhere ids that are not plain string text half the time.
    const std::vector<int32_t>& from = !closing.empty() && rng() % 2 ? closing : ids;
    int32_t id = stop >= 0 ? stop : from[rng() % from.size()];
    const int32_t close = static_cast<int32_t>(tiny().vocab().special_id("<|close|>"));
    if (m.allowed(close) && rng() % 8 == 0) id = close;
    c.accept(id);
    out.push_back(static_cast<TokenId>(id));
    if (id == stop) break;
  }
  return out;
}

const char* kSchema = R"({"type":"object","properties":{"city":{"type":"string","maxLength":8},"n":{"type":"integer"},)"
                      R"("ok":{"type":["boolean","null"]}},"required":["city","n","ok"],"additionalProperties":false})";

TEST(ReplyConstraint, JsonAnswersParseAndValidateWithAndWithoutThinking) {
  const ReplyConstraints rc(tiny());
  JsonValue schema;
  std::string error;
  ASSERT_TRUE(parse_json(kSchema, schema, error));
  auto g = std::make_shared<JsonGrammar>(compile_json_schema(schema));
  for (bool thinking : {false, true})
    for (uint64_t seed = 0; seed < 8; ++seed) {
      auto c = rc.json_answer(g, thinking, stop_ids());
      const std::vector<TokenId> ids = generate(*c, rc.vocabulary(), seed);
      ASSERT_TRUE(c->finished()) << "seed " << seed;
      ParsedReply r = parse_reply(tiny().vocab(), std::vector<TokenId>(ids.begin(), ids.end() - 1), thinking);
      ASSERT_TRUE(r.ok()) << r.problem;
      EXPECT_EQ(r.message.reasoning_content.has_value(), thinking);
      ASSERT_EQ(r.message.content.size(), 1u);
      JsonValue v;
      ASSERT_TRUE(parse_json(r.message.content[0], v, error)) << r.message.content[0];
      EXPECT_TRUE(test::validates(v, schema, schema)) << r.message.content[0];
      EXPECT_TRUE(r.message.tool_calls.empty());
    }
}

TEST(ReplyConstraint, ForcedToolCallsNameATool) {
  const ReplyConstraints rc(tiny());
  JsonValue request;
  std::string error;
  ASSERT_TRUE(parse_json(std::string(R"({"messages":[{"role":"user","content":"x"}],"thinking":false,)") +
                             R"("tool_choice":"required","tools":[{"type":"function","function":{"name":"get",)" +
                             R"("strict":true,"parameters":)" + kSchema +
                             R"(}},{"type":"function","function":{"name":"get_all","parameters":{"type":"object",)" +
                             R"("properties":{"q":{"type":"string","pattern":"x"}}}}}]})",
                         request, error))
      << error;
  ChatRequest req = parse_chat_request(request);
  JsonValue schema;
  ASSERT_TRUE(parse_json(kSchema, schema, error));
  std::set<std::string> named;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    auto c = rc.for_request(req, stop_ids());
    ASSERT_NE(c, nullptr);
    const std::vector<TokenId> ids = generate(*c, rc.vocabulary(), seed);
    ParsedReply r = parse_reply(tiny().vocab(), std::vector<TokenId>(ids.begin(), ids.end() - 1), false);
    ASSERT_TRUE(r.ok()) << r.problem;
    ASSERT_EQ(r.message.tool_calls.size(), 1u);
    const ToolCall& call = r.message.tool_calls[0];
    named.insert(call.name);
    ASSERT_TRUE(call.raw);
    JsonValue args;
    ASSERT_TRUE(parse_json(call.raw_arguments, args, error)) << call.raw_arguments;
    if (call.name == "get") EXPECT_TRUE(test::validates(args, schema, schema)) << call.raw_arguments;
    else EXPECT_TRUE(args.is_object()) << call.raw_arguments;  // not strict, a pattern: any object
  }
  EXPECT_EQ(named, (std::set<std::string>{"get", "get_all"}));
  // A named function: only that one.
  req.tool_choice = "function";
  req.tool_choice_name = "get_all";
  auto c = rc.for_request(req, stop_ids());
  const std::vector<TokenId> one = generate(*c, rc.vocabulary(), 1);
  ParsedReply r = parse_reply(tiny().vocab(), std::vector<TokenId>(one.begin(), one.end() - 1), false);
  ASSERT_EQ(r.message.tool_calls.size(), 1u);
  EXPECT_EQ(r.message.tool_calls[0].name, "get_all");
  req.tool_choice_name = "nope";
  EXPECT_THROW(rc.for_request(req, stop_ids()), Error);
}

TEST(ReplyConstraint, StrictToolsUnderAutoAreConstrainedOnceACallOpens) {
  const ReplyConstraints rc(tiny());
  JsonValue request;
  std::string error;
  ASSERT_TRUE(parse_json(std::string(R"({"messages":[{"role":"user","content":"x"}],"tools":[)") +
                             R"({"type":"function","function":{"name":"get","strict":true,"parameters":)" + kSchema +
                             R"(}},{"type":"function","function":{"name":"get_all","parameters":{"type":"object",)" +
                             R"("properties":{"q":{"type":"string","pattern":"x"}}}}}]})",
                         request, error))
      << error;
  ChatRequest req = parse_chat_request(request);
  ASSERT_TRUE(ReplyConstraints::constrains(req));
  JsonValue schema;
  ASSERT_TRUE(parse_json(kSchema, schema, error));
  const Vocabulary& v = tiny().vocab();
  const TokenId open = v.special_id("<|open|>");
  std::vector<TokenId> first_call_end;  // the tags that close a call in the json form
  XtmlWriter end_tags;
  end_tags.close("json");
  end_tags.close("call");
  encode_segments(tiny(), end_tags.segments(), first_call_end);
  std::set<std::string> named;
  int answers = 0, more_calls = 0;
  for (bool thinking : {false, true})
    for (uint64_t seed = 0; seed < 24; ++seed) {
      req.thinking = thinking;
      auto c = rc.for_request(req, stop_ids());
      ASSERT_NE(c, nullptr);
      std::vector<TokenId> ids = generate(*c, rc.vocabulary(), seed);
      ids.pop_back();  // the stop id
      // After the first call the reply is free: a second call opened there is
      // cut off (with the closing tags the first call's reply has).
      const auto call_end = std::search(ids.begin(), ids.end(), first_call_end.begin(), first_call_end.end());
      if (call_end != ids.end() && call_end + first_call_end.size() < ids.end() &&
          *(call_end + first_call_end.size()) == open) {
        ++more_calls;
        ids.erase(call_end + first_call_end.size(), ids.end());
        XtmlWriter w;
        w.close("tools");
        w.close("message");
        encode_segments(tiny(), w.segments(), ids);
      }
      ParsedReply r = parse_reply(v, ids, thinking);
      ASSERT_TRUE(r.ok()) << r.problem << " seed " << seed;
      EXPECT_EQ(r.message.reasoning_content.has_value(), thinking);
      if (r.message.tool_calls.empty()) {
        ++answers;
        continue;
      }
      ASSERT_EQ(r.message.tool_calls.size(), 1u);
      const ToolCall& call = r.message.tool_calls[0];
      named.insert(call.name);
      JsonValue args;
      ASSERT_TRUE(parse_json(call.raw_arguments, args, error)) << call.raw_arguments;
      if (call.name == "get") EXPECT_TRUE(test::validates(args, schema, schema)) << call.raw_arguments;
      else EXPECT_TRUE(args.is_object()) << call.raw_arguments;
    }
  // Both ways out of the answer were taken, and both tools called.
  EXPECT_GT(answers, 0);
  EXPECT_GT(more_calls, 0);
  EXPECT_EQ(named, (std::set<std::string>{"get", "get_all"}));
  // Not strict, or not auto: no constraint.
  req.tools->items[0].items[1].set("strict", false);
  EXPECT_FALSE(ReplyConstraints::constrains(req));
  EXPECT_EQ(rc.for_request(req, stop_ids()), nullptr);
  req.tools->items[0].items[1].set("strict", true);
  req.tool_choice = "none";
  EXPECT_FALSE(ReplyConstraints::constrains(req));
}

TEST(ReplyConstraint, RequestsFailClosed) {
  const ReplyConstraints rc(tiny());
  JsonValue request;
  std::string error;
  ASSERT_TRUE(parse_json(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
                         R"("json_schema":{"name":"a","schema":{"type":"string","format":"date"}}}})",
                         request, error));
  try {
    rc.for_request(parse_chat_request(request), stop_ids());
    FAIL() << "format was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("response_format.json_schema.schema: json schema: #: keyword \"format\""),
              std::string::npos)
        << e.what();
  }
  ASSERT_TRUE(parse_json(R"({"messages":[{"role":"user","content":"x"}]})", request, error));
  EXPECT_EQ(rc.for_request(parse_chat_request(request), stop_ids()), nullptr);
}

}  // namespace
}  // namespace k3
