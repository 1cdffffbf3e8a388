// Writes the conversation states ConversationCache keeps as state files on
// a thread of its own, so the engine thread's pass loop does not wait on the
// disk: spill() hands a reference to a kept state over and returns. The file
// is written from the state where it lies (no copy: the state is shared and
// immutable, and the writer's reference keeps it alive however the cache
// drops it meanwhile). Each file is written atomically (state/continuation.h:
// a temporary created exclusively, then renamed), so a reader never sees half
// a state.
//
// A state waiting to be written still holds its RAM: ConversationCache
// counts it against its limit until the write ends (its `leaving` entries).
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
  // One queued write; wait() tells how it ended.
  class Write {
   public:
    // Blocks until the file is written or the write failed; true when written.
    bool wait();
    // Without waiting: the write ended (written or failed).
    bool done();
    // Without waiting: the write ended and failed (the file is not there).
    bool failed();
    const std::string& path() const { return path_; }

   private:
    friend class StateSpiller;
    std::string path_;
    std::shared_ptr<const Session::SavePoint> point_;  // released once written
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

  // Queues a write of `point` to `path`; the writer holds the reference until the file is written.
  std::shared_ptr<Write> spill(std::string path, std::shared_ptr<const Session::SavePoint> point);

 private:
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
