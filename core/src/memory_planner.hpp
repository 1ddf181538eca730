// Plans one arena per compiled subgraph: buffers whose lifetimes do not overlap share bytes.
// Greedy by size (largest first), each buffer goes into the smallest gap between buffers that
// are alive at the same time ("best fit"), as TFLite's and ORT's planners do.
#pragma once

#include <cstddef>
#include <vector>

namespace loom::core {

struct BufferRequest {
  size_t size = 0;
  int first_use = 0;  // step that writes it
  int last_use = 0;   // last step that reads it (>= first_use)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per request
  size_t arena_size = 0;        // planned peak bytes
};

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 64);

}  // namespace loom::core
