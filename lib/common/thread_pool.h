// A fixed pool of worker threads for data-parallel loops.
//
// parallel_for splits [0, n) into contiguous chunks, one per call to fn. The
// split may depend on the thread count; callers must make each index's result
// independent of which chunk computed it (see kernels/matmul.h), which keeps
// output bit-identical for every --threads.
#pragma once

#include <cstddef>
#include <functional>

namespace k3 {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: all online cores
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // Calls fn(begin, end) over disjoint chunks covering [0, n); blocks until done.
  // `grain` is the minimum chunk size worth a thread.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  struct Impl;
  Impl* impl_;
};

// Calls fn(begin, end) over [0, n): on `pool` in chunks of at least `grain`,
// or once, inline, on the calling thread when there is no pool (one thread).
template <typename Fn>
void parallel_for(ThreadPool* pool, size_t n, size_t grain, const Fn& fn) {
  if (pool) pool->parallel_for(n, grain, fn);
  else fn(0, n);
}

// Splits [0, n) into `slots` contiguous near-equal ranges (slots >= 1) and
// calls fn(slot, begin, end) for each, in parallel on `pool` (inline when
// null). Every slot index is handed to exactly one call, so scratch memory
// indexed by slot is never shared between threads. The split depends only on
// n and slots.
void parallel_for_slots(ThreadPool* pool, size_t n, size_t slots,
                        const std::function<void(size_t slot, size_t begin, size_t end)>& fn);

// Slots for `items` independent items on `pool`: one per thread, no more
// than there are items, at least one (the attention layers size their
// per-slot scratch by it).
size_t slots_for(ThreadPool* pool, size_t items);

}  // namespace k3
