// Latency statistics over the timed runs.
#pragma once

#include <cstddef>
#include <vector>

namespace loom::infer_run {

struct LatencyStats {
  double min_ms = 0, median_ms = 0, p90_ms = 0, max_ms = 0;
  size_t runs = 0;
};

// Median averages the two middle samples for even counts; p90 is the nearest-rank percentile.
LatencyStats summarize_latency(std::vector<double> samples_ms);

}  // namespace loom::infer_run
