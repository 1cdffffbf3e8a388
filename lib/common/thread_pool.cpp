#include "common/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace k3 {

namespace {
// True on pool workers, and on a caller while it runs chunks: a parallel_for
// issued from inside a chunk then runs inline instead of waiting on workers
// that are busy running its caller.
thread_local bool t_in_parallel_region = false;

// A decode step issues hundreds of jobs of a few hundred microseconds each,
// back to back. Waking a sleeping thread through the condition variable can
// cost as much as such a job (more on virtual machines, where it is an
// interrupt to another vCPU), so a waiting thread first spins this long on
// the job's counters and only then sleeps. Idle pools still sleep.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() holds or kSpin has passed; true when it holds.
template <class Done>
bool spin_until(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return false;
  }
}
}  // namespace

// Workers sleep on a condition variable and wake for each job (identified by
// a generation counter). Chunks are claimed with an atomic counter; the
// calling thread claims chunks too, so a pool of size N uses N-1 workers.
struct ThreadPool::Impl {
  int threads = 1;
  std::vector<std::thread> workers;

  std::mutex call_mu;  // one parallel_for at a time per pool

  std::mutex mu;
  std::condition_variable wake;
  std::condition_variable done;
  // Written under mu; atomic so that waiting threads can spin on them
  // before taking the lock.
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stop{false};

  // Current job (valid while a parallel_for is running).
  const std::function<void(size_t, size_t)>* fn = nullptr;
  size_t n = 0;
  size_t chunks = 0;
  std::atomic<size_t> next_chunk{0};
  std::atomic<size_t> chunks_done{0};  // written under mu
  std::atomic<int> active{0};          // workers inside run_chunks; written under mu
  std::exception_ptr error;            // guarded by mu

  void chunk_range(size_t i, size_t* begin, size_t* end) const {
    // Contiguous, near-equal chunks: the first n % chunks get one extra.
    const size_t base = n / chunks, extra = n % chunks;
    *begin = i * base + std::min(i, extra);
    *end = *begin + base + (i < extra ? 1 : 0);
  }

  // Runs chunks until none are left; returns how many this thread ran.
  size_t run_chunks() {
    size_t ran = 0;
    for (;;) {
      const size_t i = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (i >= chunks) break;
      size_t b, e;
      chunk_range(i, &b, &e);
      try {
        (*fn)(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      ++ran;
    }
    return ran;
  }

  void worker_loop() {
    t_in_parallel_region = true;
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return stop.load() || generation.load() != seen; });
      {
        std::unique_lock<std::mutex> lock(mu);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
        // A late wake-up may find the job already finished; the caller
        // clears fn only after every worker that joined has left.
        if (fn == nullptr) continue;
        ++active;
      }
      const size_t ran = run_chunks();
      {
        std::lock_guard<std::mutex> lock(mu);
        chunks_done += ran;
        --active;
        if (chunks_done == chunks && active == 0) done.notify_one();
      }
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(new Impl) {
  if (threads <= 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    threads = online > 0 ? static_cast<int>(online) : 1;
  }
  impl_->threads = threads;
  impl_->workers.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) {
    impl_->workers.emplace_back([this] { impl_->worker_loop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (auto& w : impl_->workers) w.join();
  delete impl_;
}

int ThreadPool::size() const { return impl_->threads; }

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t max_chunks = (n + grain - 1) / grain;
  const size_t chunks = std::min<size_t>(static_cast<size_t>(impl_->threads), max_chunks);
  if (chunks <= 1 || t_in_parallel_region) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(impl_->call_mu);
  Impl& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    im.fn = &fn;
    im.n = n;
    im.chunks = chunks;
    im.next_chunk.store(0, std::memory_order_relaxed);
    im.chunks_done = 0;
    im.error = nullptr;
    ++im.generation;
  }
  im.wake.notify_all();
  t_in_parallel_region = true;
  const size_t ran = im.run_chunks();
  t_in_parallel_region = false;
  std::exception_ptr error;
  {
    {
      std::lock_guard<std::mutex> lock(im.mu);
      im.chunks_done += ran;
    }
    spin_until([&] { return im.chunks_done.load() == im.chunks && im.active.load() == 0; });
    std::unique_lock<std::mutex> lock(im.mu);
    im.done.wait(lock, [&] { return im.chunks_done == im.chunks && im.active == 0; });
    im.fn = nullptr;
    error = im.error;
  }
  if (error) std::rethrow_exception(error);
}

void parallel_for_slots(ThreadPool* pool, size_t n, size_t slots,
                        const std::function<void(size_t, size_t, size_t)>& fn) {
  if (n == 0) return;
  slots = std::max<size_t>(1, std::min(slots, n));
  const size_t base = n / slots, extra = n % slots;
  auto run = [&](size_t s0, size_t s1) {
    for (size_t s = s0; s < s1; ++s) {
      const size_t begin = s * base + std::min(s, extra);
      fn(s, begin, begin + base + (s < extra ? 1 : 0));
    }
  };
  if (pool && slots > 1) pool->parallel_for(slots, 1, run);
  else run(0, slots);
}

size_t slots_for(ThreadPool* pool, size_t items) {
  return std::max<size_t>(1, std::min<size_t>(pool ? static_cast<size_t>(pool->size()) : 1, items));
}

}  // namespace k3
