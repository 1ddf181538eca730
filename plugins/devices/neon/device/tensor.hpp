// The NEON device's tensors: dense float32 in NCHW (row-major) order, the layout the core
// hands over, so subgraph boundaries need no conversion. A tensor owns its memory (64-byte
// aligned) or borrows it from a graph input or constant that outlives the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace loom::neon {

struct Tensor {
  std::vector<int64_t> dims;
  float* data = nullptr;
  std::shared_ptr<void> owner;  // empty for borrowed memory

  size_t size() const {
    size_t n = 1;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    return n;
  }
  int rank() const { return static_cast<int>(dims.size()); }
};

// An uninitialised float tensor of the given shape; throws LOOM_ERROR_OUT_OF_MEMORY.
Tensor make_tensor(std::vector<int64_t> dims);

// "[1, 3, 224, 224]" for error messages.
std::string shape_text(std::span<const int64_t> dims);

}  // namespace loom::neon
