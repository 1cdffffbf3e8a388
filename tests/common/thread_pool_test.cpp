#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <utility>
#include <vector>

namespace k3 {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {0u, 1u, 2u, 5u, 64u, 1000u}) {
      for (size_t grain : {1u, 3u, 100u}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<int> calls{0};
        pool.parallel_for(n, grain, [&](size_t b, size_t e) {
          EXPECT_LT(b, e);
          ++calls;
          for (size_t i = b; i < e; ++i) ++hits[i];
        });
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
        EXPECT_LE(calls.load(), threads);
      }
    }
  }
}

TEST(ThreadPool, GrainKeepsSmallLoopsInOneChunk) {
  ThreadPool pool(4);
  int calls = 0;  // not atomic: a single chunk runs on the caller
  pool.parallel_for(10, 16, [&](size_t b, size_t e) {
    ++calls;
    EXPECT_EQ(b, 0u);
    EXPECT_EQ(e, 10u);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, DefaultUsesOnlineCores) {
  ThreadPool pool(0);
  EXPECT_GE(pool.size(), 1);
  ThreadPool pool2(-1);
  EXPECT_EQ(pool2.size(), pool.size());
}

TEST(ThreadPool, ManyCallsReuseWorkers) {
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int rep = 0; rep < 2000; ++rep) {
    pool.parallel_for(9, 1, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) sum += static_cast<long>(i);
    });
  }
  EXPECT_EQ(sum.load(), 2000L * 36);
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.parallel_for(4, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      pool.parallel_for(3, 1, [&](size_t b2, size_t e2) { total += static_cast<int>(e2 - b2); });
    }
  });
  EXPECT_EQ(total.load(), 12);
}

TEST(ThreadPool, ExceptionReachesCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(30, 1,
                                 [&](size_t b, size_t) {
                                   if (b > 0) throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(30, 1, [&](size_t b, size_t e) { n += static_cast<int>(e - b); });
  EXPECT_EQ(n.load(), 30);
}

TEST(ThreadPool, SlotsForItems) {
  ThreadPool pool(4);
  EXPECT_EQ(slots_for(&pool, 100), 4u);  // one per thread
  EXPECT_EQ(slots_for(&pool, 3), 3u);    // no more than items
  EXPECT_EQ(slots_for(&pool, 0), 1u);    // at least one
  EXPECT_EQ(slots_for(nullptr, 100), 1u);
}

// The free parallel_for: without a pool the whole range in one inline call;
// with one, every index exactly once.
TEST(ThreadPool, FreeParallelForRunsInlineWithoutAPool) {
  std::vector<std::pair<size_t, size_t>> calls;
  parallel_for(nullptr, 10, 1, [&](size_t b, size_t e) { calls.emplace_back(b, e); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(size_t{0}, size_t{10}));

  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(&pool, hits.size(), 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

}  // namespace
}  // namespace k3
