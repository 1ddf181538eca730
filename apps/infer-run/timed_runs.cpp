#include "timed_runs.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

namespace loom::infer_run {

TimedRuns run_timed(int sessions, int repeat, double time_s, const std::function<void(int)>& run) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const auto start = Clock::now();
  const auto time_up =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_s));
  std::atomic<int> started{0};    // runs begun, all sessions together
  std::atomic<bool> stop{false};  // set by the first failure
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::vector<double>> samples(static_cast<size_t>(sessions));
  auto another = [&] {
    if (stop.load()) return false;
    const int n = started.fetch_add(1);
    return time_s > 0 ? n == 0 || Clock::now() < time_up : n < repeat;
  };
  auto worker = [&](int i) {
    try {
      while (another()) {
        const auto t = Clock::now();
        run(i);
        samples[static_cast<size_t>(i)].push_back(ms_since(t));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failure) failure = std::current_exception();
      stop.store(true);
    }
  };
  if (sessions == 1) {
    worker(0);
  } else {
    std::vector<std::thread> threads;
    for (int i = 0; i < sessions; ++i) threads.emplace_back(worker, i);
    for (std::thread& t : threads) t.join();
  }
  if (failure) std::rethrow_exception(failure);
  TimedRuns result;
  result.wall_ms = ms_since(start);
  for (const auto& s : samples)
    result.samples_ms.insert(result.samples_ms.end(), s.begin(), s.end());
  return result;
}

}  // namespace loom::infer_run
