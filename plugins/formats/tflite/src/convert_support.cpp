// Helpers the TFLite operator converters share: see convert_support.hpp.
#include "convert_support.hpp"

#include <algorithm>
#include <loom/op_semantics.hpp>
#include <loom/plugin.hpp>

namespace loom::tflite {

bool same_quantization(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.quantized == b.quantized && a.quant.scales == b.quant.scales &&
         a.quant.zero_points == b.quant.zero_points;
}

bool same_storage(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.quantized == b.quantized && !a.quant.per_channel() &&
         !b.quant.per_channel();
}

int64_t normalized_axis(const Converter& c, int64_t axis, int64_t rank) {
  const std::optional<int64_t> a = sdk::try_normalize_axis(axis, rank);
  if (!a) c.invalid("axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  return *a;
}

Layout agnostic_layout(const Converter& c, const TensorView& x) {
  return x.rank() == 4 ? c.preferred_layout({&x}) : Layout::kNative;
}

int64_t constant_scalar(const Converter& c, const TensorView& t, const std::string& what) {
  const std::vector<int64_t> v = c.constant_ints(t);
  if (v.size() != 1) c.invalid(what + " must have one element, not " + std::to_string(v.size()));
  return v[0];
}

void check_elements(const Converter& c, const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxDim) c.invalid("dimension " + std::to_string(d) + " is out of range");
    if (d != 0 && count > kMaxTensorElements / d)
      c.invalid("the result would have more than 2^31 elements");
    count *= d;
  }
  if (count > kMaxTensorElements) c.invalid("the result would have more than 2^31 elements");
}

bool static_shape(const TensorView& t) {
  return std::all_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d >= 0; });
}

Mover mover(Converter& c, std::initializer_list<const TensorView*> inputs,
            const std::vector<const TensorView*>& outputs, Requant policy) {
  bool direct = true;
  for (const TensorView* x : inputs)
    for (const TensorView* y : outputs)
      direct = direct &&
               (same_quantization(*x, *y) || (policy == Requant::kCopy && same_storage(*x, *y)));
  return {c, direct};
}

std::vector<const TensorView*> all_outputs(const Converter& c) {
  std::vector<const TensorView*> outputs;
  for (size_t i = 0; i < c.op().outputs.size(); ++i) outputs.push_back(&c.output(i));
  if (outputs.empty()) c.invalid("the operator has no outputs");
  return outputs;
}

std::string int64_operand(Converter& c, const TensorView& t, const std::string& base) {
  if (t.is_constant()) return c.constant_i64(base, c.constant_ints(t), t.shape);
  if (t.dtype != LOOM_DTYPE_INT32 && t.dtype != LOOM_DTYPE_INT64)
    c.invalid("tensor '" + t.name + "' must be int32 or int64, not " + sdk::dtype_name(t.dtype));
  const std::string name = c.fresh(t.name + "/i64");
  c.emit("Cast", {c.value(t, Layout::kNative)}, {name}, {Attr::Int("to", LOOM_DTYPE_INT64)});
  return name;
}

void expect_exact_inputs(const Converter& c, size_t count) {
  const size_t have = c.op().inputs.size();
  if (have != count)
    c.invalid("expects " + std::to_string(count) + " input" + (count == 1 ? "" : "s") +
              ", the operator has " + std::to_string(have));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

void expect_shape(const Converter& c, const TensorView& y, const std::vector<int64_t>& shape) {
  bool same = y.shape.size() == shape.size();
  for (size_t i = 0; same && i < shape.size(); ++i)
    same = y.shape[i] == shape[i] || y.shape[i] == -1 || shape[i] == -1;
  if (!same)
    c.invalid("output '" + y.name + "' has shape " + shape_text(y.shape) + ", expected " +
              shape_text(shape));
}

bool plain(std::initializer_list<const TensorView*> inputs, const TensorView& y) {
  if (y.quantized) return false;
  for (const TensorView* t : inputs)
    if (t->quantized || t->dtype != y.dtype) return false;
  return true;
}

int64_t single_axis(const Converter& c, const TensorView& axis_tensor, int64_t rank) {
  const std::vector<int64_t> axes = c.constant_ints(axis_tensor);
  if (axes.size() != 1)
    c.invalid("the axis operand must hold one value, it has " + std::to_string(axes.size()));
  return normalized_axis(c, axes[0], rank);
}

std::string scalar_f32(Converter& c, const std::string& base, float v) {
  return c.constant_f32(base, {v}, {});
}

}  // namespace loom::tflite
