#include "serve/guarded_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "serve/anthropic_response.h"
#include "serve/api_error.h"
#include "serve/client_connection.h"
#include "serve/messages_route.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSliceMs = 100;  // how often a reading connection looks at its deadline, eviction and the server's stop
constexpr int kWriteTimeoutMs = 30000;

void address(int sock, bool remote, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ip.clear();
  port = 0;
  if ((remote ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
              : ::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len)) != 0)
    return;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Service Unavailable";
  }
}

bool send_all(int sock, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(sock, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Closes our side and reads what the client still sends for a moment, so
// that the kernel does not answer it with a reset that can destroy the
// reply before the client reads it (a refused body is still arriving).
void drain_and_close(int sock) {
  ::shutdown(sock, SHUT_WR);
  const Clock::time_point end = Clock::now() + std::chrono::seconds(2);
  char buf[16384];
  size_t total = 0;
  while (Clock::now() < end && total < (size_t{256} << 20)) {
    pollfd p{sock, POLLIN, 0};
    if (::poll(&p, 1, kSliceMs) <= 0) continue;
    const ssize_t n = ::recv(sock, buf, sizeof(buf), 0);
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
}

// `target`: the refused request's, when its request line was read; the
// Messages API's paths answer in Anthropic's error shape, as their routes do.
void refuse(int sock, int status, const std::string& message, const std::string& code = "",
            std::string_view target = {}) {
  const std::string body = is_messages_path(target.substr(0, target.find('?'))) ? anthropic_error_body(status, message)
                                                                                : error_body(status, message, "", code);
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n";
  if (status == 503) head += "Retry-After: 1\r\n";
  send_all(sock, head + "\r\n" + body);
  drain_and_close(sock);
}

// One whole request, from memory, to httplib; its replies to the socket.
class FramedStream : public httplib::Stream {
 public:
  FramedStream(int sock, const std::string& request) : sock_(sock), request_(request) {}
  bool is_readable() const override { return offset_ < request_.size(); }
  bool is_writable() const override {
    pollfd p{sock_, POLLOUT, 0};
    return ::poll(&p, 1, kWriteTimeoutMs) > 0 && (p.revents & (POLLERR | POLLHUP)) == 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - offset_);
    std::memcpy(ptr, request_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      const ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(sock_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(sock_, false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  int sock_;
  const std::string& request_;
  size_t offset_ = 0;
};

std::string seconds(std::chrono::milliseconds ms) {
  const long long s = static_cast<long long>(ms.count() / 1000);
  return s * 1000 == ms.count() ? std::to_string(s) + " s" : std::to_string(ms.count()) + " ms";
}

}  // namespace

GuardedServer::GuardedServer(ConnectionOptions options) : options_(options), peers_(options.peers) {}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  std::string ip;
  int port = 0;
  address(sock, true, ip, port);
  if (std::shared_ptr<PeerTable::Connection> conn = peers_.open(ip)) {
    serve_connection(sock, *conn);
    peers_.close(conn);
  } else {
    refuse(sock, 503,
           "too many connections from " + ip + " (" + std::to_string(options_.peers.max_per_peer) +
               " at most, every one answering a request): retry later",
           "too_many_connections");
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

void GuardedServer::serve_connection(socket_t sock, PeerTable::Connection& conn) {
  RequestFramer framer(options_.framing);
  char buf[16384];
  for (size_t served = 0;;) {
    const Clock::time_point idle_since = Clock::now();
    std::optional<Clock::time_point> first_byte;
    FrameStatus status = framer.parse();
    while (status == FrameStatus::kIncomplete) {
      const Clock::time_point now = Clock::now();
      if (framer.started() && !first_byte) first_byte = now;
      if (svr_sock_ == INVALID_SOCKET || conn.evicted) {
        if (framer.started())
          refuse(sock, 503,
                 conn.evicted ? "this request was still arriving when " + conn.peer +
                                    " opened more connections than it may keep: the oldest idle one closes"
                              : "the server is shutting down",
                 conn.evicted ? "too_many_connections" : "shutting_down");
        return;
      }
      if (first_byte) {
        const auto elapsed = now - *first_byte;
        if (elapsed > options_.read_timeout || (!framer.head_done() && elapsed > options_.head_timeout)) {
          refuse(sock, 408,
                 framer.head_done() ? "the request's body did not arrive within " + seconds(options_.read_timeout)
                                    : "the request's head did not arrive within " + seconds(options_.head_timeout));
          return;
        }
      } else if (now - idle_since > options_.idle_timeout) {
        return;  // an idle keep-alive connection closes quietly
      }
      if (framer.wants_continue()) {
        if (!send_all(sock, "HTTP/1.1 100 Continue\r\n\r\n")) return;
        framer.continue_sent();
      }
      pollfd p{sock, POLLIN, 0};
      const int ready = ::poll(&p, 1, kSliceMs);
      if (ready < 0 && errno != EINTR) return;
      if (ready <= 0) continue;
      const ssize_t n = ::recv(sock, buf, sizeof(buf), 0);
      if (n == 0) return;  // closed: a request cut short is dropped
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
        return;
      }
      framer.append(buf, static_cast<size_t>(n));
      status = framer.parse();
    }
    if (status == FrameStatus::kRefused) {
      refuse(sock, framer.refusal_status(), framer.refusal(), "", framer.target());
      return;
    }
    const FramedRequest request = framer.take();
    const std::string bytes = request.head + request.body;
    const bool close = request.close || ++served >= options_.max_requests || svr_sock_ == INVALID_SOCKET;
    bool connection_closed = false, written = false;
    peers_.set_in_handler(conn, true);
    {
      ClientScope client(sock);
      FramedStream stream(sock, bytes);
      written = process_request(stream, close, connection_closed, nullptr);
    }
    peers_.set_in_handler(conn, false);
    if (!written || close || connection_closed) {
      if (framer.started()) drain_and_close(sock);  // requests pipelined after a "Connection: close"
      return;
    }
  }
}

}  // namespace k3::serve
