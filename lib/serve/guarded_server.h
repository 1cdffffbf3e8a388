// httplib::Server with k3-serve's own connection loop: each connection reads
// its requests through a RequestFramer (request_framer.h: bounded head,
// header count and body in every framing), under deadlines (the first byte
// of a request within the keep-alive time, the whole request within
// read_timeout), counted in a PeerTable (peer_table.h), and hands httplib one
// whole request at a time, so pipelined requests are answered in order.
// Refusals the framer makes are answered here (a JSON error body, then the
// connection closes); everything after the framing (routing, the
// pre-routing checks, the handlers) is httplib's as before.
#pragma once

#include <httplib.h>

#include <chrono>

#include "serve/peer_table.h"
#include "serve/request_framer.h"

namespace k3::serve {

struct ConnectionOptions {
  FramingLimits framing;
  PeerLimits peers;
  std::chrono::milliseconds read_timeout{30000};  // from a request's first byte to its last (408 after)
  std::chrono::milliseconds head_timeout{10000};  // from a request's first byte to the end of its head
  std::chrono::milliseconds idle_timeout{5000};   // keep-alive: for the first byte of the next request
  size_t max_requests = 100;                      // per connection, then it closes
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionOptions options);

 private:
  bool process_and_close_socket(socket_t sock) override;
  // One connection's requests, until it closes, misbehaves or the server stops.
  void serve_connection(socket_t sock, PeerTable::Connection& conn);
  ConnectionOptions options_;
  PeerTable peers_;
};

}  // namespace k3::serve
