#include "serve/peer_table.h"

#include <algorithm>

namespace k3::serve {

PeerTable::Connection* PeerTable::oldest_idle(const std::string& peer) const {
  Connection* oldest = nullptr;
  for (const auto& c : open_) {
    if (c->in_handler || c->evicted || (!peer.empty() && c->peer != peer)) continue;
    if (oldest == nullptr || c->since < oldest->since) oldest = c.get();
  }
  return oldest;
}

std::shared_ptr<PeerTable::Connection> PeerTable::open(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0, of_peer = 0;
  for (const auto& c : open_) {
    if (c->evicted) continue;  // leaving within a read slice
    ++total;
    if (c->peer == peer) ++of_peer;
  }
  if (of_peer >= limits_.max_per_peer) {
    Connection* victim = oldest_idle(peer);
    if (victim == nullptr) return nullptr;
    victim->evicted = true;
  } else if (total >= limits_.max_connections) {
    Connection* victim = oldest_idle("");
    if (victim == nullptr) return nullptr;
    victim->evicted = true;
  }
  auto c = std::make_shared<Connection>();
  c->peer = peer;
  c->since = std::chrono::steady_clock::now();
  open_.push_back(c);
  return c;
}

void PeerTable::close(const std::shared_ptr<Connection>& c) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_.remove(c);
}

void PeerTable::set_in_handler(Connection& c, bool in_handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  c.in_handler = in_handler;
  if (!in_handler) c.since = std::chrono::steady_clock::now();
}

size_t PeerTable::open_count(const std::string& peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<size_t>(std::count_if(open_.begin(), open_.end(), [&](const auto& c) { return c->peer == peer; }));
}

}  // namespace k3::serve
