// Helpers the TFLite operator converters share (convert_*.cpp): axes, quantization checks,
// constant operands and the moving of values between layouts and quantizations.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "converter.hpp"

namespace loom::tflite {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Same element type and the same quantization (scales and zero points), or both unquantized.
bool same_quantization(const TensorView& a, const TensorView& b);

// Same stored type, per-tensor quantized or not at all: TFLite's data-movement kernels (GATHER,
// STRIDED_SLICE, PAD, SPLIT, TILE...) then copy the stored values even when the scale or zero
// point changes (checked against the reference interpreter), and so does Loom.
bool same_storage(const TensorView& a, const TensorView& b);

// `axis` in [-rank, rank) made non-negative; anything else is refused naming the operator.
int64_t normalized_axis(const Converter& c, int64_t axis, int64_t rank);

// The ONNX axis of TFLite axis `d` of a tensor held in `layout`.
inline int64_t onnx_axis(Layout layout, int64_t d) {
  return layout == Layout::kNchw ? nchw_axis(d) : d;
}

// The layout a layout-agnostic operator on rank-4 `x` works in.
Layout agnostic_layout(const Converter& c, const TensorView& x);

// A constant holding a single scalar, checked.
int64_t constant_scalar(const Converter& c, const TensorView& t, const std::string& what);

// Refuses a constant shape (or shape x multiples) whose result would exceed the element limit:
// a hostile file must not make the runtime allocate without bound.
void check_elements(const Converter& c, const std::vector<int64_t>& dims);

// Every dimension known.
bool static_shape(const TensorView& t);

// Moves values between one input and the outputs: stored values when every output has the
// input's type and quantization, else float values that finish() quantizes.
struct Mover {
  Converter& c;
  bool direct;
  std::string in(const TensorView& t, Layout layout) const {
    return direct ? c.value(t, layout) : c.float_value(t, layout);
  }
  std::string out(const TensorView& t, Layout layout) const {
    return direct ? c.define(t, layout) : c.float_output(t, layout);
  }
  void finish(const TensorView& t, Layout layout, const std::string& produced) const {
    if (!direct) c.finish_output(t, layout, produced);
  }
};

// How an operator treats a change of quantization: kCopy moves the stored values regardless
// (TFLite's kernel copies them), kRequantize dequantizes and requantizes.
enum class Requant { kCopy, kRequantize };

// The Mover for these inputs and outputs under `policy`.
Mover mover(Converter& c, std::initializer_list<const TensorView*> inputs,
            const std::vector<const TensorView*>& outputs, Requant policy);

// The operator's outputs (at least one, else the operator is refused).
std::vector<const TensorView*> all_outputs(const Converter& c);

// An int64 version of a shape-like operand: a constant, or a Cast of a run-time value.
std::string int64_operand(Converter& c, const TensorView& t, const std::string& base);

// Refuses an operator without exactly `count` inputs.
void expect_exact_inputs(const Converter& c, size_t count);

// "[1,2,3]".
std::string shape_text(const std::vector<int64_t>& shape);

// Refuses an output whose declared shape differs from `shape` (-1, a dynamic dimension, matches
// anything).
void expect_shape(const Converter& c, const TensorView& y, const std::vector<int64_t>& shape);

// Whether the operands' stored values can be used as they are: nothing quantized, one type.
bool plain(std::initializer_list<const TensorView*> inputs, const TensorView& y);

// The single axis of a constant axis operand (ARG_MAX, CUMSUM), made non-negative.
int64_t single_axis(const Converter& c, const TensorView& axis_tensor, int64_t rank);

// A float32 scalar constant.
std::string scalar_f32(Converter& c, const std::string& base, float v);

}  // namespace loom::tflite
