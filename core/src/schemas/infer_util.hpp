// Helpers shared by the inference functions: a view of one inference call (inputs, outputs,
// attributes, constant data) with error reporting in the common "<OpType> node '<name>': ..."
// form, and shape arithmetic that treats -1 as an unknown extent.
#pragma once

#include <cstdint>
#include <loom/plugin.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schema_rows.hpp"

namespace loom::core::infer {

using Dims = std::vector<int64_t>;
constexpr int64_t kUnknownDim = -1;

// "[2,-1,3]" (unknown dims print as ?) or "[unknown rank]".
std::string dims_to_string(std::span<const int64_t> dims);
std::string dims_to_string(const std::optional<Dims>& dims);
inline std::string dims_to_string(const Dims& dims) {
  return dims_to_string(std::span<const int64_t>(dims));
}

class NodeView {
 public:
  NodeView(const loom_node_t& node, std::span<const loom_value_info_t* const> inputs,
           std::span<loom_inferred_t> outputs)
      : node_(node), inputs_(inputs), outputs_(outputs), attrs_(node) {}

  const loom_node_t& node() const { return node_; }
  const sdk::Attributes& attrs() const { return attrs_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }

  // nullptr for an omitted or absent input.
  const loom_value_info_t* input(size_t i) const {
    return i < inputs_.size() ? inputs_[i] : nullptr;
  }
  bool has_input(size_t i) const { return input(i) != nullptr; }
  loom_dtype_t dtype(size_t i) const;
  // Dims of input i when its rank is known (negative extents normalised to -1).
  std::optional<Dims> shape(size_t i) const;
  // Rank of input i, or -1.
  int32_t rank(size_t i) const;

  // Data of a constant integer input (int32 or int64), widened to int64; nullopt when the input
  // is missing or not a constant. Throws for a constant whose data is shorter than its shape.
  std::optional<std::vector<int64_t>> const_ints(size_t i) const;
  // Same for numeric constants of any type, as doubles.
  std::optional<std::vector<double>> const_doubles(size_t i) const;
  // An INTS attribute as a vector.
  std::optional<std::vector<int64_t>> ints_attr(const char* name) const;
  std::optional<std::vector<float>> floats_attr(const char* name) const;

  // Output setters; indices past the node's outputs are ignored (omitted optional outputs).
  void set_output(size_t i, loom_dtype_t dtype, std::span<const int64_t> dims);
  void set_output(size_t i, loom_dtype_t dtype, const std::optional<Dims>& dims);
  void set_output(size_t i, loom_dtype_t dtype, const Dims& dims) {
    set_output(i, dtype, std::span<const int64_t>(dims));
  }
  void set_output_rank(size_t i, loom_dtype_t dtype, int32_t rank);  // extents unknown
  void set_output_dtype(size_t i, loom_dtype_t dtype);               // rank unknown
  // Output i gets the dtype and shape of input j.
  void propagate(size_t j, size_t i);

  // Throws LOOM_ERROR_INVALID_MODEL with "<OpType> node '<name>': <what>".
  [[noreturn]] void fail(const std::string& what) const;

  // Normalises a possibly negative axis into [0, rank); fails when out of range.
  int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") const;

 private:
  const loom_node_t& node_;
  std::span<const loom_value_info_t* const> inputs_;
  std::span<loom_inferred_t> outputs_;
  sdk::Attributes attrs_;
};

// Adapts a function taking a NodeView to the InferFn signature.
template <void (*Fn)(NodeView&)>
void adapt(const loom_node_t& node, std::span<const loom_value_info_t* const> inputs,
           std::span<loom_inferred_t> outputs) {
  NodeView view(node, inputs, outputs);
  Fn(view);
}

// Numpy-style (multidirectional) broadcast of two shapes; fails on a certain mismatch.
Dims broadcast(const NodeView& v, const Dims& a, const Dims& b);
// Product of extents; -1 if any is unknown; fails on int64 overflow.
int64_t element_count(const NodeView& v, std::span<const int64_t> dims);
// a * b of known, non-negative extents, failing on overflow.
int64_t checked_mul(const NodeView& v, int64_t a, int64_t b);
// a + b, failing on overflow.
int64_t checked_add(const NodeView& v, int64_t a, int64_t b);
// Two extents of the same dimension that must agree: the known one, or a failure naming `what`.
int64_t merge_dim(const NodeView& v, int64_t a, int64_t b, const std::string& what);

// The axes of Squeeze / Unsqueeze / reductions: attribute `axes` (older opsets) or the
// constant input `input_index` (newer ones).
struct Axes {
  bool given = false;           // the node names axes at all
  std::optional<Dims> values;   // their values, when known
  int64_t count = kUnknownDim;  // how many, when known (also from a non-constant input's shape)
};
Axes read_axes(const NodeView& v, size_t input_index);

// Unidirectional broadcast check: `from` (e.g. a bias) must broadcast to `to` without changing
// it; fails with "<what> [..] does not broadcast to [..]".
void check_broadcasts_to(const NodeView& v, const Dims& from, const Dims& to,
                         const std::string& what);

// Output 0 = input 0 (type and shape). Used by activations, Identity, most unary math.
void same_as_input(NodeView& v);

}  // namespace loom::core::infer
