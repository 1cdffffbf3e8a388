// Layer io: getting bytes off the disk fast and intact (O_DIRECT files, aligned buffers, parallel reads, digests).
//
// Parallel reads with completion callbacks.
//
// A few threads each issue blocking preads, so as many requests are in
// flight as there are threads: enough to keep an NVMe queue busy without
// io_uring. A submitted group of reads is split into pieces of at most
// `piece_bytes` so one large read (a trunk layer) also runs in parallel, and
// its completion callback runs once, on an I/O thread, when the last piece
// has landed. Urgent groups (experts the compute thread is waiting for) jump
// ahead of background ones (prefetch of the next trunk layer).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/direct_file.h"

namespace k3 {

class ReadEngine {
 public:
  struct Read {
    const DirectFile* file = nullptr;
    uint64_t offset = 0;     // aligned
    uint64_t length = 0;     // aligned
    uint64_t need = 0;       // bytes that must exist (the rest may lie past end of file)
    uint8_t* dst = nullptr;  // aligned
  };
  // `error` is empty on success, else the first failure's message.
  using Done = std::function<void(const std::string& error)>;

  explicit ReadEngine(int threads = 8, uint64_t piece_bytes = 4u << 20);
  ~ReadEngine();
  ReadEngine(const ReadEngine&) = delete;
  ReadEngine& operator=(const ReadEngine&) = delete;

  void submit(std::vector<Read> reads, Done done, bool urgent);

  // Submits and waits; throws k3::Error(kIo) with the failure message.
  void read_now(std::vector<Read> reads);

  int threads() const { return static_cast<int>(workers_.size()); }
  uint64_t bytes_read() const;
  // Seconds during which at least one read was in progress: the time the
  // device was kept busy (compare with the wall time to see idle gaps).
  double busy_seconds() const;

 private:
  struct Group;
  struct Piece {
    std::shared_ptr<Group> group;
    Read read;
  };
  void worker();

  uint64_t piece_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Piece> urgent_, background_;
  bool stop_ = false;
  uint64_t bytes_read_ = 0;
  int active_ = 0;
  std::chrono::steady_clock::time_point busy_since_;
  double busy_total_ = 0;
  std::vector<std::thread> workers_;
};

// A one-shot latch for callers that wait on a submitted group.
class ReadLatch {
 public:
  ReadEngine::Done callback();
  // Blocks until the callback ran; throws k3::Error(kIo) on failure.
  void wait();
  bool done() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string error_;
};

}  // namespace k3
