// One HTTP/1.1 request cut from the bytes a connection sends, under limits,
// before cpp-httplib sees it. httplib 0.11 reads a chunked body whole
// (--max-body-mb binds Content-Length only), keeps any number of header lines,
// inflates gzip and brotli bodies without a bound and drops pipelined requests;
// k3-serve's connections (guarded_server.h) read through this framer instead
// and hand httplib one request at a time in a canonical form:
//   - the head (request line and header lines, CRLF or bare LF) at most
//     max_head_bytes and max_header_lines, else 431;
//   - the body by Content-Length or chunked, at most max_body_bytes in either
//     framing, refused as soon as a length says more (413), decoded, and
//     handed on with one Content-Length (Transfer-Encoding, Expect and the
//     original Content-Length dropped);
//   - anything ambiguous refused (400): both framings, differing lengths, a
//     header name with spaces, folded lines, bad chunk sizes; another
//     Transfer-Encoding than chunked 501, a Content-Encoding 415.
// The bytes after a request stay buffered for the next (pipelining).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::serve {

struct FramingLimits {
  size_t max_head_bytes = 64u << 10;  // request line, header lines and a chunked body's trailers
  size_t max_header_lines = 100;
  size_t max_body_bytes = 8u << 20;
};

enum class FrameStatus {
  kIncomplete,  // more bytes are needed
  kComplete,    // take() the request
  kRefused,     // refusal_status() and refusal(): the connection answers it and closes
};

struct FramedRequest {
  std::string head;    // request line, kept headers, "Content-Length: N", blank line; CRLF throughout
  std::string body;    // decoded
  bool close = false;  // "Connection: close", or HTTP/1.0 without keep-alive
};

class RequestFramer {
 public:
  explicit RequestFramer(FramingLimits limits) : limits_(limits) {}

  // Bytes as received.
  void append(const char* data, size_t size) { in_.append(data, size); }
  // Parses what is buffered as far as it goes.
  FrameStatus parse();
  // After kComplete: the request; the framer starts on the next one.
  FramedRequest take();

  // Whether any byte of the current request has arrived (an idle
  // keep-alive connection closes quietly; a started request gets a 408).
  bool started() const { return !in_.empty() || state_ != State::kHead || head_bytes_ > 0; }
  bool head_done() const { return state_ != State::kHead; }
  // Once the head is parsed, before the body: the client sent
  // "Expect: 100-continue" and waits for "100 Continue" (sent once).
  bool wants_continue() const { return expect_continue_ && state_ != State::kHead && state_ != State::kDone; }
  void continue_sent() { expect_continue_ = false; }
  int refusal_status() const { return refusal_status_; }
  const std::string& refusal() const { return refusal_; }
  // The current request's target ("/v1/messages?beta=true") once its request
  // line is parsed, else empty: a refusal answers in that route's error shape.
  std::string_view target() const;

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailers, kDone };
  FrameStatus refuse(int status, std::string why);
  FrameStatus parse_head();
  // The request line, then each header line: kIncomplete (the head goes on)
  // or kRefused.
  FrameStatus request_line(std::string_view line);
  FrameStatus header_line(std::string_view line);
  FrameStatus parse_chunked();
  // The next line from pos_ (without its CR LF or LF); false when it is not all here.
  bool next_line(std::string_view& line, size_t max);

  FramingLimits limits_;
  std::string in_;   // received, not yet consumed
  size_t pos_ = 0;   // consumed up to here
  size_t scan_ = 0;  // searched for the line end up to here (so a slow head is not rescanned)
  State state_ = State::kHead;
  FramedRequest out_;
  size_t head_lines_ = 0, head_bytes_ = 0;
  uint64_t remaining_ = 0;  // of the Content-Length body, or of the current chunk
  uint64_t content_length_ = 0;
  bool have_length_ = false, chunked_ = false, expect_continue_ = false, http10_ = false, keep_alive_ = false;
  std::string seen_;  // "\nname\n" of the headers that may appear once
  int refusal_status_ = 0;
  std::string refusal_;
};

}  // namespace k3::serve
