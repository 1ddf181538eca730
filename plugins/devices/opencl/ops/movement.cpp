// Ops that only move elements, for any element type of 1, 2, 4 or 8 bytes: the reshaping
// family (a flat copy: shapes are static at compile time), Transpose, Expand, Slice, Concat,
// Split (all one strided copy kernel), Gather, constant-mode Pad, and Constant.
#include <algorithm>
#include <climits>
#include <cstring>
#include <loom/half.hpp>
#include <loom/op_semantics.hpp>
#include <optional>

#include "ops.hpp"

namespace loom::opencl {
namespace {

std::string check_movable(const NodeInfo& node, size_t input = 0) {
  const loom_value_info_t* x = node.input(input);
  if (x && x->dtype != LOOM_DTYPE_UNDEFINED && !size_suffix(sdk::dtype_size(x->dtype)))
    return std::string(sdk::dtype_name(x->dtype)) + " elements are not supported on opencl";
  return "";
}

void strided_copy(Executable& exe, int x, int64_t x_extra, int y, int64_t y_extra,
                  const std::vector<int64_t>& dims, const std::vector<int64_t>& xs,
                  const std::vector<int64_t>& ys, const std::string& label) {
  int64_t n = elements_of(dims);
  std::string kernel = std::string("strided_copy_") + size_suffix(exe.value(y).elem_size);
  KernelCall(exe, kernel.c_str(), label)
      .buffer(x, x_extra)
      .buffer(y, y_extra)
      .i32(n)
      .vec8(dims, 1)
      .vec8(xs, 0)
      .vec8(ys, 0)
      .launch_1d(n);
}

// ---- the reshaping family --------------------------------------------------------------------

std::string check_reshape(const NodeInfo& node) {
  if (std::string r = check_movable(node); !r.empty()) return r;
  std::string op = node.op();
  // The output shape must be known when the subgraph is compiled: constant shape/axes inputs.
  if (op == "Reshape" && !node.is_constant(1) && !shape_known(node.output(0)))
    return "the shape input must be a constant on opencl";
  if ((op == "Squeeze" || op == "Unsqueeze") && node.input(1) && !node.is_constant(1) &&
      !shape_known(node.output(0)))
    return "the axes input must be a constant on opencl";
  return "";
}

void lower_copy(Executable& exe, const NodeInfo& node, const Fusion&) {
  copy_value(exe, node.input_id(0), node.output_id(0), node.describe());
}

// ---- Transpose, Expand -----------------------------------------------------------------------

std::string check_transpose(const NodeInfo& node) {
  return check_movable(node);
}

void lower_transpose(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  const Value& y = exe.value(node.output_id(0));
  size_t rank = x.shape.size();
  std::vector<int64_t> perm(rank);
  if (auto p = node.attrs.get_ints("perm")) {
    perm.assign(p->begin(), p->end());
  } else {
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  }
  if (perm.size() != rank)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": perm has the wrong length");
  std::vector<int64_t> in_strides = contiguous_strides(x.shape), xs(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(rank))
      sdk::fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": perm value out of range");
    xs[i] = in_strides[perm[i]];
  }
  strided_copy(exe, node.input_id(0), 0, node.output_id(0), 0, y.shape, xs,
               contiguous_strides(y.shape), node.describe());
}

std::string check_expand(const NodeInfo& node) {
  if (std::string r = check_movable(node); !r.empty()) return r;
  if (!node.is_constant(1) && !shape_known(node.output(0)))
    return "the shape input must be a constant on opencl";
  return "";
}

void lower_expand(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  const Value& y = exe.value(node.output_id(0));
  strided_copy(exe, node.input_id(0), 0, node.output_id(0), 0, y.shape,
               broadcast_strides(x.shape, y.shape), contiguous_strides(y.shape), node.describe());
}

// ---- Concat, Split ---------------------------------------------------------------------------

std::string check_concat(const NodeInfo& node) {
  for (size_t i = 0; i < node.node.num_inputs; ++i)
    if (std::string r = check_movable(node, i); !r.empty()) return r;
  return "";
}

void lower_concat(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& y = exe.value(node.output_id(0));
  auto rank = static_cast<int64_t>(y.shape.size());
  int64_t axis = sdk::normalize_axis(node.attrs.get_int("axis", 0), rank, node.describe());
  std::vector<int64_t> ys = contiguous_strides(y.shape);
  int64_t offset = 0;
  for (size_t i = 0; i < node.node.num_inputs; ++i) {
    int id = node.input_id(i);
    if (id < 0) continue;
    const Value& x = exe.value(id);
    strided_copy(exe, id, 0, node.output_id(0), offset * ys[axis], x.shape,
                 contiguous_strides(x.shape), ys, node.describe());
    offset += x.shape[axis];
  }
}

std::string check_split(const NodeInfo& node) {
  return check_movable(node);
}

void lower_split(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = sdk::normalize_axis(node.attrs.get_int("axis", 0), rank, node.describe());
  std::vector<int64_t> xs = contiguous_strides(x.shape);
  int64_t offset = 0;
  for (size_t o = 0; o < node.node.num_outputs; ++o) {
    int id = node.output_id(o);
    if (id < 0) continue;
    const Value& y = exe.value(id);
    strided_copy(exe, node.input_id(0), offset * xs[axis], id, 0, y.shape, xs,
                 contiguous_strides(y.shape), node.describe());
    offset += y.shape[axis];
  }
}

// ---- Slice -----------------------------------------------------------------------------------

struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

std::optional<SliceParams> slice_params(const NodeInfo& node) {
  SliceParams p;
  if (node.node.opset < 10) {
    auto s = node.attrs.get_ints("starts"), e = node.attrs.get_ints("ends");
    if (!s || !e) return std::nullopt;
    p.starts.assign(s->begin(), s->end());
    p.ends.assign(e->begin(), e->end());
    if (auto a = node.attrs.get_ints("axes")) p.axes.assign(a->begin(), a->end());
  } else {
    auto s = node.constant_ints(1), e = node.constant_ints(2);
    if (!s || !e) return std::nullopt;
    p.starts = *s;
    p.ends = *e;
    if (node.input(3)) {
      auto a = node.constant_ints(3);
      if (!a) return std::nullopt;
      p.axes = *a;
    }
    if (node.input(4)) {
      auto st = node.constant_ints(4);
      if (!st) return std::nullopt;
      p.steps = *st;
    }
  }
  if (p.axes.empty())
    for (size_t i = 0; i < p.starts.size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
  if (p.steps.empty()) p.steps.assign(p.starts.size(), 1);
  if (p.ends.size() != p.starts.size() || p.axes.size() != p.starts.size() ||
      p.steps.size() != p.starts.size())
    return std::nullopt;
  return p;
}

std::string check_slice(const NodeInfo& node) {
  if (std::string r = check_movable(node); !r.empty()) return r;
  auto p = slice_params(node);
  if (!p) return "starts, ends, axes and steps must be constants of one length on opencl";
  for (int64_t s : p->steps)
    if (s == 0) return "a step of 0";
  return "";
}

void lower_slice(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  const Value& y = exe.value(node.output_id(0));
  auto rank = static_cast<int64_t>(x.shape.size());
  SliceParams p = *slice_params(node);
  std::vector<int64_t> in_strides = contiguous_strides(x.shape), xs = in_strides;
  int64_t x_extra = 0;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    int64_t axis = sdk::normalize_axis(p.axes[i], rank, node.describe());
    int64_t dim = x.shape[axis], step = p.steps[i];
    int64_t start = p.starts[i] < 0 ? p.starts[i] + dim : p.starts[i];
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    if (y.shape[axis] > 0) x_extra += start * in_strides[axis];
    xs[axis] = in_strides[axis] * step;
  }
  strided_copy(exe, node.input_id(0), x_extra, node.output_id(0), 0, y.shape, xs,
               contiguous_strides(y.shape), node.describe());
}

// ---- Gather ----------------------------------------------------------------------------------

std::string check_gather(const NodeInfo& node) {
  if (std::string r = check_movable(node); !r.empty()) return r;
  return expect_dtype(node, 1, {LOOM_DTYPE_INT64, LOOM_DTYPE_INT32});
}

void lower_gather(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  const Value& idx = exe.value(node.input_id(1));
  const Value& y = exe.value(node.output_id(0));
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = sdk::normalize_axis(node.attrs.get_int("axis", 0), rank, node.describe());
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  std::string kernel = std::string("gather_") + size_suffix(x.elem_size) +
                       (idx.dtype == LOOM_DTYPE_INT64 ? "_i64" : "_i32");
  // An out-of-range index is an error (as on every device). Constant indices are checked here,
  // once, so their runs need no error buffer; others are checked by the kernel, per run.
  const int64_t axis_len = x.shape[axis];
  IndexCheck check{
      std::string(node.node.op_type) + " node '" + (node.node.name ? node.node.name : "") + "'",
      axis, axis_len};
  int slot = -1;
  std::optional<std::vector<int64_t>> constant = node.constant_ints(1);
  if (!constant) {
    slot = exe.add_index_check(std::move(check));
  } else {
    for (int64_t i : *constant)
      if (i < -axis_len || i >= axis_len) {
        // Reported at run time like the others, not while compiling the subgraph.
        slot = exe.add_index_check(std::move(check));
        break;
      }
  }
  KernelCall(exe, kernel.c_str(), node.describe())
      .buffer(node.input_id(0))
      .buffer(node.input_id(1))
      .buffer(node.output_id(0))
      .i32(y.elements)
      .i32(axis_len)
      .i32(std::max<int64_t>(idx.elements, 1))
      .i32(std::max<int64_t>(inner, 1))
      .index_check(slot)
      .launch_1d(y.elements);
}

// ---- Pad (constant mode) -----------------------------------------------------------------------

std::optional<std::vector<int64_t>> pad_amounts(const NodeInfo& node) {
  if (node.node.opset < 11) {
    auto p = node.attrs.get_ints("pads");
    if (!p) return std::nullopt;
    return std::vector<int64_t>(p->begin(), p->end());
  }
  return node.constant_ints(1);
}

std::string check_pad(const NodeInfo& node) {
  if (std::string r =
          expect_dtype(node, 0, {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT32, LOOM_DTYPE_INT64});
      !r.empty())
    return r;
  if (node.attrs.get_string("mode", "constant") != "constant")
    return "only constant-mode Pad is implemented on opencl";
  if (node.input(3)) return "the axes input of Pad is not supported on opencl";
  auto pads = pad_amounts(node);
  if (!pads) return "pads must be a constant on opencl";
  for (int64_t p : *pads)
    if (p < 0) return "negative pads (cropping) are not supported on opencl";
  if (node.node.opset >= 11 && node.input(2) && !node.is_constant(2))
    return "constant_value must be a constant on opencl";
  return "";
}

void lower_pad(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  const Value& y = exe.value(node.output_id(0));
  std::vector<int64_t> pads = *pad_amounts(node);
  size_t rank = x.shape.size();
  std::vector<int64_t> before(rank, 0);
  for (size_t i = 0; i < rank && i < pads.size(); ++i) before[i] = pads[i];
  double value = node.attrs.get_float("value", 0.0f);
  if (node.node.opset >= 11 && node.input(2)) {
    const loom_value_info_t* v = node.input(2);
    if (v->dtype == LOOM_DTYPE_FLOAT32 && v->data_size >= 4)
      value = *static_cast<const float*>(v->data);
    else if (auto ints = node.constant_ints(2); ints && !ints->empty())
      value = static_cast<double>((*ints)[0]);
  }
  std::string kernel = std::string("pad_constant_") + size_suffix(x.elem_size);
  KernelCall call(exe, kernel.c_str(), node.describe());
  call.buffer(node.input_id(0)).buffer(node.output_id(0)).i32(y.elements);
  call.vec8(y.shape, 1).vec8(before, 0).vec8(x.shape, 1);
  if (x.dtype == LOOM_DTYPE_FLOAT32 && x.elem_size == 2) {  // fp16 storage: pad with a half
    uint16_t h = sdk::float_to_half(static_cast<float>(value));
    call.bytes(&h, sizeof h);
  } else if (x.dtype == LOOM_DTYPE_FLOAT32) {
    float f = static_cast<float>(value);
    call.bytes(&f, sizeof f);
  } else if (x.dtype == LOOM_DTYPE_INT32) {
    auto i = static_cast<int32_t>(value);
    call.bytes(&i, sizeof i);
  } else {
    auto l = static_cast<int64_t>(value);
    call.bytes(&l, sizeof l);
  }
  call.launch_1d(y.elements);
}

// ---- Constant ----------------------------------------------------------------------------------

// The node's tensor (value, value_float(s), value_int(s)) as dtype + shape + bytes.
bool constant_payload(const NodeInfo& node, loom_dtype_t& dtype, std::vector<int64_t>& shape,
                      std::vector<uint8_t>& bytes) {
  if (const loom_value_info_t* t = node.attrs.get_tensor("value")) {
    if (!shape_known(t) || !size_suffix(sdk::dtype_size(t->dtype)) || (t->data_size && !t->data))
      return false;
    dtype = t->dtype;
    shape = shape_of(t);
    auto* p = static_cast<const uint8_t*>(t->data);
    bytes.assign(p, p + t->data_size);
    return bytes.size() == static_cast<size_t>(elements_of(shape)) * sdk::dtype_size(dtype);
  }
  auto put = [&](loom_dtype_t type, std::vector<int64_t> dims, const void* data, size_t size) {
    dtype = type;
    shape = std::move(dims);
    auto* p = static_cast<const uint8_t*>(data);
    bytes.assign(p, p + size);
    return true;
  };
  if (const loom_attribute_t* a = node.attrs.find("value_float"); a && a->type == LOOM_ATTR_FLOAT)
    return put(LOOM_DTYPE_FLOAT32, {}, &a->f, sizeof(float));
  if (const loom_attribute_t* a = node.attrs.find("value_int"); a && a->type == LOOM_ATTR_INT)
    return put(LOOM_DTYPE_INT64, {}, &a->i, sizeof(int64_t));
  if (auto v = node.attrs.get_floats("value_floats"))
    return put(LOOM_DTYPE_FLOAT32, {static_cast<int64_t>(v->size())}, v->data(), v->size_bytes());
  if (auto v = node.attrs.get_ints("value_ints"))
    return put(LOOM_DTYPE_INT64, {static_cast<int64_t>(v->size())}, v->data(), v->size_bytes());
  return false;
}

std::string check_constant(const NodeInfo& node) {
  loom_dtype_t dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  if (!constant_payload(node, dtype, shape, bytes))
    return "only numeric value/value_float(s)/value_int(s) constants are supported on opencl";
  return "";
}

void lower_constant(Executable& exe, const NodeInfo& node, const Fusion&) {
  loom_dtype_t dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  constant_payload(node, dtype, shape, bytes);
  int value = exe.add_constant(dtype, shape, std::move(bytes));
  copy_value(exe, value, node.output_id(0), node.describe());
}

}  // namespace

void add_movement_ops(OpTable& table) {
  for (const char* op : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    table.add(op, {check_reshape, lower_copy});
  table.add("Transpose", {check_transpose, lower_transpose});
  table.add("Expand", {check_expand, lower_expand});
  table.add("Concat", {check_concat, lower_concat});
  table.add("Split", {check_split, lower_split});
  table.add("Slice", {check_slice, lower_slice});
  table.add("Gather", {check_gather, lower_gather});
  table.add("Pad", {check_pad, lower_pad});
  table.add("Constant", {check_constant, lower_constant});
}

}  // namespace loom::opencl
