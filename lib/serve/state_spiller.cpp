#include "serve/state_spiller.h"

#include <cstdio>

namespace k3::serve {

bool StateSpiller::Write::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  return ok_;
}

bool StateSpiller::Write::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
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

std::shared_ptr<StateSpiller::Write> StateSpiller::spill(std::string path,
                                                         std::shared_ptr<const Session::SavePoint> point) {
  auto w = std::make_shared<Write>();
  w->path_ = std::move(path);
  w->point_ = std::move(point);
  std::unique_lock<std::mutex> lock(mutex_);
  queue_.push_back(w);
  lock.unlock();
  cv_.notify_all();
  return w;
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
      save_conversation(w->path_, model_, *w->point_);
      ok = true;
    } catch (const std::exception& e) {  // a full disk loses a kept state, never a request
      std::fprintf(stderr, "k3-serve: warning: could not keep a conversation state in %s: %s\n", w->path_.c_str(),
                   e.what());
    }
    {
      std::lock_guard<std::mutex> lock(w->mutex_);
      w->point_.reset();  // the cache's reference, if it still has one, keeps the state
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
