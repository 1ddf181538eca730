// A fixed pool of persistent worker threads for a CPU device (the cpu and neon devices use it).
// parallel_for splits [0, n) into contiguous chunks (at most one per thread, none smaller than
// `grain`), the calling thread works on chunks too, and the call returns when every chunk is done.
// Threads are created once, at device creation: no per-call thread creation. A parallel_for issued
// while the pool is busy (from inside a chunk, a nested graph, or a second executable running
// concurrently) runs inline on its caller, so the machine is never oversubscribed and nothing can
// deadlock.
//
// Idle workers spin for a short while (kSpin) before they sleep, and so does the caller waiting
// for the last chunk: a run's kernels call parallel_for back to back, and waking a sleeping thread
// through the kernel costs more (several microseconds) than many of those kernels take. The spin
// pauses on the core briefly, then yields it to any thread that wants it; after kSpin without work
// a worker sleeps on the condition variable, so an idle session costs nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace loom::sdk {

class ThreadPool {
 public:
  // `threads` counts the caller: 1 = no workers, everything runs on the calling thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // fn(begin, end) over contiguous chunks of [0, n). If fn throws, the first exception is
  // rethrown here after every chunk has finished.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

  // How long idle threads poll before they block.
  static constexpr std::chrono::microseconds kSpin{200};

 private:
  // Polls `ready` until it returns true or kSpin has passed; true when it did.
  template <typename Ready>
  static bool spin_until(Ready&& ready);
  // True on a thread that is working for a pool: a parallel_for from there runs inline.
  static bool& inside_pool() {
    static thread_local bool inside = false;
    return inside;
  }
  void worker_loop();
  // Claims and runs chunks of the current job until none is left.
  void work_on_job();

  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;  // held by the one caller whose job the workers serve

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stop_ = false;
  uint64_t generation_ = 0;  // bumped per job so each worker joins each job once
  // generation_ (and stop_, as a bumped value) for the spinning workers, which read it unlocked.
  std::atomic<uint64_t> published_{0};

  // The current job.
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  size_t chunks_ = 0;
  std::atomic<size_t> next_chunk_{0};
  std::atomic<size_t> chunks_done_{0};
  // Workers join a job only while it is open; the caller waits for the joined ones alone. A
  // worker that wakes late (its core busy, e.g. with oneDNN's spinning OpenMP threads in a mixed
  // plan) finds the job closed and goes back to sleep instead of holding up the caller, which
  // has run the chunks itself meanwhile.
  bool open_ = false;
  std::atomic<int> joined_{0};  // workers inside work_on_job (changed under mutex_)
  std::exception_ptr error_;    // first exception thrown by a chunk of the current job
};

// ---- implementation (header-only so the unit tests can use the pool directly) ----------

inline ThreadPool::ThreadPool(int threads) {
  int workers = std::max(threads, 1) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

inline ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    published_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

inline void ThreadPool::parallel_for(size_t n, size_t grain,
                                     const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  size_t max_chunks = std::min<size_t>((n + grain - 1) / grain, workers_.size() + 1);
  if (max_chunks <= 1 || inside_pool()) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> submit(submit_mutex_, std::try_to_lock);
  if (!submit.owns_lock()) {  // another caller holds the workers: do not wait for them
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    n_ = n;
    chunks_ = max_chunks;
    next_chunk_.store(0);
    chunks_done_.store(0);
    joined_ = 0;
    open_ = true;
    ++generation_;
    published_.store(generation_);
  }
  wake_.notify_all();  // no system call when every worker is spinning, none waits
  inside_pool() = true;
  work_on_job();
  inside_pool() = false;
  spin_until([&] { return chunks_done_.load() == chunks_ && joined_.load() == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  // Wait for the chunks and for the workers that joined to leave the job; closing it under the
  // same lock keeps any later one out, so fn_ may be reset safely.
  done_.wait(lock, [&] { return chunks_done_.load() == chunks_ && joined_ == 0; });
  open_ = false;
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr error = std::exchange(error_, nullptr);
    std::rethrow_exception(error);
  }
}

inline void ThreadPool::work_on_job() {
  for (;;) {
    size_t c = next_chunk_.fetch_add(1);
    if (c >= chunks_) return;
    // Contiguous, near-equal chunks: chunk c covers [c*n/chunks, (c+1)*n/chunks).
    size_t begin = c * n_ / chunks_;
    size_t end = (c + 1) * n_ / chunks_;
    try {
      (*fn_)(begin, end);
    } catch (...) {
      // A throwing chunk must not take the process down from a worker thread: keep the first
      // exception and rethrow it on the caller once every chunk is done.
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    chunks_done_.fetch_add(1);
  }
}

template <typename Ready>
bool ThreadPool::spin_until(Ready&& ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    if (i < 256) {  // the first microseconds on the core: a chunk usually comes back that soon
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    } else {
      // Then politely: a thread that needs the core (another device's OpenMP team in a mixed
      // plan, the application) gets it at once.
      std::this_thread::yield();
    }
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return false;
  }
}

inline void ThreadPool::worker_loop() {
  inside_pool() = true;
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return published_.load() != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!open_) continue;  // finished without this worker
      ++joined_;
    }
    work_on_job();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --joined_;
    }
    done_.notify_all();
  }
}

}  // namespace loom::sdk
