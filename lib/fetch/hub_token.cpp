#include "fetch/hub_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.h"

namespace k3 {

namespace {

std::string env(const char* (*getenv)(const char*), const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(const std::string& t) {
  const char* space = " \t\r\n";
  const size_t begin = t.find_first_not_of(space);
  if (begin == std::string::npos) return std::string();
  return t.substr(begin, t.find_last_not_of(space) - begin + 1);
}

// The file's content without surrounding whitespace (a trailing newline is
// usual); empty when the file is absent. Opened without blocking (a FIFO
// would wait for a writer forever) and read only when it is a regular file
// of at most kMaxHubTokenBytes (/dev/zero would never end).
std::string read_token_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::string();
  struct stat st {};
  std::string t;
  std::string problem;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = "is not a regular file (a device, FIFO or directory cannot hold a token)";
  } else if (st.st_size > static_cast<off_t>(kMaxHubTokenBytes)) {
    problem = "is " + std::to_string(st.st_size) + " bytes, more than a token's " + std::to_string(kMaxHubTokenBytes);
  } else {
    char buf[kMaxHubTokenBytes + 1];
    size_t got = 0;
    while (got < sizeof buf) {
      const ssize_t n = ::read(fd, buf + got, sizeof buf - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got > kMaxHubTokenBytes) problem = "grew past " + std::to_string(kMaxHubTokenBytes) + " bytes while read";
    t.assign(buf, got);
  }
  ::close(fd);
  if (!problem.empty())
    throw Error(ExitCode::kBadInput,
                "Hub token file " + path + " " + problem + "; point HF_TOKEN_PATH at the file holding only the token");
  return trim(t);
}

}  // namespace

void check_hub_token(const HubToken& token) {
  const std::string& t = token.value;
  const bool from_file = token.origin != "--token" && token.origin != "$HF_TOKEN";
  const ExitCode code = from_file ? ExitCode::kBadInput : ExitCode::kUsage;
  const std::string where = from_file ? "the file " + token.origin : token.origin;
  if (t.size() > kMaxHubTokenBytes)
    throw Error(code, "the Hub token from " + where + " is " + std::to_string(t.size()) +
                          " bytes, more than a token's " + std::to_string(kMaxHubTokenBytes));
  // The token becomes an HTTP header line: a line break would start another
  // header (one request per line of a multi-line file), and other control or
  // non-ASCII bytes are never part of a Hub token.
  for (size_t i = 0; i < t.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (c == '\n' || c == '\r')
      throw Error(code, "the Hub token from " + where + " has several lines (a line break at byte " +
                            std::to_string(i) + "); it must be the token alone, on one line");
    if (c <= 0x20 || c >= 0x7f) {
      const char* what = c == ' ' ? "space" : c < 0x20 || c == 0x7f ? "control character" : "non-ASCII byte";
      throw Error(code, "the Hub token from " + where + " holds a " + what + " at byte " + std::to_string(i) +
                            "; a token is printable ASCII without spaces");
    }
  }
}

HubToken find_hub_token(const std::string& token_flag, const char* (*getenv)(const char*)) {
  HubToken found;
  if (!token_flag.empty()) {
    found = {token_flag, "--token"};
  } else if (std::string t = env(getenv, "HF_TOKEN"); !t.empty()) {
    found = {t, "$HF_TOKEN"};
  } else {
    std::string path = env(getenv, "HF_TOKEN_PATH");
    if (path.empty()) {
      std::string home = env(getenv, "HF_HOME");
      if (home.empty()) {
        const std::string xdg = env(getenv, "XDG_CACHE_HOME");
        const std::string user_home = env(getenv, "HOME");
        if (!xdg.empty()) home = xdg + "/huggingface";
        else if (!user_home.empty()) home = user_home + "/.cache/huggingface";
      }
      if (!home.empty()) path = home + "/token";
    }
    if (path.empty()) return {};
    std::string from_file = read_token_file(path);
    if (from_file.empty()) return {};
    found = {from_file, path};
  }
  check_hub_token(found);
  return found;
}

}  // namespace k3
