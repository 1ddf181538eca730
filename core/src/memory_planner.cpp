#include "memory_planner.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace loom::core {

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].size > requests[b].size; });
  auto aligned = [alignment](size_t n) { return (n + alignment - 1) / alignment * alignment; };

  std::vector<size_t> placed;  // request indices already placed
  for (size_t r : order) {
    const BufferRequest& req = requests[r];
    size_t need = aligned(std::max<size_t>(req.size, 1));
    // Buffers alive at the same time, by offset.
    std::vector<size_t> live;
    for (size_t p : placed)
      if (requests[p].first_use <= req.last_use && req.first_use <= requests[p].last_use)
        live.push_back(p);
    std::sort(live.begin(), live.end(),
              [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    size_t best_offset = 0, best_gap = std::numeric_limits<size_t>::max();
    bool found = false;
    size_t cursor = 0;
    for (size_t p : live) {
      size_t start = plan.offsets[p];
      if (start >= cursor && start - cursor >= need && start - cursor < best_gap) {
        best_gap = start - cursor;
        best_offset = cursor;
        found = true;
      }
      cursor = std::max(cursor, plan.offsets[p] + aligned(std::max<size_t>(requests[p].size, 1)));
    }
    plan.offsets[r] = found ? best_offset : cursor;
    plan.arena_size = std::max(plan.arena_size, plan.offsets[r] + need);
    placed.push_back(r);
  }
  return plan;
}

}  // namespace loom::core
