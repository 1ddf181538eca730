// Ops that create tensors: Constant, ConstantOfShape, Range, EyeLike and the random
// generators.
#include <cmath>
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

loom_dtype_t dtype_attr(const NodeView& v, loom_dtype_t fallback) {
  if (!v.attrs().has("dtype")) return fallback;
  int64_t code = v.attrs().get_int("dtype", 0);
  if (code < LOOM_DTYPE_FLOAT32 || code > LOOM_DTYPE_BFLOAT16)
    v.fail("attribute dtype = " + std::to_string(code) + " is not a supported element type");
  return static_cast<loom_dtype_t>(code);
}

void constant(NodeView& v) {
  const sdk::Attributes& a = v.attrs();
  if (const loom_value_info_t* t = a.get_tensor("value")) {
    if (t->rank < 0) v.fail("attribute value has no shape");
    return v.set_output(0, t->dtype,
                        std::span<const int64_t>(t->dims, static_cast<size_t>(t->rank)));
  }
  auto vector_of = [](size_t n) { return Dims{static_cast<int64_t>(n)}; };
  if (a.has("value_float")) return v.set_output(0, LOOM_DTYPE_FLOAT32, Dims{});
  if (a.has("value_int")) return v.set_output(0, LOOM_DTYPE_INT64, Dims{});
  if (a.has("value_string")) return v.set_output(0, LOOM_DTYPE_STRING, Dims{});
  if (auto f = a.get_floats("value_floats"))
    return v.set_output(0, LOOM_DTYPE_FLOAT32, vector_of(f->size()));
  if (auto i = a.get_ints("value_ints"))
    return v.set_output(0, LOOM_DTYPE_INT64, vector_of(i->size()));
  if (auto s = a.get_strings("value_strings"))
    return v.set_output(0, LOOM_DTYPE_STRING, vector_of(s->size()));
  // sparse_value has no representation in the graph view: leave the output unknown.
  if (a.has("sparse_value")) return;
  v.fail("none of the attributes value, value_float(s), value_int(s), value_string(s) is set");
}

// ConstantOfShape(shape): the extents in `shape`, element type of attribute value (float32).
void constant_of_shape(NodeView& v) {
  const loom_value_info_t* value = v.attrs().get_tensor("value");
  loom_dtype_t dtype = value ? value->dtype : LOOM_DTYPE_FLOAT32;
  if (std::optional<Dims> shape = v.const_ints(0)) {
    for (int64_t d : *shape)
      if (d < 0) v.fail("shape " + dims_to_string(*shape) + " has a negative extent");
    return v.set_output(0, dtype, *shape);
  }
  std::optional<Dims> s = v.shape(0);
  if (s && s->size() == 1 && (*s)[0] >= 0)
    return v.set_output_rank(0, dtype, static_cast<int32_t>((*s)[0]));
  v.set_output_dtype(0, dtype);
}

// Range(start, limit, delta): 1-D of max(ceil((limit - start) / delta), 0) elements.
void range(NodeView& v) {
  loom_dtype_t dtype = v.dtype(0);
  for (size_t i = 0; i < 3; ++i) {
    // A one-element 1-D tensor is accepted as a scalar (the reference does, and ONNX's own
    // function bodies, e.g. AffineGrid's, feed Range such values); a 1-D extent that inference
    // could not fix (an If merging branches) may be that, and the kernel checks it at run time.
    std::optional<Dims> s = v.shape(i);
    if (s && !s->empty() && !(s->size() == 1 && ((*s)[0] == 1 || (*s)[0] == kUnknownDim)))
      v.fail("input " + std::to_string(i) + " " + dims_to_string(*s) + " must be a scalar");
  }
  int64_t count = kUnknownDim;
  if (dtype == LOOM_DTYPE_INT64 || dtype == LOOM_DTYPE_INT32 || dtype == LOOM_DTYPE_INT16) {
    auto start = v.const_ints(0), limit = v.const_ints(1), delta = v.const_ints(2);
    if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
      __int128 span = static_cast<__int128>((*limit)[0]) - (*start)[0];
      __int128 step = (*delta)[0];
      if (step == 0) v.fail("delta is zero");
      __int128 n = span / step + ((span % step != 0 && (span > 0) == (step > 0)) ? 1 : 0);
      count = n > 0 ? static_cast<int64_t>(n) : 0;
    }
  } else {
    auto start = v.const_doubles(0), limit = v.const_doubles(1), delta = v.const_doubles(2);
    if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
      if ((*delta)[0] == 0) v.fail("delta is zero");
      double n = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
      if (!std::isfinite(n) || n > 9.0e18)
        v.fail("start, limit and delta give no finite element count");
      count = n > 0 ? static_cast<int64_t>(n) : 0;
    }
  }
  v.set_output(0, dtype, Dims{count});
}

// EyeLike(input): 2-D of the input's shape, type from attribute dtype or the input.
void eye_like(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (in && in->size() != 2) v.fail("input " + dims_to_string(*in) + " must be 2-D");
  v.set_output(0, dtype_attr(v, v.dtype(0)),
               in ? in : std::optional<Dims>(Dims{kUnknownDim, kUnknownDim}));
}

// RandomNormal, RandomUniform: attribute shape, dtype default float32.
void random(NodeView& v) {
  std::optional<Dims> shape = v.ints_attr("shape");
  if (!shape) v.fail("attribute shape is required");
  for (int64_t d : *shape)
    if (d < 0) v.fail("shape " + dims_to_string(*shape) + " has a negative extent");
  v.set_output(0, dtype_attr(v, LOOM_DTYPE_FLOAT32), *shape);
}

// RandomNormalLike, RandomUniformLike, Bernoulli: input's shape, dtype attribute or input type.
void random_like(NodeView& v) {
  v.set_output(0, dtype_attr(v, v.dtype(0)), v.shape(0));
}

// Multinomial(input [batch, classes]): [batch, sample_size], int32 by default.
void multinomial(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (in && in->size() != 2) v.fail("input " + dims_to_string(*in) + " must be 2-D");
  v.set_output(0, dtype_attr(v, LOOM_DTYPE_INT32),
               Dims{in ? (*in)[0] : kUnknownDim, v.attrs().get_int("sample_size", 1)});
}

const InferEntry kEntries[] = {
    {"", "Constant", adapt<constant>},
    {"", "ConstantOfShape", adapt<constant_of_shape>},
    {"", "Range", adapt<range>},
    {"", "EyeLike", adapt<eye_like>},
    {"", "RandomNormal", adapt<random>},
    {"", "RandomUniform", adapt<random>},
    {"", "RandomNormalLike", adapt<random_like>},
    {"", "RandomUniformLike", adapt<random_like>},
    {"", "Bernoulli", adapt<random_like>},
    {"", "Multinomial", adapt<multinomial>},
};

}  // namespace

std::span<const InferEntry> generator_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
