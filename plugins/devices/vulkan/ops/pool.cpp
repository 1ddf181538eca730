// MaxPool / AveragePool (1-D and 2-D, pads, strides, dilations, ceil_mode via the inferred
// output shape) and GlobalAveragePool / GlobalMaxPool, all on shaders/pool.comp.
#include <algorithm>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

std::string check_pool(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (auto r = require_dtype(x, "input", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (x->rank != 3 && x->rank != 4)
    return "vulkan pools 1-D and 2-D inputs; input rank is " + std::to_string(x->rank);
  if (node.num_outputs > 1 && node.outputs[1] >= 0)
    return "MaxPool Indices output is not supported";
  sdk::Attributes a(node);
  if (a.get_int("storage_order", 0) != 0) return "storage_order=1 is not supported";
  return "";
}

void build_pool(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  std::string op = node.op_type;
  sdk::Attributes a(node);
  bool one_d = x.rank() == 3;
  size_t sp = one_d ? 1 : 2;
  int64_t h = one_d ? 1 : x.dims[2], w = x.dims.back();
  int64_t oh = one_d ? 1 : y.dims[2], ow = y.dims.back();
  bool global = op.rfind("Global", 0) == 0;
  std::vector<int64_t> kernel(sp, 1), strides(sp, 1), dil(sp, 1), pads(2 * sp, 0);
  if (global) {
    kernel = one_d ? std::vector<int64_t>{w} : std::vector<int64_t>{h, w};
  } else {
    auto k = a.get_ints("kernel_shape");
    if (!k || k->size() != sp)
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                op + " node '" + node.name + "': kernel_shape is missing");
    kernel.assign(k->begin(), k->end());
    if (auto s = a.get_ints("strides"); s && s->size() == sp) strides.assign(s->begin(), s->end());
    if (auto d = a.get_ints("dilations"); d && d->size() == sp) dil.assign(d->begin(), d->end());
    std::vector<int64_t> in = one_d ? std::vector<int64_t>{w} : std::vector<int64_t>{h, w};
    std::vector<int64_t> out = one_d ? std::vector<int64_t>{ow} : std::vector<int64_t>{oh, ow};
    sdk::WindowPads p =
        sdk::window_pads(a, in, out, kernel, strides, dil, op + " node '" + node.name + "'");
    pads = p.begin;
    pads.insert(pads.end(), p.end.begin(), p.end.end());
  }
  if (one_d) {
    kernel.insert(kernel.begin(), 1);
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  uint32_t mode = 0;
  if (op == "AveragePool") mode = a.get_int("count_include_pad", 0) ? 1 : 2;
  if (op == "GlobalAveragePool") mode = 2;
  int64_t planes = x.dims[0] * x.dims[1];
  b.dispatch_1d(
      "pool",
      {0, u32(planes, "planes"), u32(h, "H"), u32(w, "W"), u32(oh, "OH"), u32(ow, "OW"),
       u32(kernel[0], "kernel"), u32(kernel[1], "kernel"), u32(strides[0], "stride"),
       u32(strides[1], "stride"), u32(pads[0], "pad"), u32(pads[1], "pad"), u32(pads[2], "pad"),
       u32(pads[3], "pad"), u32(dil[0], "dilation"), u32(dil[1], "dilation"), mode},
      {x.loc, y.loc}, static_cast<uint64_t>(y.elements()));
}

}  // namespace

void add_pool_ops(OpTable& t) {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    t.add(op, {check_pool, build_pool});
}

}  // namespace loom::vulkan
