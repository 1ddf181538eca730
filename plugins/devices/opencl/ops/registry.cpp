// The op table and the helpers the op families share.
#include <algorithm>
#include <cstring>

#include "ops.hpp"

namespace loom::opencl {
namespace {

const OpTable& table() {
  static const OpTable entries = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_conv_ops(t);
    add_gemm_ops(t);
    add_pool_ops(t);
    add_normalization_ops(t);
    add_reduce_ops(t);
    add_movement_ops(t);
    add_resize_ops(t);
    return t;
  }();
  return entries;
}

}  // namespace

const OpEntry* find_op(std::string_view op_type) {
  return table().find_any("", op_type);
}

std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  std::string domain = node.domain ? node.domain : "";
  if (!domain.empty() && domain != "ai.onnx")
    return "ops of domain '" + domain + "' are not implemented on opencl";
  const OpEntry* entry = find_op(node.op_type);
  if (!entry) return std::string(node.op_type) + " is not implemented on opencl";
  NodeInfo info(graph, node);
  // Kernels are specialized for static shapes when the subgraph is compiled. With static
  // graph inputs, an extent unknown now depends on data (computed on another device at run
  // time) and stays unknown at compile time; with symbolic inputs it is known by then.
  bool static_inputs = true;
  for (size_t i = 0; i < graph.num_inputs; ++i)
    if (!shape_known(graph.values[graph.inputs[i]])) static_inputs = false;
  for (size_t i = 0; i < node.num_inputs + node.num_outputs; ++i) {
    bool is_input = i < node.num_inputs;
    const loom_value_info_t* v = is_input ? info.input(i) : info.output(i - node.num_inputs);
    if (!v) continue;
    if (v->dtype == LOOM_DTYPE_STRING) return "string tensors are not supported on opencl";
    if (v->rank > kMaxRank)
      return "rank " + std::to_string(v->rank) + " exceeds the 8 dimensions the kernels handle";
    std::string name = v->name ? v->name : "";
    if (v->rank < 0)
      return "the rank of '" + name +
             "' is not known before run time (opencl compiles kernels "
             "for known shapes)";
    if (static_inputs && !shape_known(v))
      return "the shape of '" + name +
             "' depends on data computed at run time (opencl compiles "
             "kernels for known shapes)";
  }
  return entry->check(info);
}

std::string expect_dtype(const NodeInfo& node, size_t input,
                         std::initializer_list<loom_dtype_t> ok) {
  const loom_value_info_t* v = node.input(input);
  if (!v || v->dtype == LOOM_DTYPE_UNDEFINED) return "";
  if (std::find(ok.begin(), ok.end(), v->dtype) != ok.end()) return "";
  return std::string("input ") + std::to_string(input) + " is " + sdk::dtype_name(v->dtype) +
         "; opencl implements " + node.op() + " for " + [&] {
           std::string s;
           for (loom_dtype_t t : ok) s += (s.empty() ? "" : "/") + std::string(sdk::dtype_name(t));
           return s;
         }();
}

std::string expect_all_float(const NodeInfo& node) {
  for (size_t i = 0; i < node.node.num_inputs; ++i)
    if (std::string r = expect_dtype(node, i, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  for (size_t o = 0; o < node.node.num_outputs; ++o) {
    const loom_value_info_t* v = node.output(o);
    if (v && v->dtype != LOOM_DTYPE_UNDEFINED && v->dtype != LOOM_DTYPE_FLOAT32)
      return std::string("output is ") + sdk::dtype_name(v->dtype) + "; opencl implements " +
             node.op() + " for float32";
  }
  return "";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out) {
  std::vector<int64_t> own = contiguous_strides(in);
  std::vector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - std::min(out.size(), in.size());
  for (size_t i = lead; i < out.size(); ++i) {
    size_t k = i - lead + (in.size() > out.size() ? in.size() - out.size() : 0);
    strides[i] = in[k] == 1 ? 0 : own[k];
  }
  return strides;
}

const char* size_suffix(size_t elem_size) {
  switch (elem_size) {
    case 1:
      return "s1";
    case 2:
      return "s2";
    case 4:
      return "s4";
    case 8:
      return "s8";
    default:
      return nullptr;
  }
}

void copy_value(Executable& exe, int src, int dst, const std::string& label) {
  const Value& s = exe.value(src);
  const Value& d = exe.value(dst);
  if (s.elements != d.elements || s.elem_size != d.elem_size)
    sdk::fail(LOOM_ERROR_INTERNAL, "opencl: " + label + ": copy between different sizes");
  const char* sfx = size_suffix(s.elem_size);
  if (!sfx)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "opencl: " + label + ": elements of " + std::to_string(s.elem_size) + " bytes");
  std::string kernel = std::string("copy_") + sfx;
  KernelCall(exe, kernel.c_str(), label)
      .buffer(src)
      .buffer(dst)
      .i32(s.elements)
      .launch_1d(s.elements);
}

}  // namespace loom::opencl
