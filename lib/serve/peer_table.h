// The open connections of each peer address, so that one client cannot hold
// every connection k3-serve takes. A connection that would pass its peer's
// bound (or the server's) closes the oldest of that peer's connections that
// is idle or still sending its request; when every one of them is in a
// handler (a stream, a queued request), the new one is refused with 503.
// Slow senders are thus dropped oldest first, and /health from the same
// address still gets in.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>

namespace k3::serve {

struct PeerLimits {
  size_t max_connections = 1024;
  size_t max_per_peer = 256;
};

class PeerTable {
 public:
  struct Connection {
    std::string peer;
    std::chrono::steady_clock::time_point since;  // when it opened or its last request was answered
    std::atomic<bool> in_handler{false};          // a request read whole and not yet answered: not evicted
    std::atomic<bool> evicted{false};             // the connection closes at its next read slice
  };

  explicit PeerTable(PeerLimits limits) : limits_(limits) {}
  // Registers a connection from `peer`, evicting as above; nullptr when refused.
  std::shared_ptr<Connection> open(const std::string& peer);
  void close(const std::shared_ptr<Connection>& c);
  // The request on `c` is read (in a handler) or answered (idle again).
  void set_in_handler(Connection& c, bool in_handler);
  size_t open_count(const std::string& peer) const;

 private:
  // The oldest evictable connection of `peer` ("" = of any peer); nullptr when none.
  Connection* oldest_idle(const std::string& peer) const;
  PeerLimits limits_;
  mutable std::mutex mutex_;
  std::list<std::shared_ptr<Connection>> open_;
};

}  // namespace k3::serve
