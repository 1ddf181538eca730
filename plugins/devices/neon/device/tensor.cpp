#include "tensor.hpp"

#include <cstdlib>
#include <loom/plugin.hpp>

namespace loom::neon {

namespace {

// Allocates `dims` with its channel extent (dims[1]) rounded up to 4 when packed4.
Tensor allocate(std::vector<int64_t> dims, bool packed4) {
  Tensor t;
  t.dims = std::move(dims);
  t.packed4 = packed4;
  if (packed4 && t.dims.size() != 4)
    sdk::fail(LOOM_ERROR_INTERNAL, "neon: NC4HW4 tensor of rank " + std::to_string(t.dims.size()));
  size_t count = 1;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    int64_t d = t.dims[i];
    if (packed4 && i == 1 && d > 0) d = (d + 3) / 4 * 4;
    if (d < 0) sdk::fail(LOOM_ERROR_INTERNAL, "neon: negative extent in " + shape_text(t.dims));
    if (d > 0 && count > (SIZE_MAX >> 4) / static_cast<size_t>(d))
      sdk::fail(LOOM_ERROR_OUT_OF_MEMORY, "neon: tensor " + shape_text(t.dims) + " is too large");
    count *= static_cast<size_t>(d);
  }
  // Rounded up to whole cache lines, plus one, so vector tails may read (not use) past the end.
  size_t bytes = (count * sizeof(float) + 63) / 64 * 64 + 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p)
    sdk::fail(LOOM_ERROR_OUT_OF_MEMORY,
              "neon: out of memory for a tensor of " + shape_text(t.dims) + " floats");
  t.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data = static_cast<float*>(p);
  return t;
}

}  // namespace

Tensor make_tensor(std::vector<int64_t> dims) {
  return allocate(std::move(dims), false);
}

Tensor make_pack4_tensor(std::vector<int64_t> dims) {
  return allocate(std::move(dims), true);
}

std::string shape_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace loom::neon
