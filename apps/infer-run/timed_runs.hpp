// The timed phase of infer-run: --repeat runs or --time seconds, on one session, or with
// --concurrency N on N sessions at once, each driven by a thread of its own (requests in flight,
// like OpenVINO's benchmark_app -nireq with one stream per request).
#pragma once

#include <functional>
#include <vector>

namespace loom::infer_run {

struct TimedRuns {
  std::vector<double> samples_ms;  // every run's latency, all sessions together
  double wall_ms = 0;              // from the first start to the last end
};

// `run(i)` runs one inference on session i (and throws on failure: the first error ends every
// thread and is rethrown here). `repeat` runs in all, shared between the sessions, or as many
// as fit in `time_s` seconds when it is positive (at least one).
TimedRuns run_timed(int sessions, int repeat, double time_s, const std::function<void(int)>& run);

}  // namespace loom::infer_run
