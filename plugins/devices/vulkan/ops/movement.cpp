// Data movement: Reshape-like ops are buffer copies; Transpose, Concat, Split, Slice and Expand
// are one strided-copy kernel (shaders/copy.comp) with different strides; Gather has its own
// kernel with a run-time range check of the indices.
#include <algorithm>
#include <cstring>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

bool copyable(loom_dtype_t t) {
  return t != LOOM_DTYPE_STRING && sdk::dtype_size(t) != 0;
}
bool word_sized(loom_dtype_t t) {
  return t != LOOM_DTYPE_STRING && (sdk::dtype_size(t) == 4 || sdk::dtype_size(t) == 8);
}

std::string require_words(const loom_value_info_t* v, const char* role) {
  if (!v) return std::string(role) + " is missing";
  if (v->dtype == LOOM_DTYPE_UNDEFINED) return std::string(role) + " has an unknown type";
  if (!word_sized(v->dtype))
    return std::string(role) + " is " + sdk::dtype_name(v->dtype) +
           "; vulkan moves 32- and 64-bit elements only";
  return "";
}

int32_t i32(int64_t v, const char* what) {
  if (v < INT32_MIN || v > INT32_MAX)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("vulkan: ") + what + " does not fit 32 bits");
  return static_cast<int32_t>(v);
}

// dst[sum c_i * dst_strides_i] = src[sum c_i * src_strides_i] for c in the box `dims`, strides
// in elements (src strides may be negative); locations point at the first element. Elements
// of 4 or 8 bytes move as 32-bit words, 2-byte ones (fp16 storage) with the 16-bit kernel.
// src_base: elements from src to the first element read (Slice binds its whole input, since
// negative steps read backwards from there).
void strided_copy(Builder& b, const Loc& src, const Loc& dst, std::vector<int64_t> dims,
                  std::vector<int64_t> ss, std::vector<int64_t> ds, size_t elem_bytes,
                  int64_t src_base = 0) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (count == 0) return;
  if (elem_bytes == 8) {  // two words per element
    for (auto& s : ss) s *= 2;
    for (auto& s : ds) s *= 2;
    dims.push_back(2), ss.push_back(1), ds.push_back(1);
  }
  std::vector<int64_t> d, s, t;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == ss[i] * dims[i] && t.back() == ds[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = ss[i];
      t.back() = ds[i];
      continue;
    }
    d.push_back(dims[i]), s.push_back(ss[i]), t.push_back(ds[i]);
  }
  // A plain contiguous copy needs no kernel.
  if (d.size() <= 1 && (d.empty() || (s[0] == 1 && t[0] == 1))) {
    uint64_t bytes = static_cast<uint64_t>(count) * elem_bytes;
    b.copy(src.at(static_cast<uint64_t>(src_base) * elem_bytes, bytes), dst.at(0, bytes), bytes);
    return;
  }
  if (d.size() > 6)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "vulkan: a data movement needs more than 6 dims");
  while (d.size() < 6) d.insert(d.begin(), 1), s.insert(s.begin(), 0), t.insert(t.begin(), 0);
  // Kernel elements per tensor element: 16-bit units for fp16, else words.
  const int64_t units = elem_bytes == 2 ? 1 : static_cast<int64_t>(elem_bytes / 4);
  int64_t words = count * units;
  std::vector<uint32_t> spec = {0, u32(words, "elements")};
  for (int64_t v : d) spec.push_back(u32(v, "dim"));
  for (int64_t v : s) spec.push_back(static_cast<uint32_t>(i32(v, "stride")));
  for (int64_t v : t) spec.push_back(u32(v, "stride"));
  spec.push_back(u32(src_base * units, "offset"));
  b.dispatch_1d(elem_bytes == 2 ? "copy_f16" : "copy", spec, {src, dst},
                static_cast<uint64_t>(words));
}

// ---- whole-tensor copies ------------------------------------------------------------------

std::string check_copy(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (!x) return "input is missing";
  if (!copyable(x->dtype))
    return std::string("input type ") + sdk::dtype_name(x->dtype) + " is not supported";
  if (std::string(node.op_type) == "Dropout") {
    for (size_t o = 1; o < node.num_outputs; ++o)
      if (node.outputs[o] >= 0) return "Dropout mask output is not supported";
    // A copy only in inference: a training_mode input must be a constant false.
    const loom_value_info_t* training = sdk::node_input(graph, node, 2);
    if (training &&
        !((training->flags & LOOM_VALUE_CONSTANT) && training->data && training->data_size >= 1 &&
          *static_cast<const unsigned char*>(training->data) == 0))
      return "Dropout in training mode is not supported";
  }
  return "";
}

void build_copy(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  if (x.loc.bytes != y.loc.bytes)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string(node.op_type) + " node '" + node.name +
                                            "': output size differs from the input size");
  b.copy(x.loc, y.loc, y.loc.bytes);
}

// ---- Transpose ----------------------------------------------------------------------------

std::string check_transpose(const loom_graph_t& graph, const loom_node_t& node) {
  return require_words(sdk::node_input(graph, node, 0), "input");
}

void build_transpose(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  sdk::Attributes a(node);
  std::vector<int64_t> perm;
  if (auto p = a.get_ints("perm"))
    perm.assign(p->begin(), p->end());
  else
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != x.rank())
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              std::string("Transpose node '") + node.name + "': bad perm");
  auto in_strides = strides_of(x.dims);
  std::vector<int64_t> ss;
  for (int64_t p : perm)
    ss.push_back(in_strides.at(static_cast<size_t>(
        sdk::normalize_axis(p, x.rank(), std::string("Transpose node '") + node.name + "'"))));
  strided_copy(b, x.loc, y.loc, y.dims, ss, strides_of(y.dims), sdk::dtype_size(x.dtype));
}

// ---- Concat / Split -----------------------------------------------------------------------

std::string check_concat(const loom_graph_t& graph, const loom_node_t& node) {
  for (size_t i = 0; i < node.num_inputs; ++i)
    if (auto r = require_words(sdk::node_input(graph, node, i), "input"); !r.empty()) return r;
  return "";
}

void build_concat(Builder& b, const loom_node_t& node) {
  const TensorInfo& y = b.output(node, 0);
  int64_t axis = sdk::normalize_axis(sdk::Attributes(node).get_int("axis", 0), y.rank(),
                                     std::string("Concat node '") + node.name + "'");
  auto ys = strides_of(y.dims);
  size_t elem = sdk::dtype_size(y.dtype);
  int64_t at = 0;
  for (size_t i = 0; i < node.num_inputs; ++i) {
    if (!b.has_input(node, i)) continue;
    const TensorInfo& x = b.input(node, i);
    uint64_t offset = static_cast<uint64_t>(at * ys[axis]) * elem;
    strided_copy(b, x.loc, y.loc.at(offset, y.loc.bytes - offset), x.dims, strides_of(x.dims), ys,
                 elem);
    at += x.dims[static_cast<size_t>(axis)];
  }
}

std::string check_split(const loom_graph_t& graph, const loom_node_t& node) {
  return require_words(sdk::node_input(graph, node, 0), "input");
}

void build_split(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  int64_t axis = sdk::normalize_axis(sdk::Attributes(node).get_int("axis", 0), x.rank(),
                                     std::string("Split node '") + node.name + "'");
  auto xs = strides_of(x.dims);
  size_t elem = sdk::dtype_size(x.dtype);
  int64_t at = 0;
  for (size_t o = 0; o < node.num_outputs; ++o) {
    if (node.outputs[o] < 0) continue;
    const TensorInfo& y = b.output(node, o);
    uint64_t offset = static_cast<uint64_t>(at * xs[axis]) * elem;
    strided_copy(b, x.loc.at(offset, x.loc.bytes - offset), y.loc, y.dims, xs, strides_of(y.dims),
                 elem);
    at += y.dims[static_cast<size_t>(axis)];
  }
}

// ---- Slice --------------------------------------------------------------------------------

struct SliceParams {
  std::vector<int64_t> start, step;  // per input dim
};

std::optional<SliceParams> slice_params(const loom_graph_t& graph, const loom_node_t& node,
                                        const std::vector<int64_t>& dims) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.opset < 10) {
    sdk::Attributes a(node);
    auto s = a.get_ints("starts"), e = a.get_ints("ends"), ax = a.get_ints("axes");
    if (!s || !e) return std::nullopt;
    starts.assign(s->begin(), s->end());
    ends.assign(e->begin(), e->end());
    if (ax) axes.assign(ax->begin(), ax->end());
  } else {
    auto s = constant_ints(sdk::node_input(graph, node, 1));
    auto e = constant_ints(sdk::node_input(graph, node, 2));
    if (!s || !e) return std::nullopt;
    starts = *s, ends = *e;
    if (const loom_value_info_t* v = sdk::node_input(graph, node, 3)) {
      auto ax = constant_ints(v);
      if (!ax) return std::nullopt;
      axes = *ax;
    }
    if (const loom_value_info_t* v = sdk::node_input(graph, node, 4)) {
      auto st = constant_ints(v);
      if (!st) return std::nullopt;
      steps = *st;
    }
  }
  int64_t rank = static_cast<int64_t>(dims.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || ends.size() != starts.size() || steps.size() != starts.size())
    return std::nullopt;
  SliceParams p;
  p.start.assign(dims.size(), 0);
  p.step.assign(dims.size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    std::optional<int64_t> normalized = sdk::try_normalize_axis(axes[i], rank);
    if (!normalized || steps[i] == 0) return std::nullopt;
    int64_t ax = *normalized;
    int64_t d = dims[static_cast<size_t>(ax)], st = starts[i];
    if (st < 0) st += d;
    // Clamp as the ONNX spec does: [0, d] for positive steps, [0, d - 1] for negative ones.
    st = steps[i] > 0 ? std::clamp<int64_t>(st, 0, d) : std::clamp<int64_t>(st, 0, d - 1);
    p.start[static_cast<size_t>(ax)] = st;
    p.step[static_cast<size_t>(ax)] = steps[i];
  }
  return p;
}

std::string check_slice(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (auto r = require_words(x, "input"); !r.empty()) return r;
  if (auto r = require_rank(x, "input", 16); !r.empty()) return r;
  std::vector<int64_t> dims(x->dims, x->dims + x->rank);
  for (int64_t& d : dims) d = std::max<int64_t>(d, 1);
  if (!slice_params(graph, node, dims)) return "Slice parameters must be constants on vulkan";
  return "";
}

void build_slice(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  auto p = slice_params(b.graph(), node, x.dims);
  if (!p)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              std::string("Slice node '") + node.name + "': bad parameters");
  auto xs = strides_of(x.dims);
  int64_t offset = 0;
  std::vector<int64_t> ss(x.dims.size());
  for (size_t i = 0; i < x.dims.size(); ++i) {
    offset += p->start[i] * xs[i];
    ss[i] = xs[i] * p->step[i];
  }
  strided_copy(b, x.loc, y.loc, y.dims, ss, strides_of(y.dims), sdk::dtype_size(x.dtype), offset);
}

// ---- Expand -------------------------------------------------------------------------------

std::string check_expand(const loom_graph_t& graph, const loom_node_t& node) {
  return require_words(sdk::node_input(graph, node, 0), "input");
}

void build_expand(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  std::vector<int64_t> xd = x.dims;
  if (xd.size() > y.dims.size())
    sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string("Expand node '") + node.name + "': bad shape");
  xd.insert(xd.begin(), y.dims.size() - xd.size(), 1);
  auto xs = strides_of(xd);
  for (size_t i = 0; i < xd.size(); ++i)
    if (xd[i] == 1) xs[i] = 0;
  strided_copy(b, x.loc, y.loc, y.dims, xs, strides_of(y.dims), sdk::dtype_size(x.dtype));
}

// ---- Gather -------------------------------------------------------------------------------

std::string check_gather(const loom_graph_t& graph, const loom_node_t& node) {
  if (auto r = require_words(sdk::node_input(graph, node, 0), "data"); !r.empty()) return r;
  if (auto r = require_dtype(sdk::node_input(graph, node, 1), "indices",
                             {LOOM_DTYPE_INT64, LOOM_DTYPE_INT32});
      !r.empty())
    return r;
  return "";
}

void build_gather(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& idx = b.input(node, 1);
  const TensorInfo& y = b.output(node, 0);
  int64_t axis = sdk::normalize_axis(sdk::Attributes(node).get_int("axis", 0), x.rank(),
                                     std::string("Gather node '") + node.name + "'");
  // In kernel elements: 16-bit units for fp16 storage, else 32-bit words.
  const bool half = sdk::dtype_size(x.dtype) == 2;
  int64_t outer = 1, inner = half ? 1 : static_cast<int64_t>(sdk::dtype_size(x.dtype) / 4);
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dims[i];
  int64_t nidx = idx.elements();
  int64_t words = outer * nidx * inner;
  b.dispatch_1d(half ? "gather_f16" : "gather",
                {0, u32(words, "elements"), u32(x.dims[axis], "axis length"), u32(nidx, "indices"),
                 u32(inner, "inner"), idx.dtype == LOOM_DTYPE_INT64 ? 1u : 0u},
                {x.loc, idx.loc, y.loc, b.error_word()}, static_cast<uint64_t>(words));
}

// ---- Constant -----------------------------------------------------------------------------
// Uploaded at compile time and copied into place, so a Constant between two vulkan nodes does
// not split their subgraph.

std::string check_constant(const loom_graph_t&, const loom_node_t& node) {
  sdk::Attributes a(node);
  if (const loom_value_info_t* v = a.get_tensor("value"))
    return copyable(v->dtype) ? "" : std::string("Constant of type ") + sdk::dtype_name(v->dtype);
  for (const char* name : {"value_float", "value_floats", "value_int", "value_ints"})
    if (a.has(name)) return "";
  return "Constant without a numeric value";
}

void build_constant(Builder& b, const loom_node_t& node) {
  const TensorInfo& y = b.output(node, 0);
  sdk::Attributes a(node);
  std::vector<uint8_t> bytes;
  auto put = [&](const void* p, size_t n) {
    bytes.assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  if (const loom_value_info_t* v = a.get_tensor("value")) {
    put(v->data, v->data_size);
  } else if (a.has("value_float")) {
    float f = a.get_float("value_float", 0);
    put(&f, 4);
  } else if (auto fs = a.get_floats("value_floats")) {
    put(fs->data(), fs->size() * 4);
  } else if (a.has("value_int")) {
    int64_t i = a.get_int("value_int", 0);
    put(&i, 8);
  } else if (auto is = a.get_ints("value_ints")) {
    put(is->data(), is->size() * 8);
  }
  if (bytes.size() != static_cast<uint64_t>(y.elements()) * sdk::dtype_size(y.info->dtype))
    sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string("Constant node '") + node.name +
                                            "': value size differs from its inferred shape");
  if (stored_as_f16(y)) {
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    b.copy(b.upload_floats(values), y.loc, y.loc.bytes);
  } else {
    b.copy(b.upload(bytes.data(), bytes.size()), y.loc, y.loc.bytes);
  }
}

}  // namespace

void add_movement_ops(OpTable& t) {
  t.add("Constant", {check_constant, build_constant});
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
    t.add(op, {check_copy, build_copy});
  t.add("Transpose", {check_transpose, build_transpose});
  t.add("Concat", {check_concat, build_concat});
  t.add("Split", {check_split, build_split});
  t.add("Slice", {check_slice, build_slice});
  t.add("Expand", {check_expand, build_expand});
  t.add("Gather", {check_gather, build_gather});
}

}  // namespace loom::vulkan
