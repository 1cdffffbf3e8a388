// The Hub token is looked for as the Hub's own client looks for it.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "fetch/hub_token.h"

namespace {

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

class HubTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_env.clear();
    dir_ = std::filesystem::temp_directory_path() / ("k3_hub_token_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& rel, const std::string& content) {
    const std::filesystem::path p = dir_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p.string();
  }
  std::filesystem::path dir_;
};

TEST_F(HubTokenTest, FlagThenEnvironmentThenFiles) {
  const std::string hf_home_token = write("hf/token", "hf_home\n");
  g_env["HF_HOME"] = (dir_ / "hf").string();
  g_env["HF_TOKEN"] = "hf_env";
  EXPECT_EQ(k3::find_hub_token("hf_flag", fake_getenv).value, "hf_flag");
  EXPECT_EQ(k3::find_hub_token("hf_flag", fake_getenv).origin, "--token");
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "hf_env");
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).origin, "$HF_TOKEN");
  g_env["HF_TOKEN"] = "";  // set but empty counts as unset
  k3::HubToken t = k3::find_hub_token("", fake_getenv);
  EXPECT_EQ(t.value, "hf_home");  // surrounding whitespace dropped
  EXPECT_EQ(t.origin, hf_home_token);
  // $HF_TOKEN_PATH comes before $HF_HOME/token.
  g_env["HF_TOKEN_PATH"] = write("elsewhere/tok", "  hf_path \r\n");
  t = k3::find_hub_token("", fake_getenv);
  EXPECT_EQ(t.value, "hf_path");
  EXPECT_EQ(t.origin, g_env["HF_TOKEN_PATH"]);
  // A $HF_TOKEN_PATH that does not exist means no token, not a fallback.
  g_env["HF_TOKEN_PATH"] = (dir_ / "missing").string();
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "");
}

TEST_F(HubTokenTest, DefaultLocations) {
  g_env["HOME"] = (dir_ / "home").string();
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "");  // nothing saved: anonymous
  write("home/.cache/huggingface/token", "hf_default");
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "hf_default");
  g_env["XDG_CACHE_HOME"] = (dir_ / "xdg").string();
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "");
  write("xdg/huggingface/token", "hf_xdg");
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "hf_xdg");
  write("xdg/huggingface/token", "\n\n");  // an empty file is no token
  EXPECT_EQ(k3::find_hub_token("", fake_getenv).value, "");
}

}  // namespace
