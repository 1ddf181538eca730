// Resize (opset 10+) of the spatial dims of NCHW tensors: nearest (all rounding modes) and
// linear, with every coordinate transformation except tf_crop_and_resize. Cubic, antialias and
// resizing N or C run on the next device.
#include "ops.hpp"

namespace loom::vulkan {
namespace {

struct ResizeParams {
  uint32_t linear = 0, coord = 0, nearest = 0;
};

std::optional<ResizeParams> params(const loom_node_t& node, std::string* why) {
  sdk::Attributes a(node);
  ResizeParams p;
  std::string mode = a.get_string("mode", "nearest");
  if (mode == "linear")
    p.linear = 1;
  else if (mode != "nearest")
    return *why = "Resize mode '" + mode + "' is not supported", std::nullopt;
  std::string coord = a.get_string("coordinate_transformation_mode", "half_pixel");
  const char* coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                          "tf_half_pixel_for_nearest"};
  bool found = false;
  for (uint32_t i = 0; i < 5; ++i)
    if (coord == coords[i]) p.coord = i, found = true;
  if (node.opset < 11)
    p.coord = 1;  // opset 10 Resize is asymmetric
  else if (!found)
    return *why = "Resize coordinate_transformation_mode '" + coord + "' is not supported",
           std::nullopt;
  std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
  const char* nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  found = false;
  for (uint32_t i = 0; i < 4; ++i)
    if (nearest == nearests[i]) p.nearest = i, found = true;
  if (node.opset < 11)
    p.nearest = 0;
  else if (!found)
    return *why = "Resize nearest_mode '" + nearest + "' is not supported", std::nullopt;
  if (a.get_int("antialias", 0)) return *why = "Resize antialias is not supported", std::nullopt;
  if (a.has("axes")) return *why = "Resize axes is not supported", std::nullopt;
  return p;
}

// Scales of H and W: from the constant scales input, or sizes over input dims.
std::optional<std::pair<float, float>> scales(const loom_graph_t& graph, const loom_node_t& node,
                                              const loom_value_info_t* x,
                                              const loom_value_info_t* y) {
  const loom_value_info_t* sv = sdk::node_input(graph, node, node.opset < 11 ? 1 : 2);
  if (sv && sv->rank == 1 && sv->dims[0] == 4) {
    auto s = constant_floats(sv);
    if (!s || s->size() != 4 || (*s)[0] != 1.0f || (*s)[1] != 1.0f) return std::nullopt;
    return std::pair{(*s)[2], (*s)[3]};
  }
  if (!y || y->rank != 4 || x->dims[2] <= 0 || x->dims[3] <= 0 || y->dims[2] < 0)
    return std::nullopt;
  if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) return std::nullopt;
  return std::pair{static_cast<float>(y->dims[2]) / x->dims[2],
                   static_cast<float>(y->dims[3]) / x->dims[3]};
}

std::string check_resize(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (auto r = require_dtype(x, "input", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (x->rank != 4) return "vulkan resizes 4-D NCHW tensors only";
  std::string why;
  if (!params(node, &why)) return why;
  const loom_value_info_t* y = sdk::node_output(graph, node, 0);
  if (y && y->rank == 4 && y->dims[2] >= 0 && !scales(graph, node, x, y))
    return "vulkan resizes H and W only, with constant scales or sizes";
  return "";
}

void build_resize(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  std::string why;
  auto p = params(node, &why);
  auto s = scales(b.graph(), node, x.info, y.info);
  if (!p || !s)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("Resize node '") + node.name +
                                          "': " + (why.empty() ? "unsupported scales" : why));
  b.dispatch_1d("resize",
                {0, u32(x.dims[0] * x.dims[1], "planes"), u32(x.dims[2], "H"), u32(x.dims[3], "W"),
                 u32(y.dims[2], "OH"), u32(y.dims[3], "OW"), float_bits(s->first),
                 float_bits(s->second), p->linear, p->coord, p->nearest},
                {x.loc, y.loc}, static_cast<uint64_t>(y.elements()));
}

}  // namespace

void add_resize_ops(OpTable& t) {
  t.add("Resize", {check_resize, build_resize});
}

}  // namespace loom::vulkan
