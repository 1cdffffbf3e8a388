#include "serve/state_spiller.h"

#include <cstdio>

namespace k3::serve {

bool StateSpiller::Write::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  return ok_;
}

bool StateSpiller::Write::failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !ok_;
}

StateSpiller::StateSpiller(ModelIdentity model, std::function<void(const std::string&)> before_write)
    : model_(std::move(model)), before_write_(std::move(before_write)), thread_([this] { loop(); }) {}

StateSpiller::~StateSpiller() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::unique_lock<std::mutex> StateSpiller::wait_for_room() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return queue_.size() < kMaxInFlight; });  // the disk is behind: back-pressure
  return lock;
}

std::shared_ptr<StateSpiller::Write> StateSpiller::queue_write(std::unique_lock<std::mutex>& lock, std::string path,
                                                               Session::SavePoint point) {
  auto w = std::make_shared<Write>();
  w->path_ = std::move(path);
  w->point_ = std::move(point);
  queue_.push_back(w);
  lock.unlock();
  cv_.notify_all();
  return w;
}

std::shared_ptr<StateSpiller::Write> StateSpiller::spill(std::string path, Session::SavePoint&& point) {
  std::unique_lock<std::mutex> lock = wait_for_room();
  return queue_write(lock, std::move(path), std::move(point));
}

std::shared_ptr<StateSpiller::Write> StateSpiller::spill(std::string path, const Session::SavePoint& point) {
  // Copied only once there is room: at most kMaxInFlight copies exist at once.
  std::unique_lock<std::mutex> lock = wait_for_room();
  return queue_write(lock, std::move(path), point);
}

void StateSpiller::loop() {
  for (;;) {
    std::shared_ptr<Write> w;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, every write done
      w = queue_.front();          // stays queued (counted in flight) until written
    }
    bool ok = false;
    try {
      if (before_write_) before_write_(w->path_);
      Session::SavePoint& p = w->point_;
      save_conversation(w->path_, model_, std::move(p.state), p.pending, SamplingParams{},
                        p.pending.empty() ? std::move(p.row) : std::vector<float>{});
      ok = true;
    } catch (const std::exception& e) {  // a full disk loses a kept state, never a request
      std::fprintf(stderr, "k3-serve: warning: could not keep a conversation state in %s: %s\n", w->path_.c_str(),
                   e.what());
    }
    {
      std::lock_guard<std::mutex> lock(w->mutex_);
      w->point_ = {};
      w->done_ = true;
      w->ok_ = ok;
    }
    w->cv_.notify_all();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.pop_front();
    }
    cv_.notify_all();
  }
}

}  // namespace k3::serve
