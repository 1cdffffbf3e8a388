#include "serve/request_framer.h"

#include <algorithm>

namespace k3::serve {

namespace {

constexpr size_t kMaxChunkSizeLine = 1024;

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 0x20 || u >= 0x7f) return false;
  return std::string_view("\"(),/:;<=>?@[\\]{}").find(c) == std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char); }

// Field values may hold tabs and visible bytes (UTF-8 too), never other controls (a NUL would cut them in httplib).
bool is_field_value(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A header whose second copy would be read differently by two parsers: refused, not guessed.
bool must_be_single(const std::string& name) {
  return name == "host" || name == "origin" || name == "content-type" || name == "authorization";
}

std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return s.size() > 64 ? out + "..." : out;
}

}  // namespace

FrameStatus RequestFramer::refuse(int status, std::string why) {
  refusal_status_ = status;
  refusal_ = std::move(why);
  return FrameStatus::kRefused;
}

bool RequestFramer::next_line(std::string_view& line, size_t max) {
  const size_t from = std::max(scan_, pos_);
  const size_t end = in_.find('\n', from);
  if (end == std::string::npos || end - pos_ > max) {
    scan_ = in_.size();
    return false;
  }
  line = std::string_view(in_).substr(pos_, end - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos_ = end + 1;
  scan_ = pos_;
  return true;
}

FrameStatus RequestFramer::request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return refuse(400, "a request line that is not \"METHOD TARGET HTTP/1.1\": " + shown(line));
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() ||
      !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    return refuse(400, "a request line that is not \"METHOD TARGET HTTP/1.1\": " + shown(line));
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return refuse(505, "HTTP version " + shown(version) + ": only HTTP/1.1 and HTTP/1.0 are served");
  http10_ = version == "HTTP/1.0";
  out_.head.assign(line.data(), line.size()).append("\r\n");
  return FrameStatus::kIncomplete;
}

FrameStatus RequestFramer::header_line(std::string_view line) {
  if (++head_lines_ > limits_.max_header_lines)
    return refuse(431, "the request has over " + std::to_string(limits_.max_header_lines) + " header lines");
  if (line.front() == ' ' || line.front() == '\t')
    return refuse(400, "a folded header line (starting with a space): not accepted");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
    return refuse(400, "a header line that is not \"Name: value\": " + shown(line));
  const std::string_view value = trim(line.substr(colon + 1));
  if (!is_field_value(value))
    return refuse(400, "header " + std::string(line.substr(0, colon)) + ": a control character in its value");
  const std::string name = lower(line.substr(0, colon));
  if (must_be_single(name)) {
    if (seen_.find("\n" + name + "\n") != std::string::npos)
      return refuse(400, "header " + std::string(line.substr(0, colon)) + " is given twice");
    seen_ += "\n" + name + "\n";
  }
  if (name == "content-length") {
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return refuse(400, "Content-Length " + shown(value) + ": not a length");
    const uint64_t n = std::stoull(std::string(value));
    if (have_length_ && n != content_length_) return refuse(400, "two different Content-Length headers");
    have_length_ = true;
    content_length_ = n;
  } else if (name == "transfer-encoding") {
    if (lower(value) != "chunked" || chunked_)
      return refuse(501, "Transfer-Encoding " + shown(value) + ": only a single \"chunked\" is accepted");
    chunked_ = true;
  } else if (name == "expect") {
    if (lower(value) != "100-continue") return refuse(417, "Expect " + shown(value) + ": only 100-continue is known");
    expect_continue_ = true;
  } else if (name == "content-encoding") {
    if (lower(value) != "identity")
      return refuse(415, "Content-Encoding " + shown(value) + ": request bodies are taken uncompressed");
  } else {
    if (name == "connection") {
      const std::string v = lower(value);
      if (v.find("close") != std::string::npos) out_.close = true;
      if (v.find("keep-alive") != std::string::npos) keep_alive_ = true;
    }
    out_.head.append(line.data(), colon).append(": ").append(value).append("\r\n");
  }
  return FrameStatus::kIncomplete;
}

FrameStatus RequestFramer::parse_head() {
  for (;;) {
    const size_t budget = limits_.max_head_bytes - std::min(head_bytes_, limits_.max_head_bytes);
    std::string_view line;
    if (!next_line(line, budget)) {
      if (in_.size() - pos_ > budget)
        return refuse(431, "the request's head (request line and header lines) is over " +
                               std::to_string(limits_.max_head_bytes) + " bytes");
      return FrameStatus::kIncomplete;
    }
    head_bytes_ += line.size() + 2;
    if (line.find('\r') != std::string_view::npos) return refuse(400, "a bare CR inside a header line");
    if (out_.head.empty()) {
      if (line.empty()) continue;  // RFC 9112 2.2: empty lines before a request line are ignored
      if (request_line(line) == FrameStatus::kRefused) return FrameStatus::kRefused;
      continue;
    }
    if (line.empty()) break;
    if (header_line(line) == FrameStatus::kRefused) return FrameStatus::kRefused;
  }
  if (chunked_ && have_length_) return refuse(400, "both Content-Length and Transfer-Encoding: chunked");
  if (http10_ && !keep_alive_) out_.close = true;
  if (have_length_ && content_length_ > limits_.max_body_bytes)
    return refuse(413, "request body: Content-Length " + std::to_string(content_length_) + " is over the limit of " +
                           std::to_string(limits_.max_body_bytes) + " bytes");
  remaining_ = content_length_;
  state_ = chunked_ ? State::kChunkSize : content_length_ > 0 ? State::kBody : State::kDone;
  return FrameStatus::kComplete;
}

FrameStatus RequestFramer::parse_chunked() {
  for (;;) {
    std::string_view line;
    switch (state_) {
      case State::kChunkSize: {
        if (!next_line(line, kMaxChunkSizeLine)) {
          if (in_.size() - pos_ > kMaxChunkSizeLine)
            return refuse(400, "a chunk-size line over " + std::to_string(kMaxChunkSizeLine) + " bytes");
          return FrameStatus::kIncomplete;
        }
        size_t digits = 0;
        uint64_t size = 0;
        for (; digits < line.size(); ++digits) {
          const char c = line[digits];
          const int v = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
          if (v < 0) break;
          if (size > (limits_.max_body_bytes >> 4) + 1)
            size = limits_.max_body_bytes + 1;  // past the limit: stays past it
          else size = size * 16 + static_cast<uint64_t>(v);
        }
        const std::string_view rest = trim(line.substr(digits));
        if (digits == 0 || (!rest.empty() && rest.front() != ';') || !is_field_value(rest))
          return refuse(400, "a chunk-size line that is not hex digits: " + shown(line));
        if (size == 0) {
          state_ = State::kTrailers;
          break;
        }
        if (size > limits_.max_body_bytes - out_.body.size())
          return refuse(
              413, "request body: chunks of over the limit of " + std::to_string(limits_.max_body_bytes) + " bytes");
        remaining_ = size;
        state_ = State::kChunkData;
        break;
      }
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in_.size() - pos_));
        out_.body.append(in_, pos_, n);
        pos_ += n;
        remaining_ -= n;
        if (remaining_ > 0) return FrameStatus::kIncomplete;
        state_ = State::kChunkEnd;
        break;
      }
      case State::kChunkEnd: {
        if (in_.size() - pos_ < 1 || (in_[pos_] == '\r' && in_.size() - pos_ < 2)) return FrameStatus::kIncomplete;
        if (in_[pos_] == '\r') ++pos_;
        if (in_[pos_] != '\n') return refuse(400, "a chunk's data is not followed by CRLF");
        ++pos_;
        state_ = State::kChunkSize;
        break;
      }
      case State::kTrailers: {
        const size_t budget = limits_.max_head_bytes - std::min(head_bytes_, limits_.max_head_bytes);
        if (!next_line(line, budget)) {
          if (in_.size() - pos_ > budget)
            return refuse(
                431, "the request's head and trailers are over " + std::to_string(limits_.max_head_bytes) + " bytes");
          return FrameStatus::kIncomplete;
        }
        head_bytes_ += line.size() + 2;
        if (line.empty()) {
          state_ = State::kDone;
          return FrameStatus::kComplete;
        }
        if (++head_lines_ > limits_.max_header_lines)
          return refuse(431, "the request has over " + std::to_string(limits_.max_header_lines) + " header lines");
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
          return refuse(400, "a trailer line that is not \"Name: value\": " + shown(line));
        break;  // trailers are read and dropped
      }
      default: return FrameStatus::kComplete;
    }
  }
}

FrameStatus RequestFramer::parse() {
  if (refusal_status_ != 0) return FrameStatus::kRefused;
  FrameStatus status = FrameStatus::kComplete;
  if (state_ == State::kHead) status = parse_head();
  if (status == FrameStatus::kComplete && state_ == State::kBody) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in_.size() - pos_));
    out_.body.append(in_, pos_, n);
    pos_ += n;
    remaining_ -= n;
    if (remaining_ == 0) state_ = State::kDone;
  } else if (status == FrameStatus::kComplete && state_ != State::kDone) {
    status = parse_chunked();
  }
  // What is consumed goes, so a long body or a slow head is not kept twice.
  in_.erase(0, pos_);
  scan_ -= std::min(scan_, pos_);
  pos_ = 0;
  if (status == FrameStatus::kRefused) return status;
  return state_ == State::kDone ? FrameStatus::kComplete : FrameStatus::kIncomplete;
}

FramedRequest RequestFramer::take() {
  FramedRequest r = std::move(out_);
  r.head.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n\r\n");
  out_ = FramedRequest{};
  state_ = State::kHead;
  head_lines_ = head_bytes_ = 0;
  remaining_ = content_length_ = 0;
  have_length_ = chunked_ = expect_continue_ = http10_ = keep_alive_ = false;
  seen_.clear();
  return r;
}

std::string_view RequestFramer::target() const {
  const std::string_view line = std::string_view(out_.head).substr(0, out_.head.find("\r\n"));
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return {};
  const size_t sp2 = line.find(' ', sp1 + 1);
  return sp2 == std::string_view::npos ? std::string_view() : line.substr(sp1 + 1, sp2 - sp1 - 1);
}

}  // namespace k3::serve
