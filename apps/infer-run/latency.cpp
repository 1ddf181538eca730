#include "latency.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace loom::infer_run {
namespace {

// Nearest rank: the smallest sample with at least `fraction` of all samples at or below it.
double percentile(const std::vector<double>& sorted, double fraction) {
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

LatencyStats summarize_latency(std::vector<double> samples, double wall_ms) {
  LatencyStats s;
  s.runs = samples.size();
  s.wall_ms = wall_ms;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.min_ms = samples.front();
  s.max_ms = samples.back();
  s.median_ms = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  s.p90_ms = percentile(samples, 0.90);
  s.p99_ms = percentile(samples, 0.99);
  s.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (double v : samples) squares += (v - s.mean_ms) * (v - s.mean_ms);
    s.stddev_ms = std::sqrt(squares / static_cast<double>(n - 1));
  }
  if (wall_ms > 0) s.throughput_per_s = static_cast<double>(n) * 1000.0 / wall_ms;
  return s;
}

}  // namespace loom::infer_run
