// The threads that run k3-serve's connections (httplib's TaskQueue). httplib's
// own ThreadPool has a fixed count and queues connections beyond it without
// a bound in time, so connections that send slowly held every thread and
// /health waited behind them. This pool starts a thread whenever none is
// idle, up to `max_threads` (the PeerTable's connection bound and a margin),
// and keeps the started ones for the next connections.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace k3::serve {

class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(size_t max_threads) : max_threads_(max_threads) {}
  ~ConnectionPool() override { shutdown(); }
  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

 private:
  void work();
  size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace k3::serve
