#include "io/read_engine.h"

#include <atomic>

#include "common/error.h"
#include "io/aligned_buffer.h"

namespace k3 {

struct ReadEngine::Group {
  std::atomic<size_t> remaining{0};
  std::mutex mu;
  std::string error;
  Done done;
};

ReadEngine::ReadEngine(int threads, uint64_t piece_bytes) : piece_bytes_(align_up(piece_bytes)) {
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

void ReadEngine::submit(std::vector<Read> reads, Done done, bool urgent) {
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
    return;
  }
  g->remaining = pieces.size();
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto& q = urgent ? urgent_ : background_;
    for (Piece& p : pieces) q.push_back(std::move(p));
  }
  cv_.notify_all();
}

void ReadEngine::read_now(std::vector<Read> reads) {
  ReadLatch latch;
  submit(std::move(reads), latch.callback(), true);
  latch.wait();
}

void ReadEngine::worker() {
  for (;;) {
    Piece p;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !urgent_.empty() || !background_.empty(); });
      if (stop_ && urgent_.empty() && background_.empty()) return;
      auto& q = !urgent_.empty() ? urgent_ : background_;
      p = std::move(q.front());
      q.pop_front();
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
    if (p.group->remaining.fetch_sub(1) == 1) {
      std::string final_err;
      {
        std::lock_guard<std::mutex> glk(p.group->mu);
        final_err = p.group->error;
      }
      p.group->done(final_err);
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
