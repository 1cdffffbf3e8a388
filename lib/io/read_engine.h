// Layer io: getting bytes off the disk fast and intact (O_DIRECT files, aligned buffers, parallel reads, digests).
//
// Parallel reads with completion callbacks.
//
// A few threads each issue blocking preads, so as many requests are in
// flight as there are threads: enough to keep an NVMe queue busy without
// io_uring. A submitted group of reads is split into pieces of at most
// `piece_bytes` so one large read (a trunk layer) also runs in parallel, and
// its completion callback runs once, on an I/O thread, when the last piece
// has landed. Three classes, each served only while the ones before it have
// nothing queued: urgent (experts the compute thread is waiting for),
// background (the next trunk sections, surely needed soon) and speculative
// (experts a later layer is guessed to use). Speculative reads are few in
// flight at once (speculative_limit), so most of them are still queued when
// the guess is decided: a wrong one is cancelled unread, a right one
// promoted to urgent.
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

  enum class Priority { kUrgent, kBackground, kSpeculative };

  // At most `speculative_limit` pieces of speculative groups are read at
  // once (>= 1), so the other threads are free for the urgent reads that
  // come next.
  explicit ReadEngine(int threads = 8, uint64_t piece_bytes = 4u << 20, int speculative_limit = 2);
  ~ReadEngine();
  ReadEngine(const ReadEngine&) = delete;
  ReadEngine& operator=(const ReadEngine&) = delete;

  // Returns the group's id for cancel() and promote() (0: the group was
  // empty and `done` already ran).
  uint64_t submit(std::vector<Read> reads, Done done, Priority priority);
  uint64_t submit(std::vector<Read> reads, Done done, bool urgent) {
    return submit(std::move(reads), std::move(done), urgent ? Priority::kUrgent : Priority::kBackground);
  }

  // What cancel() took off the queue.
  struct Cancelled {
    uint64_t bytes = 0;    // of group `id`'s pieces still queued: never read
    bool started = false;  // a piece of it had started (the group was cut)
  };
  // The error a cut group's callback gets (cancel()).
  static constexpr const char* kCancelled = "read cancelled";
  // Takes group `id`'s queued pieces off the queue, unread. None of them
  // started: the group is gone and its callback never runs. Some had (a
  // large group read piece by piece, such as a real K3 expert's 4 MB pieces):
  // those run to the end, then the callback runs once with kCancelled (the
  // destination holds part of the bytes). Nothing queued (the group
  // finished, or every piece started): bytes 0, the group completes as
  // submitted.
  Cancelled cancel(uint64_t id);
  // Moves group `id`'s queued pieces to the back of the urgent queue (a
  // read someone now waits for); a no-op once none is queued.
  void promote(uint64_t id);

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
  static constexpr int kClasses = 3;  // Priority's values, in order
  void worker();

  // Runs the group's callback with its first error (none: success).
  static void finish(Group& g);
  // Takes group `id`'s queued pieces out of `q`, in order, into `out`.
  static void take_pieces(std::deque<Piece>& q, uint64_t id, std::vector<Piece>& out);

  uint64_t piece_bytes_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::condition_variable cv_;
  std::deque<Piece> queue_[kClasses];  // by Priority
  int speculative_limit_;
  int speculative_active_ = 0;  // speculative pieces being read
  // The class a worker takes its next piece from (under mu_); -1: none.
  int next_class() const;
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
