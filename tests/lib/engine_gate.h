// Holds every thread of a ReadEngine inside a completion callback until
// open(): whatever is submitted meanwhile stays queued, so a test sees the
// queue's order, and what cancel() drops, independent of the disk's timing.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"

namespace k3::test {

class EngineGate {
 public:
  // Reads the first 4 kB of `file` once per engine thread (counted in
  // bytes_read before the constructor returns).
  EngineGate(ReadEngine& io, const DirectFile& file) : buf_(4096 * static_cast<uint64_t>(io.threads())) {
    for (int i = 0; i < io.threads(); ++i)
      io.submit(
          {ReadEngine::Read{&file, 0, 4096, 0, buf_.data() + 4096 * i}},
          [this](const std::string&) {
            std::unique_lock<std::mutex> lk(mu_);
            ++held_;
            cv_.notify_all();
            cv_.wait(lk, [&] { return open_; });
            ++left_;
            cv_.notify_all();
          },
          true);
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return held_ == io.threads(); });
  }
  // Opens, and waits until every held thread has left the callback.
  ~EngineGate() {
    open();
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return left_ == held_; });
  }
  EngineGate(const EngineGate&) = delete;
  EngineGate& operator=(const EngineGate&) = delete;

  void open() {
    std::lock_guard<std::mutex> lk(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  AlignedBuffer buf_;
  std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0, left_ = 0;
  bool open_ = false;
};

}  // namespace k3::test
