// The NEON device's tensors: dense float32, either in NCHW (row-major) order, the layout the
// core hands over, or (rank 4 only, packed4) in NC4HW4 (kernels/pack4.hpp), the layout the
// device keeps between its own ops; dims are the logical NCHW shape either way. A tensor owns
// its memory (64-byte aligned) or borrows it from a graph input or constant that outlives the
// run.
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
  bool packed4 = false;         // NC4HW4: [N][ceil(C/4)][H][W][4], padding lanes zero

  size_t size() const {
    size_t n = 1;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    return n;
  }
  int rank() const { return static_cast<int>(dims.size()); }
  // Packed tensors: the number of 4-channel blocks and the H*W plane.
  size_t blocks() const { return (static_cast<size_t>(dims[1]) + 3) / 4; }
  size_t plane() const { return static_cast<size_t>(dims[2] * dims[3]); }
  // Floats the data holds: size(), or with the padded channels when packed.
  size_t storage_floats() const {
    return packed4 ? static_cast<size_t>(dims[0]) * blocks() * 4 * plane() : size();
  }
};

// An uninitialised float tensor of the given shape; throws LOOM_ERROR_OUT_OF_MEMORY.
Tensor make_tensor(std::vector<int64_t> dims);
// An uninitialised NC4HW4 tensor of the logical NCHW shape dims (channels padded to 4).
Tensor make_pack4_tensor(std::vector<int64_t> dims);

// "[1, 3, 224, 224]" for error messages.
std::string shape_text(std::span<const int64_t> dims);

}  // namespace loom::neon
