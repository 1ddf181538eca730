// Profiling of runs (loom_session_profile_*; docs/profiling.md). The outermost run of a
// profiled session carries its Profiler in the RunGuard, so every run it starts (plans by
// shape, control-flow bodies) records into it. Devices report their steps through plugin ABI
// 1.5's loom_run_control_t::profile; the core adds the whole run, each device call, transfers
// and the nodes it runs itself.
#pragma once

#include <loom/loom.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace loom::core {

struct ProfileRecord {
  std::string category;  // as loom_profile_event_t::category
  std::string name, op_type, device, nodes, shapes, detail;
  uint64_t run = 0;
  uint64_t thread = 0;
  uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
  // Whether the time is the step's own: leaves add up to the run's time in the summary. A
  // device call is a leaf only when its device reported no steps (a plugin older than 1.5);
  // a control-flow node is not (its bodies' steps are recorded).
  bool leaf = false;
};

class Profiler {
 public:
  static constexpr size_t kDefaultMaxEvents = 1'000'000;
  explicit Profiler(size_t max_events);

  static uint64_t now_ns();
  static uint64_t thread_id();

  bool active() const { return active_.load(std::memory_order_acquire); }
  void stop() { active_.store(false, std::memory_order_release); }
  uint64_t next_run() { return runs_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  void record(ProfileRecord record);

  // Calls fn for each event as the C API shows it (times since profiling started); returns
  // how many were dropped.
  size_t events(const std::function<void(const loom_profile_event_t&)>& fn) const;
  std::string chrome_trace() const;
  std::string summary() const;

 private:
  mutable std::mutex mutex_;
  std::vector<ProfileRecord> events_;
  size_t max_events_;
  size_t dropped_ = 0;
  uint64_t base_ns_;
  std::atomic<uint64_t> runs_{0};
  std::atomic<bool> active_{true};
};

}  // namespace loom::core
