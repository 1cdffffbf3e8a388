// k3-serve's request log: one line per request, except a monitor's
// successful poll (GET /health or GET /metrics answered 200), which would
// otherwise fill the log of a server polled every second. A failed poll, a
// poll by another method, and a successful GET of any other path each get
// their line.
#include "serve/request_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace k3::serve {
namespace {

// The log text one request writes: begin(), then end() into a temporary file.
std::string logged(const std::string& method, const std::string& path, int status) {
  ServeMetrics metrics;
  std::FILE* out = std::tmpfile();
  EXPECT_NE(out, nullptr);
  request_log::begin();
  request_log::end(method, path, status, metrics, out);
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text += static_cast<char>(c);
  std::fclose(out);
  return text;
}

TEST(RequestLog, SuccessfulPollsWriteNoLine) {
  EXPECT_EQ(logged("GET", "/health", 200), "");
  EXPECT_EQ(logged("GET", "/metrics", 200), "");
}

TEST(RequestLog, FailedPollsAreLogged) {
  EXPECT_EQ(logged("GET", "/health", 503).rfind("k3-serve: GET /health 503 total=", 0), 0u);
  EXPECT_EQ(logged("GET", "/metrics", 401).rfind("k3-serve: GET /metrics 401 total=", 0), 0u);
}

TEST(RequestLog, OtherRequestsAreLogged) {
  EXPECT_EQ(logged("POST", "/health", 404).rfind("k3-serve: POST /health 404 total=", 0), 0u);
  EXPECT_EQ(logged("HEAD", "/health", 200).rfind("k3-serve: HEAD /health 200 total=", 0), 0u);
  EXPECT_EQ(logged("GET", "/v1/models", 200).rfind("k3-serve: GET /v1/models 200 total=", 0), 0u);
  EXPECT_EQ(logged("GET", "/healthz", 200).rfind("k3-serve: GET /healthz 200 total=", 0), 0u);
  EXPECT_EQ(logged("GET", "/", 200).rfind("k3-serve: GET / 200 total=", 0), 0u);
}

TEST(RequestLog, EachLoggedRequestIsOneLine) {
  const std::string text = logged("GET", "/health", 503);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

}  // namespace
}  // namespace k3::serve
