// Latency and throughput statistics over the timed runs.
#pragma once

#include <cstddef>
#include <vector>

namespace loom::infer_run {

struct LatencyStats {
  double min_ms = 0, mean_ms = 0, stddev_ms = 0, median_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  size_t runs = 0;
  double wall_ms = 0;           // the timed runs from first start to last end
  double throughput_per_s = 0;  // runs / wall time
};

// Median averages the two middle samples for even counts; p90 and p99 are nearest-rank
// percentiles; the standard deviation is the sample's (n - 1), 0 for one run. `wall_ms` is the
// time the timed runs took together (with the gaps between them), for the throughput.
LatencyStats summarize_latency(std::vector<double> samples_ms, double wall_ms);

}  // namespace loom::infer_run
