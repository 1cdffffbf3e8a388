// k3-serve's connection-level checks without a server: the request framer
// (one limit for Content-Length and chunked bodies, bounded heads, refusals
// of ambiguous framing, pipelined requests kept apart, the same result for
// any split of the bytes), the Host/Origin/Content-Type rules and the peer
// table's eviction.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "serve/peer_table.h"
#include "serve/request_framer.h"
#include "serve/request_guard.h"

namespace k3::serve {
namespace {

FramingLimits small_limits() {
  FramingLimits l;
  l.max_head_bytes = 1024;
  l.max_header_lines = 10;
  l.max_body_bytes = 100;
  return l;
}

// Feeds `bytes` `step` bytes at a time; returns the status after the last
// feed and the requests completed on the way.
FrameStatus feed(RequestFramer& f, const std::string& bytes, size_t step, std::vector<FramedRequest>& done) {
  FrameStatus s = FrameStatus::kIncomplete;
  for (size_t i = 0; i < bytes.size(); i += step) {
    f.append(bytes.data() + i, std::min(step, bytes.size() - i));
    while ((s = f.parse()) == FrameStatus::kComplete) done.push_back(f.take());
    if (s == FrameStatus::kRefused) return s;
  }
  return s;
}

int refusal(const std::string& bytes, FramingLimits limits = small_limits()) {
  RequestFramer f(limits);
  std::vector<FramedRequest> done;
  return feed(f, bytes, bytes.size(), done) == FrameStatus::kRefused ? f.refusal_status() : 0;
}

TEST(RequestFramer, ContentLengthAndChunkedGiveTheSameRequest) {
  const std::string by_length = "POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world";
  const std::string chunked =
      "POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n"
      "Trailer: x\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{3}, size_t{1000}}) {
    for (const std::string& bytes : {by_length, chunked}) {
      RequestFramer f(small_limits());
      std::vector<FramedRequest> done;
      EXPECT_EQ(feed(f, bytes, step, done), FrameStatus::kIncomplete);
      ASSERT_EQ(done.size(), 1u);
      EXPECT_EQ(done[0].body, "hello world");
      EXPECT_EQ(done[0].head, "POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n");
      EXPECT_FALSE(f.started());
    }
  }
}

TEST(RequestFramer, OneBodyLimitForEveryFraming) {
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), 413);  // refused before the body
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x')), 0);
  // Chunks adding up past the limit, each under it; and one chunk size over it, refused before its data.
  std::string many = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) many += "28\r\n" + std::string(40, 'x') + "\r\n";
  EXPECT_EQ(refusal(many), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n"), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n"), 413);
  std::string exact =
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + std::string(100, 'x') + "\r\n0\r\n\r\n";
  EXPECT_EQ(refusal(exact), 0);
}

TEST(RequestFramer, HeadBoundedInLinesAndBytes) {
  std::string lines = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 11; ++i) lines += "X-" + std::to_string(i) + ": y\r\n";
  EXPECT_EQ(refusal(lines + "\r\n"), 431);
  // Refused while still arriving: no blank line needed to see it is too long.
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a')), 431);
  EXPECT_EQ(refusal(std::string(2000, 'a')), 431);
  // Trailers count against the same bound.
  std::string trailers = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
  for (int i = 0; i < 11; ++i) trailers += "T: y\r\n";
  EXPECT_EQ(refusal(trailers + "\r\n"), 431);
}

TEST(RequestFramer, AmbiguousFramingRefused) {
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n"), 415);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nX : y\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nX: y\r\n z\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(refusal(std::string("POST / HTTP/1.1\r\nX: a\0b\r\n\r\n", 28)), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n"), 417);
}

TEST(RequestFramer, PipelinedRequestsComeApartInOrder) {
  const std::string bytes =
      "POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nxyGET /b HTTP/1.1\r\n\r\n"
      "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\nGET /d HTTP/1.0\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{7}, bytes.size()}) {
    RequestFramer f(small_limits());
    std::vector<FramedRequest> done;
    feed(f, bytes, step, done);
    ASSERT_EQ(done.size(), 4u);
    EXPECT_EQ(done[0].head.substr(0, 8), "POST /a ");
    EXPECT_EQ(done[0].body, "xy");
    EXPECT_EQ(done[1].head, "GET /b HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(done[2].body, "z");
    EXPECT_FALSE(done[2].close);
    EXPECT_TRUE(done[3].close);  // HTTP/1.0 without keep-alive
  }
}

TEST(RequestFramer, StartedOnceAHeadLineIsRead) {
  RequestFramer f(small_limits());
  EXPECT_FALSE(f.started());
  const std::string line = "GET / HTTP/1.1\r\nX-Slow: y\r\n";
  f.append(line.data(), line.size());
  EXPECT_EQ(f.parse(), FrameStatus::kIncomplete);
  EXPECT_TRUE(f.started());  // the lines read are consumed, the request is still under way (408 at its deadline)
  f.append("\r\n", 2);
  ASSERT_EQ(f.parse(), FrameStatus::kComplete);
  f.take();
  EXPECT_FALSE(f.started());
}

TEST(RequestFramer, ExpectContinueAskedOnceBeforeTheBody) {
  RequestFramer f(small_limits());
  const std::string head = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  f.append(head.data(), head.size());
  EXPECT_EQ(f.parse(), FrameStatus::kIncomplete);
  EXPECT_TRUE(f.wants_continue());
  f.continue_sent();
  EXPECT_FALSE(f.wants_continue());
  f.append("ok", 2);
  ASSERT_EQ(f.parse(), FrameStatus::kComplete);
  EXPECT_EQ(f.take().head.find("Expect"), std::string::npos);
}

TEST(RequestGuard, HostNames) {
  GuardOptions o;
  o.host = "127.0.0.1";
  for (const char* ok : {"127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:80", "127.3.4.5", "localhost."})
    EXPECT_TRUE(host_allowed(ok, o)) << ok;
  for (const char* bad : {"evil.example", "evil.example:8080", "10.0.0.1", "", "localhost:x", "[::1", "a b",
                          "localhost.evil.example", "127.0.0.1.nip.io"})
    EXPECT_FALSE(host_allowed(bad, o)) << bad;
  o.allowed_hosts = {"box.lan"};
  EXPECT_TRUE(host_allowed("box.lan:8080", o));
  EXPECT_FALSE(host_allowed("other.lan", o));
  o.host = "0.0.0.0";  // every interface: addresses are fine (no name to rebind), names still need listing
  EXPECT_TRUE(host_allowed("10.0.0.1:8080", o));
  EXPECT_FALSE(host_allowed("evil.example", o));
  o.host = "myhost.lan";
  EXPECT_TRUE(host_allowed("MyHost.lan:8080", o));
}

TEST(RequestGuard, Origins) {
  GuardOptions o;
  EXPECT_EQ(check_origin("", "127.0.0.1:8080", o), OriginVerdict::kNone);
  EXPECT_EQ(check_origin("http://127.0.0.1:8080", "127.0.0.1:8080", o), OriginVerdict::kSameOrigin);
  EXPECT_EQ(check_origin("http://localhost", "localhost:80", o), OriginVerdict::kSameOrigin);
  EXPECT_EQ(check_origin("http://127.0.0.1:9999", "127.0.0.1:8080", o), OriginVerdict::kRefused);
  EXPECT_EQ(check_origin("https://127.0.0.1:8080", "127.0.0.1:8080", o), OriginVerdict::kRefused);
  EXPECT_EQ(check_origin("null", "127.0.0.1:8080", o), OriginVerdict::kRefused);
  EXPECT_EQ(check_origin("https://evil.example", "127.0.0.1:8080", o), OriginVerdict::kRefused);
  o.cors_origins = {"https://app.example"};
  EXPECT_EQ(check_origin("https://app.example", "127.0.0.1:8080", o), OriginVerdict::kAllowed);
  EXPECT_EQ(check_origin("https://app.example.evil", "127.0.0.1:8080", o), OriginVerdict::kRefused);
  o.cors_origins = {"*"};
  EXPECT_EQ(check_origin("https://any.example", "127.0.0.1:8080", o), OriginVerdict::kAllowed);
}

TEST(RequestGuard, JsonContentType) {
  for (const char* ok : {"application/json", "Application/JSON; charset=utf-8", "application/json ;x=y"})
    EXPECT_TRUE(is_json_content_type(ok)) << ok;
  for (const char* bad : {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                          "application/jsonx", "text/plain; application/json"})
    EXPECT_FALSE(is_json_content_type(bad)) << bad;
}

TEST(PeerTable, ANewConnectionEvictsThePeersOldestIdleOne) {
  PeerTable t(PeerLimits{100, 2});
  auto a = t.open("p");
  auto b = t.open("p");
  ASSERT_TRUE(a && b);
  t.set_in_handler(*b, true);
  auto c = t.open("p");  // over p's bound: a (idle, oldest) goes
  ASSERT_TRUE(c);
  EXPECT_TRUE(a->evicted);
  EXPECT_FALSE(b->evicted);
  auto other = t.open("q");  // another peer is not touched
  ASSERT_TRUE(other);
  EXPECT_FALSE(c->evicted);
  t.set_in_handler(*c, true);
  EXPECT_EQ(t.open("p"), nullptr);  // every connection of p is answering: refused
  t.close(a);
  EXPECT_EQ(t.open_count("p"), 2u);
}

TEST(PeerTable, TheServersBoundEvictsToo) {
  PeerTable t(PeerLimits{2, 10});
  auto a = t.open("p");
  auto b = t.open("q");
  auto c = t.open("r");
  ASSERT_TRUE(c);
  EXPECT_TRUE(a->evicted);
  EXPECT_FALSE(b->evicted);
}

}  // namespace
}  // namespace k3::serve
