// Resize (nearest and linear) over the last two axes; the other axes must keep their size.
// Scales or sizes must be constants so that the output shape is static.
#include <cmath>
#include <map>

#include "ops.hpp"

namespace loom::opencl {
namespace {

const std::map<std::string, int>& transform_modes() {
  static const std::map<std::string, int> modes = {{"half_pixel", 0},
                                                   {"pytorch_half_pixel", 1},
                                                   {"align_corners", 2},
                                                   {"asymmetric", 3},
                                                   {"tf_half_pixel_for_nn", 4}};
  return modes;
}

const std::map<std::string, int>& nearest_modes() {
  static const std::map<std::string, int> modes = {
      {"round_prefer_floor", 0}, {"round_prefer_ceil", 1}, {"floor", 2}, {"ceil", 3}};
  return modes;
}

// Input index of scales and sizes: opset 10 has (X, scales), later (X, roi, scales, sizes).
size_t scales_input(const NodeInfo& node) {
  return node.node.opset < 11 ? 1 : 2;
}

std::string check_resize(const NodeInfo& node) {
  if (std::string r = expect_dtype(node, 0, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  std::string mode = node.attrs.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    return "Resize mode '" + mode + "' is not supported on opencl";
  std::string ctm = node.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (node.node.opset >= 11 && !transform_modes().count(ctm))
    return "coordinate_transformation_mode '" + ctm + "' is not supported on opencl";
  if (!nearest_modes().count(node.attrs.get_string("nearest_mode", "round_prefer_floor")))
    return "unknown nearest_mode";
  if (node.attrs.get_int("antialias", 0) != 0) return "antialiasing is not supported on opencl";
  if (node.attrs.has("axes")) return "the axes attribute is not supported on opencl";
  size_t s = scales_input(node);
  bool have_scales = node.input(s) && (!node.is_constant(s) || node.input(s)->data_size > 0);
  if (have_scales && !node.constant_floats(s)) return "scales must be a constant on opencl";
  if (node.input(s + 1) && !node.constant_ints(s + 1)) return "sizes must be a constant on opencl";
  const loom_value_info_t* x = node.input(0);
  const loom_value_info_t* y = node.output(0);
  if (x && y && x->rank >= 0 && y->rank == x->rank)
    for (int32_t d = 0; d + 2 < x->rank; ++d)
      if (x->dims[d] >= 0 && y->dims[d] >= 0 && x->dims[d] != y->dims[d])
        return "only the last two axes may be resized on opencl";
  return "";
}

void lower_resize(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  const Value& y = exe.value(node.output_id(0));
  size_t rank = x.shape.size();
  for (size_t d = 0; d + 2 < rank; ++d)
    if (x.shape[d] != y.shape[d])
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                "opencl: " + node.describe() + ": only the last two axes may be resized");
  int64_t H = rank >= 2 ? x.shape[rank - 2] : 1, W = rank >= 1 ? x.shape[rank - 1] : 1;
  int64_t OH = rank >= 2 ? y.shape[rank - 2] : 1, OW = rank >= 1 ? y.shape[rank - 1] : 1;
  float scale_h = H ? static_cast<float>(OH) / static_cast<float>(H) : 1.0f;
  float scale_w = W ? static_cast<float>(OW) / static_cast<float>(W) : 1.0f;
  if (auto scales = node.constant_floats(scales_input(node)); scales && scales->size() == rank) {
    if (rank >= 2) scale_h = (*scales)[rank - 2];
    scale_w = (*scales)[rank - 1];
  }
  int ctm = node.node.opset < 11 ? 3
                                 : transform_modes().at(node.attrs.get_string(
                                       "coordinate_transformation_mode", "half_pixel"));
  int nearest =
      node.node.opset < 11
          ? 2
          : nearest_modes().at(node.attrs.get_string("nearest_mode", "round_prefer_floor"));
  bool linear = node.attrs.get_string("mode", "nearest") == "linear";
  KernelCall(exe, "resize2d", node.describe())
      .buffer(node.input_id(0))
      .buffer(node.output_id(0))
      .i32(y.elements)
      .i32(H)
      .i32(W)
      .i32(OH)
      .i32(OW)
      .f32(scale_h)
      .f32(scale_w)
      .i32(ctm)
      .i32(linear ? 1 : 0)
      .i32(nearest)
      .launch_1d(y.elements);
}

}  // namespace

void add_resize_ops(OpTable& table) {
  table.add("Resize", {check_resize, lower_resize});
}

}  // namespace loom::opencl
