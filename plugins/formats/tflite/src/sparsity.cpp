// TFLite's sparse tensor format (see sparsity.hpp and the SparsityParameters comment in
// schema/tflite_subset.fbs).
//
// A tensor of rank n with k blocked dimensions is stored as an (n + k)-dimensional tensor: the
// original dimension d becomes shape[d] / block_size (when some block dimension maps to d) and
// the block dimensions n..n+k-1 hold the block sizes. `traversal_order` lists those n + k
// dimensions in storage order and `dim_metadata[i]` describes the i-th of them: DENSE (every
// index 0..dense_size-1 present) or SPARSE_CSR (for parent position p, the indices
// array_indices[array_segments[p] .. array_segments[p + 1]) are present). A leaf's position in
// the traversal is the index of its value. Densifying walks that tree once.
#include "sparsity.hpp"

#include <flatbuffers/flatbuffers.h>

#include <loom/plugin.hpp>

#include "tflite_subset_generated.h"

namespace loom::tflite {
namespace fb = loom::tflite_schema;
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, "tflite: " + message);
}

// One SPARSE_CSR index vector, whatever its element type, read with bounds checks.
struct IndexVector {
  const void* data = nullptr;
  size_t size = 0;
  int width = 0;  // bytes per entry: 4, 2 or 1
  int64_t at(size_t i) const {
    const auto* bytes = static_cast<const uint8_t*>(data);
    switch (width) {
      case 4:
        return flatbuffers::ReadScalar<int32_t>(bytes + 4 * i);
      case 2:
        return flatbuffers::ReadScalar<uint16_t>(bytes + 2 * i);
      default:
        return bytes[i];
    }
  }
};

IndexVector index_vector(fb::SparseIndexVector type, const void* table, const std::string& what) {
  IndexVector v;
  // A union may name its type and still hold no table (the verifier accepts an absent value).
  if (!table) invalid(what + " is missing");
  switch (type) {
    case fb::SparseIndexVector::Int32Vector: {
      const auto* values = static_cast<const fb::Int32Vector*>(table)->values();
      if (values) v = {values->data(), values->size(), 4};
      break;
    }
    case fb::SparseIndexVector::Uint16Vector: {
      const auto* values = static_cast<const fb::Uint16Vector*>(table)->values();
      if (values) v = {values->data(), values->size(), 2};
      break;
    }
    case fb::SparseIndexVector::Uint8Vector: {
      const auto* values = static_cast<const fb::Uint8Vector*>(table)->values();
      if (values) v = {values->data(), values->size(), 1};
      break;
    }
    default:
      invalid(what + " is missing or of an unknown index type");
  }
  if (!v.data) invalid(what + " has no values");
  return v;
}

struct Level {
  bool dense = true;
  int64_t size = 0;  // of the (expanded) dimension this level walks
  IndexVector segments, indices;
};

}  // namespace

std::vector<uint8_t> densify(const void* sparsity_ptr, std::span<const int64_t> shape,
                             size_t element_size, std::span<const uint8_t> values,
                             const std::string& where, size_t max_bytes) {
  const auto* sparsity = static_cast<const fb::SparsityParameters*>(sparsity_ptr);
  const std::string prefix = where + " is sparse, but its sparsity parameters";
  const size_t n = shape.size();
  const auto* order = sparsity->traversal_order();
  const auto* block_map = sparsity->block_map();
  const auto* metadata = sparsity->dim_metadata();
  const size_t k = block_map ? block_map->size() : 0;
  if (!order || order->size() != n + k)
    invalid(prefix + " have a traversal order of " + std::to_string(order ? order->size() : 0) +
            " dimensions; the rank is " + std::to_string(n) + " with " + std::to_string(k) +
            " block dimensions");
  if (!metadata || metadata->size() != n + k)
    invalid(prefix + " describe " + std::to_string(metadata ? metadata->size() : 0) +
            " dimensions instead of " + std::to_string(n + k));
  if (element_size == 0 || values.size() % element_size != 0)
    invalid(where + " has " + std::to_string(values.size()) +
            " bytes of sparse values, not a whole number of elements");

  // traversal_order must be a permutation of 0..n+k-1 with the original dimensions first.
  std::vector<int> seen(n + k, 0), level_of(n + k, -1);
  for (size_t i = 0; i < n + k; ++i) {
    const int32_t d = order->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (d < 0 || static_cast<size_t>(d) >= n + k || seen[d]++)
      invalid(prefix + " have a traversal order that is not a permutation of 0.." +
              std::to_string(n + k - 1));
    if ((i < n) != (static_cast<size_t>(d) < n))
      invalid(prefix + " traverse a block dimension before an original one");
    level_of[d] = static_cast<int>(i);
  }
  // Block sizes (dense_size of each block dimension) and the expanded sizes.
  std::vector<int64_t> block(n, 1), expanded(n + k, 0);
  std::vector<int> block_dim(n, -1);
  for (size_t j = 0; j < k; ++j) {
    const int32_t d = block_map->Get(static_cast<flatbuffers::uoffset_t>(j));
    if (d < 0 || static_cast<size_t>(d) >= n || block_dim[d] >= 0)
      invalid(prefix + " map block dimension " + std::to_string(j) + " to dimension " +
              std::to_string(d) + " (out of range or already blocked)");
    const auto* m = metadata->Get(static_cast<flatbuffers::uoffset_t>(level_of[n + j]));
    if (m->format() != fb::DimensionType::DENSE || m->dense_size() <= 0 ||
        shape[d] % m->dense_size() != 0)
      invalid(prefix + " give block dimension " + std::to_string(j) + " a size of " +
              std::to_string(m->dense_size()) + ", which does not divide dimension " +
              std::to_string(d) + " (" + std::to_string(shape[d]) + ") or is not dense");
    block[d] = m->dense_size();
    block_dim[d] = static_cast<int>(n + j);
    expanded[n + j] = m->dense_size();
  }
  for (size_t d = 0; d < n; ++d) expanded[d] = shape[d] / block[d];

  size_t dense_elements = 1;
  for (int64_t dim : shape) dense_elements *= static_cast<size_t>(dim);  // bounded by the caller
  if (dense_elements > max_bytes / element_size)
    invalid(where + " is sparse and would densify to " +
            std::to_string(dense_elements * element_size) + " bytes, more than the " +
            std::to_string(max_bytes) + " allowed for a file of this size");

  std::vector<Level> levels(n + k);
  size_t parents = 1;  // positions at the level above (bounds the segment vectors)
  for (size_t i = 0; i < n + k; ++i) {
    const auto* m = metadata->Get(static_cast<flatbuffers::uoffset_t>(i));
    Level& level = levels[i];
    level.size = expanded[order->Get(static_cast<flatbuffers::uoffset_t>(i))];
    const std::string what = prefix + " (dimension " + std::to_string(i) + " of the traversal)";
    if (m->format() == fb::DimensionType::DENSE) {
      if (m->dense_size() != level.size)
        invalid(what + " declare a dense size of " + std::to_string(m->dense_size()) +
                ", but the dimension has " + std::to_string(level.size));
      parents *= static_cast<size_t>(level.size);
      continue;
    }
    if (m->format() != fb::DimensionType::SPARSE_CSR) invalid(what + " have an unknown format");
    level.dense = false;
    level.segments =
        index_vector(m->array_segments_type(), m->array_segments(), what + " segments");
    level.indices = index_vector(m->array_indices_type(), m->array_indices(), what + " indices");
    if (level.segments.size != parents + 1)
      invalid(what + " have " + std::to_string(level.segments.size) + " segments; " +
              std::to_string(parents + 1) + " are needed");
    // Segments start at 0, never decrease and end at the number of indices; each index is
    // inside the dimension.
    if (level.segments.at(0) != 0 ||
        level.segments.at(parents) != static_cast<int64_t>(level.indices.size))
      invalid(what + " have segments that do not span the " + std::to_string(level.indices.size) +
              " indices");
    for (size_t p = 0; p < parents; ++p)
      if (level.segments.at(p + 1) < level.segments.at(p))
        invalid(what + " have decreasing segments");
    for (size_t j = 0; j < level.indices.size; ++j)
      if (level.indices.at(j) < 0 || level.indices.at(j) >= level.size)
        invalid(what + " have index " + std::to_string(level.indices.at(j)) +
                " outside the dimension of size " + std::to_string(level.size));
    parents = level.indices.size;
  }
  const size_t num_values = values.size() / element_size;
  if (parents != num_values)
    invalid(where + " is sparse with " + std::to_string(parents) + " stored elements, but has " +
            std::to_string(num_values) + " values");

  // Row-major strides of the dense tensor.
  std::vector<size_t> stride(n, 1);
  for (size_t d = n; d-- > 1;) stride[d - 1] = stride[d] * static_cast<size_t>(shape[d]);
  std::vector<uint8_t> dense(dense_elements * element_size, 0);
  std::vector<int64_t> index(n + k, 0);
  // Depth-first over the traversal; `position` is the node's index at its level.
  auto visit = [&](auto&& self, size_t level_index, size_t position) -> void {
    if (level_index == n + k) {
      size_t offset = 0;
      for (size_t d = 0; d < n; ++d) {
        int64_t coordinate = index[d] * block[d] + (block_dim[d] >= 0 ? index[block_dim[d]] : 0);
        offset += static_cast<size_t>(coordinate) * stride[d];
      }
      std::copy_n(values.data() + position * element_size, element_size,
                  dense.data() + offset * element_size);
      return;
    }
    const Level& level = levels[level_index];
    const int32_t d = order->Get(static_cast<flatbuffers::uoffset_t>(level_index));
    if (level.dense) {
      for (int64_t i = 0; i < level.size; ++i) {
        index[d] = i;
        self(self, level_index + 1, position * static_cast<size_t>(level.size) + i);
      }
      return;
    }
    for (int64_t j = level.segments.at(position); j < level.segments.at(position + 1); ++j) {
      index[d] = level.indices.at(static_cast<size_t>(j));
      self(self, level_index + 1, static_cast<size_t>(j));
    }
  };
  visit(visit, 0, 0);
  return dense;
}

}  // namespace loom::tflite
