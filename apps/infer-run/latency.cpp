#include "latency.hpp"

#include <algorithm>
#include <cmath>

namespace loom::infer_run {

LatencyStats summarize_latency(std::vector<double> samples) {
  LatencyStats s;
  s.runs = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  s.min_ms = samples.front();
  s.max_ms = samples.back();
  s.median_ms = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  s.p90_ms = samples[std::max<size_t>(rank, 1) - 1];
  return s;
}

}  // namespace loom::infer_run
