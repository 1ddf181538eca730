// Reduce* over any set of axes (kernels/reduce.cl): axes from the attribute (older opsets) or
// from a constant second input (ReduceSum since 13, the others since 18).
#include <algorithm>
#include <loom/op_semantics.hpp>
#include <map>

#include "ops.hpp"

namespace loom::opencl {
namespace {

const std::map<std::string, std::string>& reduce_ops() {
  static const std::map<std::string, std::string> ops = {
      {"ReduceSum", "sum"},        {"ReduceMean", "mean"},
      {"ReduceMax", "max"},        {"ReduceMin", "min"},
      {"ReduceProd", "prod"},      {"ReduceL1", "l1"},
      {"ReduceL2", "l2"},          {"ReduceSumSquare", "sum_square"},
      {"ReduceLogSum", "log_sum"}, {"ReduceLogSumExp", "log_sum_exp"}};
  return ops;
}

bool axes_from_input(const NodeInfo& node) {
  return node.op() == "ReduceSum" ? node.node.opset >= 13 : node.node.opset >= 18;
}

// The axes to reduce, or nullopt when they are not known at compile time. Empty = all (or
// none, with noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduce_axes(const NodeInfo& node) {
  if (!axes_from_input(node)) {
    auto a = node.attrs.get_ints("axes");
    return a ? std::vector<int64_t>(a->begin(), a->end()) : std::vector<int64_t>{};
  }
  if (!node.input(1)) return std::vector<int64_t>{};
  return node.constant_ints(1);
}

std::string check_reduce(const NodeInfo& node) {
  if (std::string r = expect_dtype(node, 0, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  const loom_value_info_t* y = node.output(0);
  if (y && y->dtype != LOOM_DTYPE_UNDEFINED && y->dtype != LOOM_DTYPE_FLOAT32)
    return "opencl reduces float32 only";
  if (!reduce_axes(node)) return "the axes input must be a constant on opencl";
  return "";
}

void lower_reduce(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  int y = node.output_id(0);
  auto rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes = *reduce_axes(node);
  if (axes.empty()) {
    if (node.attrs.get_int("noop_with_empty_axes", 0)) {
      copy_value(exe, node.input_id(0), y, node.describe());
      return;
    }
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes)
    reduced[static_cast<size_t>(sdk::normalize_axis(a, rank, node.describe()))] = true;
  std::vector<int64_t> strides = contiguous_strides(x.shape);
  std::vector<int64_t> kdims, kstrides, rdims, rstrides;
  for (int64_t d = 0; d < rank; ++d) {
    auto& dims = reduced[d] ? rdims : kdims;
    auto& st = reduced[d] ? rstrides : kstrides;
    dims.push_back(x.shape[d]);
    st.push_back(strides[d]);
  }
  int64_t count = elements_of(rdims);
  int64_t n = exe.value(y).elements;
  std::string kernel = "reduce_" + reduce_ops().at(node.op());
  KernelCall(exe, kernel.c_str(), node.describe())
      .buffer(node.input_id(0))
      .buffer(y)
      .i32(n)
      .vec8(kdims, 1)
      .vec8(kstrides, 0)
      .vec8(rdims, 1)
      .vec8(rstrides, 0)
      .i32(count)
      .launch_1d(n);
}

}  // namespace

void add_reduce_ops(OpTable& table) {
  for (const auto& [op, name] : reduce_ops()) table.add(op.c_str(), {check_reduce, lower_reduce});
}

}  // namespace loom::opencl
