#include "fetch/hub_token.h"

#include <fstream>
#include <sstream>

namespace k3 {

namespace {

std::string env(const char* (*getenv)(const char*), const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

// The file's content without surrounding whitespace (a trailing newline is
// usual); empty when the file is absent or unreadable.
std::string read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string();
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  const char* space = " \t\r\n";
  const size_t begin = t.find_first_not_of(space);
  if (begin == std::string::npos) return std::string();
  return t.substr(begin, t.find_last_not_of(space) - begin + 1);
}

}  // namespace

HubToken find_hub_token(const std::string& token_flag, const char* (*getenv)(const char*)) {
  if (!token_flag.empty()) return {token_flag, "--token"};
  if (std::string t = env(getenv, "HF_TOKEN"); !t.empty()) return {t, "$HF_TOKEN"};
  std::string path = env(getenv, "HF_TOKEN_PATH");
  if (path.empty()) {
    std::string home = env(getenv, "HF_HOME");
    if (home.empty()) {
      const std::string xdg = env(getenv, "XDG_CACHE_HOME");
      const std::string user_home = env(getenv, "HOME");
      if (!xdg.empty())
        home = xdg + "/huggingface";
      else if (!user_home.empty())
        home = user_home + "/.cache/huggingface";
    }
    if (!home.empty()) path = home + "/token";
  }
  if (path.empty()) return {};
  std::string t = read_token_file(path);
  if (t.empty()) return {};
  return {t, path};
}

}  // namespace k3
