// loom/thread_pool.hpp, the cpu and neon devices' pool: chunking, inline nesting, exceptions,
// concurrent callers.
#include <gtest/gtest.h>

#include <atomic>
#include <loom/thread_pool.hpp>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace loom::sdk {
namespace {

TEST(ThreadPool, CoversTheRangeOnceInContiguousChunks) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  std::mutex m;
  std::vector<std::pair<size_t, size_t>> chunks;
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(1000, 10, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(m);
    chunks.emplace_back(b, e);
  });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  EXPECT_EQ(chunks.size(), 4u);  // one per thread, never more
  for (auto [b, e] : chunks) EXPECT_GE(e - b, 10u);
}

TEST(ThreadPool, WorkBelowTheGrainRunsOnTheCaller) {
  ThreadPool pool(4);
  std::thread::id caller = std::this_thread::get_id(), ran;
  int calls = 0;
  pool.parallel_for(50, 100, [&](size_t b, size_t e) {
    ++calls;
    ran = std::this_thread::get_id();
    EXPECT_EQ(b, 0u);
    EXPECT_EQ(e, 50u);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran, caller);
}

TEST(ThreadPool, NestedCallsRunInlineWithoutDeadlock) {
  ThreadPool pool(3);
  std::atomic<size_t> total{0};
  pool.parallel_for(6, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      pool.parallel_for(100, 1, [&](size_t bb, size_t ee) { total.fetch_add(ee - bb); });
  });
  EXPECT_EQ(total.load(), 600u);
}

TEST(ThreadPool, AChunkExceptionReachesTheCallerAndThePoolStaysUsable) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.parallel_for(400, 1,
                                 [&](size_t b, size_t) {
                                   if (b > 0) throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  std::atomic<size_t> total{0};
  pool.parallel_for(400, 1, [&](size_t b, size_t e) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 400u);
}

TEST(ThreadPool, ConcurrentCallersBothFinish) {
  ThreadPool pool(4);
  std::atomic<size_t> a{0}, b{0};
  std::thread other([&] {
    for (int r = 0; r < 200; ++r)
      pool.parallel_for(1000, 1, [&](size_t x, size_t y) { a.fetch_add(y - x); });
  });
  for (int r = 0; r < 200; ++r)
    pool.parallel_for(1000, 1, [&](size_t x, size_t y) { b.fetch_add(y - x); });
  other.join();
  EXPECT_EQ(a.load(), 200000u);
  EXPECT_EQ(b.load(), 200000u);
}

// Workers join a job only while it is open: one that wakes after the caller ran every chunk
// itself (its core busy elsewhere) must not run the finished job's function. Thousands of
// two-chunk jobs back to back give late wake-ups; every chunk must run inside its own call.
TEST(ThreadPool, LateWorkersNeverRunAFinishedJob) {
  ThreadPool pool(2);
  std::atomic<int> current{-1};
  std::atomic<int> stray{0};
  for (int job = 0; job < 20000; ++job) {
    std::atomic<size_t> covered{0};
    current.store(job);
    pool.parallel_for(2, 1, [&, job](size_t b, size_t e) {
      if (current.load() != job) stray.fetch_add(1);
      covered.fetch_add(e - b);
    });
    current.store(-1);
    ASSERT_EQ(covered.load(), 2u) << "job " << job;
  }
  EXPECT_EQ(stray.load(), 0);
}

}  // namespace
}  // namespace loom::sdk
