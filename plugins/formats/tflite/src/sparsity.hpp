// Densifies constant tensors stored in TFLite's sparse format (SparsityParameters), at load:
// Loom's devices take dense weights, and the sparse encodings TFLite uses (pruned weights with
// CSR dimensions, optionally blocked, e.g. 1x4 or 1x16 blocks for FULLY_CONNECTED) save file
// size, not work, on the devices Loom targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace loom::tflite {

// The dense bytes (row-major, `shape`) of a sparse constant whose non-zero values are `values`
// (elements of `element_size` bytes in the traversal order of `sparsity`, a verified
// fb::SparsityParameters). Every dimension size, segment and index is checked against the
// shape and the number of values before it is used; the dense result may not exceed
// `max_bytes`. Throws sdk::Error naming `where` on any inconsistency.
std::vector<uint8_t> densify(const void* sparsity, std::span<const int64_t> shape,
                             size_t element_size, std::span<const uint8_t> values,
                             const std::string& where, size_t max_bytes);

}  // namespace loom::tflite
