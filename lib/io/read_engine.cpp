#include "io/read_engine.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "common/error.h"
#include "io/aligned_buffer.h"

namespace k3 {

struct ReadEngine::Group {
  uint64_t id = 0;
  bool started = false;  // a piece left the queue (under ReadEngine::mu_)
  std::atomic<size_t> remaining{0};
  std::mutex mu;
  std::string error;
  Done done;
};

ReadEngine::ReadEngine(int threads, uint64_t piece_bytes, int speculative_limit)
    : piece_bytes_(align_up(piece_bytes)), speculative_limit_(std::max(1, speculative_limit)) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

ReadEngine::~ReadEngine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

uint64_t ReadEngine::bytes_read() const {
  std::lock_guard<std::mutex> lk(mu_);
  return bytes_read_;
}

double ReadEngine::busy_seconds() const {
  std::lock_guard<std::mutex> lk(mu_);
  double t = busy_total_;
  if (active_ > 0) t += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
  return t;
}

uint64_t ReadEngine::submit(std::vector<Read> reads, Done done, Priority priority) {
  auto g = std::make_shared<Group>();
  g->done = std::move(done);
  std::vector<Piece> pieces;
  for (const Read& r : reads) {
    for (uint64_t off = 0; off < r.length; off += piece_bytes_) {
      Read p = r;
      p.offset = r.offset + off;
      p.length = std::min(piece_bytes_, r.length - off);
      p.dst = r.dst + off;
      p.need = r.need > off ? std::min(p.length, r.need - off) : 0;
      pieces.push_back(Piece{g, p});
    }
  }
  if (pieces.empty()) {
    g->done(std::string());
    return 0;
  }
  g->remaining = pieces.size();
  uint64_t id;
  {
    std::lock_guard<std::mutex> lk(mu_);
    id = g->id = next_id_++;
    auto& q = queue_[static_cast<int>(priority)];
    for (Piece& p : pieces) q.push_back(std::move(p));
  }
  cv_.notify_all();
  return id;
}

void ReadEngine::take_pieces(std::deque<Piece>& q, uint64_t id, std::vector<Piece>& out) {
  auto keep = std::stable_partition(q.begin(), q.end(), [&](const Piece& p) { return p.group->id != id; });
  std::move(keep, q.end(), std::back_inserter(out));
  q.erase(keep, q.end());
}

ReadEngine::Cancelled ReadEngine::cancel(uint64_t id) {
  std::vector<Piece> dropped;  // destroyed after the lock: the last one frees the group and its callback
  Cancelled c;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& q : queue_) take_pieces(q, id, dropped);
    if (dropped.empty()) return c;
    for (const Piece& p : dropped) c.bytes += p.read.length;
    c.started = dropped.front().group->started;
  }
  if (!c.started) return c;
  // Cut: the pieces in flight see the error and land; whoever drops the
  // group's count to zero (their worker, or this call when they all have
  // landed already) runs the callback, once.
  Group& g = *dropped.front().group;
  {
    std::lock_guard<std::mutex> glk(g.mu);
    if (g.error.empty()) g.error = kCancelled;
  }
  if (g.remaining.fetch_sub(dropped.size()) == dropped.size()) finish(g);
  return c;
}

void ReadEngine::finish(Group& g) {
  std::string err;
  {
    std::lock_guard<std::mutex> glk(g.mu);
    err = g.error;
  }
  g.done(err);
}

void ReadEngine::promote(uint64_t id) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<Piece> moved;
    for (int c = 1; c < kClasses; ++c) take_pieces(queue_[c], id, moved);
    for (Piece& p : moved) queue_[0].push_back(std::move(p));
  }
  cv_.notify_all();  // a speculative piece held back by the limit may go now
}

int ReadEngine::next_class() const {
  if (!queue_[0].empty()) return 0;
  if (!queue_[1].empty()) return 1;
  if (!queue_[2].empty() && speculative_active_ < speculative_limit_) return 2;
  return -1;
}

void ReadEngine::read_now(std::vector<Read> reads) {
  ReadLatch latch;
  submit(std::move(reads), latch.callback(), true);
  latch.wait();
}

void ReadEngine::worker() {
  for (;;) {
    Piece p;
    int cls;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || next_class() >= 0; });
      cls = next_class();
      if (cls < 0) return;  // stopping, and nothing left to read
      auto& q = queue_[cls];
      p = std::move(q.front());
      q.pop_front();
      p.group->started = true;
      if (cls == 2) ++speculative_active_;
      if (active_++ == 0) busy_since_ = std::chrono::steady_clock::now();
    }
    std::string err;
    {
      std::lock_guard<std::mutex> glk(p.group->mu);
      err = p.group->error;
    }
    uint64_t done_bytes = 0;
    if (err.empty()) {  // after a failure the rest of the group is skipped
      try {
        p.read.file->read_aligned(p.read.dst, p.read.offset, p.read.length, p.read.need);
        done_bytes = p.read.length;
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> glk(p.group->mu);
        if (p.group->error.empty()) p.group->error = e.what();
      }
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      bytes_read_ += done_bytes;
      if (--active_ == 0)
        busy_total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
    }
    if (p.group->remaining.fetch_sub(1) == 1) finish(*p.group);
    // A speculative piece holds its place until its callback returned, so
    // the limit also bounds the threads busy with speculation.
    if (cls == 2) {
      std::lock_guard<std::mutex> lk(mu_);
      if (speculative_active_-- == speculative_limit_ && !queue_[2].empty()) cv_.notify_one();
    }
  }
}

ReadEngine::Done ReadLatch::callback() {
  return [this](const std::string& err) {
    std::lock_guard<std::mutex> lk(mu_);
    error_ = err;
    done_ = true;
    cv_.notify_all();
  };
}

void ReadLatch::wait() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return done_; });
  if (!error_.empty()) throw Error(ExitCode::kIo, error_);
}

bool ReadLatch::done() const {
  std::lock_guard<std::mutex> lk(mu_);
  return done_;
}

}  // namespace k3
