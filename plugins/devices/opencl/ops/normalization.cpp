// Softmax, LogSoftmax and LayerNormalization: one work-group per row (kernels/normalization.cl).
#include <loom/op_semantics.hpp>

#include "ops.hpp"

namespace loom::opencl {
namespace {

std::string check_softmax(const NodeInfo& node) {
  return expect_all_float(node);
}

void lower_softmax(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  auto rank = static_cast<int64_t>(x.shape.size());
  bool coerce_2d = node.node.opset < 13;  // before opset 13: rows are [axis:] flattened
  int64_t axis =
      sdk::normalize_axis(node.attrs.get_int("axis", coerce_2d ? 1 : -1), rank, node.describe());
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t e = x.shape[d];
    if (d < axis)
      outer *= e;
    else if (d == axis || coerce_2d)
      len *= e;
    else
      inner *= e;
  }
  if (rank == 0) len = 1;
  KernelCall(exe, "softmax", node.describe())
      .buffer(node.input_id(0))
      .buffer(node.output_id(0))
      .i32(len)
      .i32(inner)
      .i32(node.op() == "LogSoftmax" ? 1 : 0)
      .launch_rows(len ? outer * inner : 0);
}

std::string check_layer_norm(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  if (node.present_outputs() > 1) return "the Mean and InvStdDev outputs are not supported";
  const loom_value_info_t* x = node.input(0);
  if (x && x->rank >= 0) {
    int64_t axis = node.attrs.get_int("axis", -1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return "axis out of range";
    // Scale and bias must cover the normalized axes exactly (no broadcasting inside a row).
    for (size_t i = 1; i <= 2; ++i) {
      const loom_value_info_t* p = node.input(i);
      if (!p || p->rank < 0) continue;
      if (p->rank > x->rank - axis) return "scale/bias of higher rank than the normalized axes";
      for (int32_t d = 0; d < p->rank; ++d) {
        int64_t want = x->dims[x->rank - p->rank + d];
        if (p->dims[d] >= 0 && want >= 0 && p->dims[d] != want)
          return "scale/bias that broadcast within the normalized axes are not supported";
      }
    }
  }
  return "";
}

void lower_layer_norm(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = sdk::normalize_axis(node.attrs.get_int("axis", -1), rank, node.describe());
  int64_t len = 1;
  for (int64_t d = axis; d < rank; ++d) len *= x.shape[d];
  for (size_t i = 1; i <= 2; ++i)
    if (node.input(i) && exe.value(node.input_id(i)).elements != len)
      sdk::fail(
          LOOM_ERROR_UNSUPPORTED,
          "opencl: " + node.describe() + ": scale/bias must hold one value per normalized element");
  bool has_bias = node.input(2) != nullptr;
  KernelCall(exe, "layer_norm", node.describe())
      .buffer(node.input_id(0))
      .buffer(node.input_id(1))
      .buffer(has_bias ? node.input_id(2) : node.input_id(1))
      .i32(has_bias ? 1 : 0)
      .buffer(node.output_id(0))
      .i32(len)
      .f32(node.attrs.get_float("epsilon", 1e-5f))
      .launch_rows(len ? x.elements / len : 0);
}

}  // namespace

void add_normalization_ops(OpTable& table) {
  table.add("Softmax", {check_softmax, lower_softmax});
  table.add("LogSoftmax", {check_softmax, lower_softmax});
  table.add("LayerNormalization", {check_layer_norm, lower_layer_norm});
}

}  // namespace loom::opencl
