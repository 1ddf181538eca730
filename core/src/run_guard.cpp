#include "run_guard.hpp"

#include <unistd.h>

#include <limits>

#include "status.hpp"

namespace loom::core {
namespace {

thread_local RunGuard* g_current = nullptr;

constexpr int64_t kDefaultMaxLoopIterations = 10'000'000;

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{64} << 30;  // unknown: a large machine's
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace

RunLimits default_run_limits() {
  RunLimits l;
  l.max_tensor_bytes = physical_memory();
  l.max_run_bytes = physical_memory();
  l.max_loop_iterations = kDefaultMaxLoopIterations;
  return l;
}

RunLimits run_limits_from(int64_t max_tensor_bytes, int64_t max_run_bytes,
                          int64_t max_loop_iterations, int64_t deadline_ms) {
  RunLimits l = default_run_limits();
  auto pick = [](int64_t given, const char* name, auto fallback) -> decltype(fallback) {
    if (given == 0) return fallback;
    if (given == -1) return 0;  // no bound
    if (given < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("session option ") + name + " is " +
                                            std::to_string(given) +
                                            "; give a positive bound, 0 for the default or -1 "
                                            "for none");
    return static_cast<decltype(fallback)>(given);
  };
  l.max_tensor_bytes = pick(max_tensor_bytes, "max_tensor_bytes", l.max_tensor_bytes);
  l.max_run_bytes = pick(max_run_bytes, "max_run_bytes", l.max_run_bytes);
  l.max_loop_iterations = pick(max_loop_iterations, "max_loop_iterations", l.max_loop_iterations);
  if (deadline_ms < 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "session option deadline_ms is " +
                                          std::to_string(deadline_ms) +
                                          "; give milliseconds, or 0 for no deadline");
  l.deadline_ms = deadline_ms;
  return l;
}

RunGuard::RunGuard(const RunLimits& limits, const std::atomic<uint64_t>& cancel,
                   std::shared_ptr<Profiler> profiler)
    : limits_(limits),
      cancel_(cancel),
      started_generation_(cancel.load(std::memory_order_acquire)),
      previous_(g_current),
      profiler_(std::move(profiler)) {
  if (profiler_) profiled_run_ = profiler_->next_run();
  if (limits_.deadline_ms > 0)
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits_.deadline_ms);
  control_.struct_size = sizeof control_;
  control_.max_tensor_bytes = limits_.max_tensor_bytes;
  control_.max_run_bytes = limits_.max_run_bytes;
  control_.max_loop_iterations = limits_.max_loop_iterations;
  control_.poll = &RunGuard::poll_status;
  control_.user = this;
  g_current = this;
}

RunGuard::~RunGuard() {
  g_current = previous_;
}

RunGuard* RunGuard::current() {
  return g_current;
}

std::string RunGuard::stop_reason() const {
  if (cancel_.load(std::memory_order_acquire) != started_generation_)
    return "the run was cancelled (loom_session_cancel)";
  if (limits_.deadline_ms > 0 && std::chrono::steady_clock::now() >= deadline_)
    return "the run passed its deadline of " + std::to_string(limits_.deadline_ms) +
           " ms (session option deadline_ms, infer-run --deadline)";
  return "";
}

void RunGuard::poll() const {
  std::string reason = stop_reason();
  if (!reason.empty()) fail(LOOM_ERROR_CANCELLED, reason);
}

loom_status_t* RunGuard::poll_status(void* user) {
  std::string reason = static_cast<const RunGuard*>(user)->stop_reason();
  return reason.empty() ? nullptr : new_status(LOOM_ERROR_CANCELLED, reason);
}

}  // namespace loom::core
