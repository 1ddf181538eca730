#include "progress.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace loom::infer_run {
namespace {

std::chrono::milliseconds progress_delay() {
  const char* text = std::getenv("INFER_RUN_PROGRESS_DELAY_MS");
  if (!text || !*text) return std::chrono::milliseconds(1000);
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end || value < 0) return std::chrono::milliseconds(1000);
  return std::chrono::milliseconds(value);
}

}  // namespace

bool progress_enabled(bool json) {
  return !json && ::isatty(STDERR_FILENO) == 1;
}

Progress::Progress(std::string label, bool enabled) : label_(std::move(label)) {
  if (enabled) thread_ = std::thread([this] { tick(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Progress::tick() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  // A delay of 0 shows the line at least once, however short the step (deterministic tests).
  const std::chrono::milliseconds delay = progress_delay();
  if (delay.count() > 0 && wake_.wait_for(lock, delay, [this] { return done_; })) return;
  do {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // \r and erase-line: one line redrawn in place, never a scrolling log.
    fmt::print(stderr, "\rinfer-run: {}... {:.1f} s\033[K", label_, seconds);
    std::fflush(stderr);
  } while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; }));
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace loom::infer_run
