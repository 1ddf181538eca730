// The limits of one run and its cancellation (docs/limits.md). A well-formed model can still be
// hostile at run time: a shape taken from its data that asks for terabytes, a Loop whose
// condition never turns false. Every run of a session holds a RunGuard: the core checks it
// between steps and before host allocations, and hands it to each device as plugin ABI 1.4's
// loom_run_control_t, which devices check between their own steps.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <loom/plugin.hpp>
#include <memory>
#include <string>

#include "profiler.hpp"

namespace loom::core {

// The limits a session sets for its runs; 0 in a field means no bound.
struct RunLimits {
  uint64_t max_tensor_bytes = 0;
  uint64_t max_run_bytes = 0;
  int64_t max_loop_iterations = 0;
  int64_t deadline_ms = 0;
};

// The defaults of loom_session_options_t's 0 (docs/limits.md): no tensor and no run may hold
// more than the machine's physical memory, no Loop may run more than 10,000,000 iterations
// (the longest loop of the test and benchmark models runs a few thousand), no deadline.
RunLimits default_run_limits();

// Reads the 0.5 fields of the session options: 0 takes the default, -1 removes the bound, any
// other negative value is refused naming the option.
RunLimits run_limits_from(int64_t max_tensor_bytes, int64_t max_run_bytes,
                          int64_t max_loop_iterations, int64_t deadline_ms);

class RunGuard {
 public:
  // `cancel` is the session's cancel counter: a run is cancelled once it differs from its value
  // when the run started.
  RunGuard(const RunLimits& limits, const std::atomic<uint64_t>& cancel,
           std::shared_ptr<Profiler> profiler = nullptr);
  ~RunGuard();
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

  // The guard of the outermost run in progress on this thread, or null. Nested runs (plans by
  // shape, control-flow bodies) run under the guard of the run that started them.
  static RunGuard* current();

  // Throws LOOM_ERROR_CANCELLED when the run was cancelled or passed its deadline.
  void poll() const;
  // Throws LOOM_ERROR_LIMIT_EXCEEDED naming what() when one tensor of `bytes` is too large.
  // `what` makes the message only then: the check runs for every host-step allocation.
  template <typename What>
  void check_tensor_bytes(uint64_t bytes, What&& what) const {
    if (limits_.max_tensor_bytes && bytes > limits_.max_tensor_bytes)
      sdk::RunControl(&control_).check_tensor_bytes(bytes, what());
  }
  const RunLimits& limits() const { return limits_; }
  // The profiler of the outermost run's session while it profiles, else null; and which of
  // its runs this is.
  Profiler* profiler() const { return profiler_.get(); }
  uint64_t profiled_run() const { return profiled_run_; }
  // What devices get in loom_run_args_t::control.
  const loom_run_control_t* control() const { return &control_; }

 private:
  static loom_status_t* poll_status(void* user);
  std::string stop_reason() const;  // "" while the run may go on

  RunLimits limits_;
  const std::atomic<uint64_t>& cancel_;
  uint64_t started_generation_;
  std::chrono::steady_clock::time_point deadline_;
  loom_run_control_t control_{};
  RunGuard* previous_;
  std::shared_ptr<Profiler> profiler_;
  uint64_t profiled_run_ = 0;
};

}  // namespace loom::core
