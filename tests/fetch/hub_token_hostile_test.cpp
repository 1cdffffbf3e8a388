// A Hub token from any source (--token, $HF_TOKEN, a token file) is bounded
// and checked before it becomes a request header: /dev/zero used to end in
// bad_alloc, a FIFO hung forever and a multi-line file sent each line as a
// header. Errors name the source and never hold the token.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "fetch/hub_token.h"
#include "lib/test_util.h"

using namespace k3;

namespace {

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

constexpr const char* kSecret = "hf_SeCrEt";

// Finds the token with g_env; returns the exit code and the message.
ExitCode find(const std::string& flag, std::string* msg) {
  return test::code_of([&] { find_hub_token(flag, fake_getenv); }, msg);
}

}  // namespace

TEST(HubTokenHostile, DevicesAndFifosAreRefusedWithoutBeingRead) {
  const auto dir = test::fresh_dir("token-hostile-dev");
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/zero"), std::string("/dev/urandom"), fifo, dir.string()}) {
    g_env = {{"HF_TOKEN_PATH", path}};
    std::string msg;
    EXPECT_EQ(find("", &msg), ExitCode::kBadInput) << path;  // returns at once: no writer needed for the FIFO
    EXPECT_NE(msg.find("Hub token file " + path + " is not a regular file"), std::string::npos) << msg;
  }
  std::filesystem::remove_all(dir);
}

TEST(HubTokenHostile, AFileOverTheCapIsRefused) {
  const auto dir = test::fresh_dir("token-hostile-big");
  const std::string big = (dir / "token").string();
  std::ofstream(big) << std::string(kMaxHubTokenBytes + 1, 'a');
  g_env = {{"HF_HOME", dir.string()}};
  std::string msg;
  EXPECT_EQ(find("", &msg), ExitCode::kBadInput);
  EXPECT_NE(msg.find(big + " is 4097 bytes, more than a token's 4096"), std::string::npos) << msg;
  // At the cap, with the usual trailing newline, it is taken.
  std::ofstream(big, std::ios::trunc) << std::string(kMaxHubTokenBytes - 1, 'a') << "\n";
  EXPECT_EQ(find_hub_token("", fake_getenv).value.size(), kMaxHubTokenBytes - 1);
  std::filesystem::remove_all(dir);
}

TEST(HubTokenHostile, SeveralLinesOrControlCharactersAreRefusedFromEverySource) {
  const auto dir = test::fresh_dir("token-hostile-lines");
  const std::string file = (dir / "token").string();
  for (const std::string& bad :
       {std::string(kSecret) + "\nX-Injected: 1", std::string(kSecret) + "\r\nHost: evil", std::string(kSecret) + "\rx",
        std::string(kSecret) + "\tx", std::string(kSecret) + " x", std::string(kSecret) + std::string(1, '\0') + "x",
        std::string(kSecret) + "\x1b[2Jx", std::string(kSecret) + "\x7fx", std::string(kSecret) + "\xc3\xa9x"}) {
    struct Source {
      std::map<std::string, std::string> env;
      std::string flag;
      ExitCode code;
      std::string named;
    };
    std::ofstream(file, std::ios::trunc | std::ios::binary) << bad << "\n";
    for (const Source& s : {Source{{}, bad, ExitCode::kUsage, "from --token"},
                            Source{{{"HF_TOKEN", bad}}, "", ExitCode::kUsage, "from $HF_TOKEN"},
                            Source{{{"HF_TOKEN_PATH", file}}, "", ExitCode::kBadInput, "from the file " + file}}) {
      if (s.named == "from $HF_TOKEN" && bad.find('\0') != std::string::npos) continue;  // no NUL in an environment
      if (s.named == "from --token" && bad.find('\0') != std::string::npos) continue;    // nor in argv
      g_env = s.env;
      std::string msg;
      EXPECT_EQ(find(s.flag, &msg), s.code) << s.named;
      EXPECT_NE(msg.find("the Hub token " + s.named), std::string::npos) << msg;
      EXPECT_EQ(msg.find(kSecret), std::string::npos) << "the token was printed: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  // A flag or variable longer than the cap is refused as well.
  g_env = {};
  std::string msg;
  EXPECT_EQ(find(std::string(kMaxHubTokenBytes + 1, 'a'), &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("from --token is 4097 bytes"), std::string::npos) << msg;
  // A good token in a file with surrounding whitespace is still taken, trimmed.
  std::ofstream(file, std::ios::trunc) << "  " << kSecret << "\r\n";
  g_env = {{"HF_TOKEN_PATH", file}};
  EXPECT_EQ(find_hub_token("", fake_getenv).value, kSecret);
  std::filesystem::remove_all(dir);
}
