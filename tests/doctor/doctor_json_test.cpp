// k3-doctor --json: valid JSON (parsed with simdjson), the same keys in the
// same order on every run, an exit status that agrees with the document, and
// --root reading a recorded /proc and /sys tree.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/json_value.h"

namespace {
const std::string kBin = std::string(K3_BIN_DIR) + "/k3-doctor";
const std::string kData = std::string(K3_TEST_DATA);

struct ToolRun {
  std::string out;
  int status = -1;
};

ToolRun run(const std::string& args) {
  ToolRun r;
  FILE* p = ::popen((kBin + " " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Every key path in document order ("sections.cpu[0].name", ...).
void key_paths(simdjson::dom::element e, const std::string& at, std::vector<std::string>* out) {
  simdjson::dom::object obj;
  simdjson::dom::array arr;
  if (!e.get_object().get(obj)) {
    for (auto field : obj) {
      std::string path = at + "." + std::string(field.key);
      out->push_back(path);
      key_paths(field.value, path, out);
    }
  } else if (!e.get_array().get(arr)) {
    size_t i = 0;
    for (auto item : arr) key_paths(item, at + "[" + std::to_string(i++) + "]", out);
  }
}

std::vector<std::string> parse_keys(const std::string& text, simdjson::dom::parser& parser,
                                    simdjson::dom::element* root) {
  std::vector<std::string> keys;
  auto err = parser.parse(text).get(*root);
  EXPECT_FALSE(err) << simdjson::error_message(err) << "\n" << text;
  if (!err) key_paths(*root, "", &keys);
  return keys;
}
}  // namespace

TEST(DoctorJson, ValidAndStableAcrossRuns) {
  const std::string args = "--json --model " + kData + "/k3-tiny --trunk " + kData + "/k3-tiny --probe-seconds 0.2";
  ToolRun a = run(args), b = run(args);
  simdjson::dom::parser pa, pb;
  simdjson::dom::element ra, rb;
  std::vector<std::string> ka = parse_keys(a.out, pa, &ra), kb = parse_keys(b.out, pb, &rb);
  ASSERT_FALSE(ka.empty());
  EXPECT_EQ(ka, kb);
  int64_t code = -1;
  ASSERT_FALSE(ra["exit_code"].get_int64().get(code));
  EXPECT_EQ(code, a.status);
  EXPECT_TRUE(a.status == 0 || a.status == 10 || a.status == 11) << a.status;
  for (const char* section : {"cpu", "memory", "storage", "checkpoint", "forecast"}) {
    simdjson::dom::array checks;
    ASSERT_FALSE(ra["sections"][section].get_array().get(checks)) << section;
    EXPECT_GT(checks.size(), 0u) << section;
    for (auto c : checks) {
      std::string_view status;
      ASSERT_FALSE(c["status"].get_string().get(status));
      EXPECT_TRUE(status == "OK" || status == "WARN" || status == "FAIL") << status;
    }
  }
  // The tiny checkpoint opens: 5 shards.
  uint64_t shards = 0;
  ASSERT_FALSE(ra["sections"]["checkpoint"].at(0)["details"]["shards"].get_uint64().get(shards));
  EXPECT_EQ(shards, 5u);
}

TEST(DoctorJson, RecordedRootDrivesMemoryAndCpu) {
  ToolRun r = run("--json --no-probe --root " + kData + "/doctor/v2-container");
  simdjson::dom::parser p;
  simdjson::dom::element root;
  parse_keys(r.out, p, &root);
  std::string_view root_dir;
  ASSERT_FALSE(root["root"].get_string().get(root_dir));
  EXPECT_EQ(root_dir, kData + "/doctor/v2-container");
  uint64_t usable = 0;
  ASSERT_FALSE(root["sections"]["memory"].at(2)["details"]["usable_bytes"].get_uint64().get(usable));
  EXPECT_EQ(usable, uint64_t{8} << 30);  // memory.max, below MemAvailable
  std::string_view path;
  ASSERT_FALSE(root["sections"]["cpu"].at(1)["details"]["kernel_path"].get_string().get(path));
  EXPECT_EQ(path, "AVX3");
  std::string_view thp;
  ASSERT_FALSE(root["sections"]["memory"].at(3)["status"].get_string().get(thp));
  EXPECT_EQ(thp, "WARN");  // transparent hugepages 'never'
  std::string_view preset;
  ASSERT_FALSE(root["sections"]["forecast"].at(0)["details"]["recommended"].get_string().get(preset));
  EXPECT_EQ(preset, "laptop");
  // No --model: the checkpoint check warns, so at best "ready with warnings".
  EXPECT_EQ(r.status, 10);  // kDoctorWarnings
}

TEST(DoctorJson, SixGiBServiceLimitRecommendsLaptop) {
  // A 6 GiB service limit: desktop (sized for 26 GB available) does not fit,
  // laptop (sized for an 8 GB machine's 5 GB available) does.
  ToolRun r = run("--json --no-probe --root " + kData + "/doctor/v2-nested");
  simdjson::dom::parser p;
  simdjson::dom::element root;
  parse_keys(r.out, p, &root);
  EXPECT_NE(r.status, 11);  // not kDoctorCannotRun
  std::string_view status, preset;
  ASSERT_FALSE(root["sections"]["forecast"].at(0)["status"].get_string().get(status));
  EXPECT_EQ(status, "OK");
  ASSERT_FALSE(root["sections"]["forecast"].at(0)["details"]["recommended"].get_string().get(preset));
  EXPECT_EQ(preset, "laptop");
}

TEST(JsonValue, EscapesAndKeepsOrder) {
  using k3::JsonValue;
  JsonValue o = JsonValue::object();
  o.set("z", "quote\" backslash\\ newline\n tab\t ctrl\x01").set("a", 1).set("n", JsonValue());
  o.set("d", 0.5).set("inf", 1.0 / 0.0).set("z", "replaced in place");
  const std::string text = o.dump(0);
  EXPECT_EQ(text, "{\"z\": \"replaced in place\", \"a\": 1, \"n\": null, \"d\": 0.5, \"inf\": null}\n");
  JsonValue s = JsonValue::object();
  s.set("k", "quote\" backslash\\ newline\n ctrl\x01");
  simdjson::dom::parser p;
  simdjson::dom::element e;
  ASSERT_FALSE(p.parse(s.dump()).get(e));
  std::string_view v;
  ASSERT_FALSE(e["k"].get_string().get(v));
  EXPECT_EQ(v, "quote\" backslash\\ newline\n ctrl\x01");
}
