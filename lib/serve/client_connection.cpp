#include "serve/client_connection.h"

#include <poll.h>

namespace k3::serve {

namespace {
thread_local int current_socket = -1;
}

bool client_gone() {
  if (current_socket < 0) return false;
  pollfd p{current_socket, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

ClientScope::ClientScope(int socket) : previous_(current_socket) { current_socket = socket; }
ClientScope::~ClientScope() { current_socket = previous_; }

}  // namespace k3::serve
