// Constant (value, value_float(s), value_int(s), value_string(s); a sparse_value arrives
// densified as `value`) and ConstantOfShape.
#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void constant_kernel(KernelContext& ctx) {
  const Attributes& attrs = ctx.attrs();
  if (const loom_value_info_t* v = attrs.get_tensor("value")) {
    if (v->rank < 0 || v->rank > LOOM_MAX_RANK || (!v->data && v->data_size))
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'value' is not a valid tensor");
    // The model constant outlives every run of the executable: share it, do not copy.
    Tensor t;
    t.view.dtype = v->dtype;
    t.view.rank = v->rank;
    for (int32_t i = 0; i < v->rank; ++i) t.view.dims[i] = v->dims[i];
    const size_t expected =
        static_cast<size_t>(sdk::element_count(t.view)) * element_size(ctx, v->dtype);
    if (v->data_size != expected)
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'value' holds " +
                                         std::to_string(v->data_size) + " bytes, expected " +
                                         std::to_string(expected));
    t.view.data = const_cast<void*>(v->data);
    t.view.byte_size = v->data_size;
    ctx.set_output(0, std::move(t));
    return;
  }
  if (attrs.has("value_float")) {
    loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_FLOAT32, {});
    *sdk::data_of<float>(out) = attrs.get_float("value_float", 0.0f);
  } else if (auto fs = attrs.get_floats("value_floats")) {
    int64_t dims[1] = {static_cast<int64_t>(fs->size())};
    loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_FLOAT32, dims);
    std::copy(fs->begin(), fs->end(), sdk::data_of<float>(out));
  } else if (attrs.has("value_int")) {
    loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_INT64, {});
    *sdk::data_of<int64_t>(out) = attrs.get_int("value_int", 0);
  } else if (auto is = attrs.get_ints("value_ints")) {
    int64_t dims[1] = {static_cast<int64_t>(is->size())};
    loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_INT64, dims);
    std::copy(is->begin(), is->end(), sdk::data_of<int64_t>(out));
  } else if (attrs.has("value_string")) {
    const std::string s = attrs.get_string("value_string", "");
    OutputBuffer out(ctx, 0, LOOM_DTYPE_STRING, {});
    *out.data_as<loom_string_t>() = loom_string_t{s.data(), s.size()};
    out.commit();  // copies the bytes
  } else if (auto ss = attrs.get_strings("value_strings")) {
    int64_t dims[1] = {static_cast<int64_t>(ss->size())};
    OutputBuffer out(ctx, 0, LOOM_DTYPE_STRING, dims);
    std::copy(ss->begin(), ss->end(), out.data_as<loom_string_t>());
    out.commit();
  } else {
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": has no value attribute (value, " +
                                       "value_float(s), value_int(s) or value_string(s))");
  }
}

void constant_of_shape_kernel(KernelContext& ctx) {
  const std::vector<int64_t> dims = read_int_values(ctx, ctx.required_input(0), "input");
  for (int64_t d : dims)
    if (d < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": shape " + shape_string(dims) + " has a negative dimension");
  loom_dtype_t dtype = LOOM_DTYPE_FLOAT32;
  const void* value = nullptr;
  if (const loom_value_info_t* v = ctx.attrs().get_tensor("value")) {
    if (v->dtype == LOOM_DTYPE_STRING || !v->data || v->data_size != sdk::dtype_size(v->dtype) ||
        sdk::dtype_size(v->dtype) == 0)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": attribute 'value' must be a " + "one-element numeric tensor");
    dtype = v->dtype;
    value = v->data;
  }
  OutputBuffer out(ctx, 0, dtype, dims);
  if (value) {
    const size_t esize = sdk::dtype_size(dtype);
    const size_t n = static_cast<size_t>(product(dims));
    auto* dst = static_cast<unsigned char*>(out.data());
    for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * esize, value, esize);
  }
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Constant", 1, constant_kernel, nullptr);
LOOM_CPU_KERNEL("ConstantOfShape", 9, constant_of_shape_kernel, nullptr);

}  // namespace loom::cpu
