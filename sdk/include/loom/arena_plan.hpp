// Arena planning for devices that compile a subgraph into steps: buffers whose lifetimes do not
// overlap share bytes of one arena. Greedy by size (largest first), each buffer goes into the
// smallest gap between buffers alive at the same time ("best fit"), as TFLite's and ONNX
// Runtime's planners do. The core plans the arenas it hands to devices with it; a device that
// changes tensor sizes (e.g. blocked layouts that pad channels) plans its own. Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

namespace loom::sdk {

struct BufferRequest {
  size_t size = 0;
  int first_use = 0;  // step that writes it
  int last_use = 0;   // last step that reads it (>= first_use)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per request, multiples of the alignment
  size_t arena_size = 0;        // planned peak bytes
};

inline MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 64) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].size > requests[b].size; });
  auto aligned = [alignment](size_t n) {
    return (std::max<size_t>(n, 1) + alignment - 1) / alignment * alignment;
  };

  std::vector<size_t> placed, live;  // request indices
  for (size_t r : order) {
    const BufferRequest& req = requests[r];
    const size_t need = aligned(req.size);
    // Buffers alive at the same time, by offset.
    live.clear();
    for (size_t p : placed)
      if (requests[p].first_use <= req.last_use && req.first_use <= requests[p].last_use)
        live.push_back(p);
    std::sort(live.begin(), live.end(),
              [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    size_t best_offset = 0, best_gap = std::numeric_limits<size_t>::max();
    bool found = false;
    size_t cursor = 0;
    for (size_t p : live) {
      const size_t start = plan.offsets[p];
      if (start >= cursor && start - cursor >= need && start - cursor < best_gap) {
        best_gap = start - cursor;
        best_offset = cursor;
        found = true;
      }
      cursor = std::max(cursor, start + aligned(requests[p].size));
    }
    plan.offsets[r] = found ? best_offset : cursor;
    plan.arena_size = std::max(plan.arena_size, plan.offsets[r] + need);
    placed.push_back(r);
  }
  return plan;
}

}  // namespace loom::sdk
