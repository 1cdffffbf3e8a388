// JSON objects with many keys are read in linear time (the chat JSON value
// scanned every key on each insert: 150k keys in a chat request took 22 s,
// in a history line 20 s, in a tool call's arguments 15 s). What is bounded
// is this thread's CPU time, not the wall clock, so other work on a loaded
// machine does not count, and the bound is generous: linear placement takes
// well under a second, quadratic over 20 s. The duplicate-key rule (first
// place, last value, as Python's dict) is checked unchanged.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "chat/chat_history.h"
#include "chat/chat_request.h"
#include "common/json_value.h"
#include "lib/test_util.h"

using namespace k3;

namespace {

constexpr int kKeys = 150000;
// CPU seconds; quadratic placement took over 20 s for 150k keys in a Release build.
constexpr double kBoundSeconds = 6.0;

// {"k0":0,"k1":1,...}: `repeat` copies of every key, the later copies with the value + n.
std::string many_keys(int n, int repeat = 1) {
  std::string s = "{";
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < n; ++i) {
      if (s.size() > 1) s += ',';
      s += "\"k" + std::to_string(i) + "\":" + std::to_string(i + r * n);
    }
  return s + "}";
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The CPU time `f` takes on this thread.
template <typename F>
double seconds(F&& f) {
  const double t0 = thread_cpu_seconds();
  f();
  return thread_cpu_seconds() - t0;
}

}  // namespace

TEST(JsonManyKeys, AnObjectOf150kKeysParsesInLinearTime) {
  const std::string text = many_keys(kKeys);
  JsonValue v;
  std::string error;
  const double s = seconds([&] { ASSERT_TRUE(parse_json(text, v, error)) << error; });
  EXPECT_LT(s, kBoundSeconds);
  ASSERT_EQ(v.keys.size(), static_cast<size_t>(kKeys));
  EXPECT_EQ(v.keys[0], "k0");
  EXPECT_EQ(v.keys[kKeys - 1], "k" + std::to_string(kKeys - 1));
  EXPECT_EQ(v.find("k77777")->text, "77777");
}

TEST(JsonManyKeys, RepeatedKeysKeepTheFirstPlaceAndTheLastValue) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parse_json(R"({"a":1,"b":2,"a":3,"c":{"x":1,"x":2},"b":4})", v, error)) << error;
  ASSERT_EQ(v.keys, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(v.items[0].text, "3");
  EXPECT_EQ(v.items[1].text, "4");
  ASSERT_EQ(v.items[2].keys.size(), 1u);
  EXPECT_EQ(v.items[2].items[0].text, "2");
  // 150k keys each given three times: 150k members, each with its last value.
  const std::string text = many_keys(kKeys, 3);
  const double s = seconds([&] { ASSERT_TRUE(parse_json(text, v, error)) << error; });
  EXPECT_LT(s, kBoundSeconds);
  ASSERT_EQ(v.keys.size(), static_cast<size_t>(kKeys));
  EXPECT_EQ(v.keys[12345], "k12345");
  EXPECT_EQ(v.items[12345].text, std::to_string(12345 + 2 * kKeys));
}

TEST(JsonManyKeys, AChatRequestWithManyKeysInToolArguments) {
  // The arguments as an object and as the JSON string OpenAI clients send.
  const std::string args = many_keys(kKeys);
  std::string quoted;
  for (char c : args) quoted += c == '"' ? std::string("\\\"") : std::string(1, c);
  for (const std::string& a : {args, "\"" + quoted + "\""}) {
    const std::string request = R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"",)"
                                R"("tool_calls":[{"type":"function","function":{"name":"f","arguments":)" +
                                a + "}}]}]}";
    ChatRequest r;
    const double s = seconds([&] { r = parse_chat_request(request); });
    EXPECT_LT(s, kBoundSeconds);
    ASSERT_EQ(r.messages.size(), 2u);
    ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(r.messages[1].tool_calls[0].arguments.keys.size(), static_cast<size_t>(kKeys));
  }
  // A request object with 150k unknown keys beside its messages.
  std::string wide = many_keys(kKeys);
  wide.insert(1, R"("messages":[{"role":"user","content":"hi"}],)");
  const double s = seconds([&] { EXPECT_EQ(parse_chat_request(wide).messages.size(), 1u); });
  EXPECT_LT(s, kBoundSeconds);
}

TEST(JsonManyKeys, AHistoryLineWithManyKeys) {
  const auto dir = test::fresh_dir("json-many-keys");
  std::string line = many_keys(kKeys);
  line.insert(1, R"("role":"user","content":"hi",)");
  std::ofstream(dir / "h.jsonl") << line << "\n";
  std::vector<JsonValue> messages;
  const double s = seconds([&] { messages = load_chat_history((dir / "h.jsonl").string()); });
  EXPECT_LT(s, kBoundSeconds);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].keys.size(), static_cast<size_t>(kKeys) + 2);
  std::filesystem::remove_all(dir);
}
