// Whether the client of the request this thread answers is still there, for
// a handler that writes nothing until its reply is whole (a non-streamed
// completion): a stream finds out when a chunk cannot be written, this asks
// the socket. A client that closed or reset its connection is gone; so is
// one that shut down its sending side (as nginx's 499 rule: an HTTP client
// does not half-close while it waits for a reply).
#pragma once

namespace k3::serve {

bool client_gone();

// While alive, client_gone() on this thread asks about `socket`.
class ClientScope {
 public:
  explicit ClientScope(int socket);
  ~ClientScope();
  ClientScope(const ClientScope&) = delete;
  ClientScope& operator=(const ClientScope&) = delete;

 private:
  int previous_;
};

}  // namespace k3::serve
