// Writes the conversation states ConversationCache spills from RAM as state
// files on a thread of its own, so the engine thread's pass loop does not
// wait on the disk: spill() hands a state over and returns. Each file is
// written atomically (state/continuation.h: a temporary created exclusively,
// then renamed), so a reader never sees half a state.
//
// At most kMaxInFlight states wait to be written (they still hold RAM, as
// the memory plan counts: RunRequest::kept_states_in_flight): a spill beyond
// that waits for the oldest write before it takes its state or copy, which
// happens only when states leave RAM faster than the disk takes them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/session.h"
#include "state/continuation.h"

namespace k3::serve {

class StateSpiller {
 public:
  static constexpr size_t kMaxInFlight = 2;

  // One queued write; wait() tells how it ended.
  class Write {
   public:
    // Blocks until the file is written or the write failed; true when written.
    bool wait();
    // Without waiting: the write ended and failed (the file is not there).
    bool failed();
    const std::string& path() const { return path_; }

   private:
    friend class StateSpiller;
    std::string path_;
    Session::SavePoint point_;  // released once written
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false, ok_ = false;
  };

  // `before_write` (tests only: nullptr) is called on the writer thread
  // before each write, with its path.
  explicit StateSpiller(ModelIdentity model, std::function<void(const std::string&)> before_write = nullptr);
  ~StateSpiller();  // finishes the queued writes
  StateSpiller(const StateSpiller&) = delete;
  StateSpiller& operator=(const StateSpiller&) = delete;

  // Takes `point` once there is room; the const overload copies it then
  // (a prompt cache's write-through keeps the state in RAM too).
  std::shared_ptr<Write> spill(std::string path, Session::SavePoint&& point);
  std::shared_ptr<Write> spill(std::string path, const Session::SavePoint& point);

 private:
  // Waits until fewer than kMaxInFlight writes are queued; returns the lock.
  std::unique_lock<std::mutex> wait_for_room();
  std::shared_ptr<Write> queue_write(std::unique_lock<std::mutex>& lock, std::string path, Session::SavePoint point);
  void loop();

  ModelIdentity model_;
  std::function<void(const std::string&)> before_write_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Write>> queue_;  // the first is being written
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace k3::serve
