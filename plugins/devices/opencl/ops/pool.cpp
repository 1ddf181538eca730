// MaxPool, AveragePool (1-D and 2-D) and GlobalAveragePool/GlobalMaxPool over NC... tensors.
// Output sizes (ceil_mode included) come from shape inference; only the pads matter here.
#include <loom/op_semantics.hpp>

#include "ops.hpp"

namespace loom::opencl {
namespace {

struct PoolGeometry {
  int64_t NC, H = 1, W, OH = 1, OW, KH = 1, KW, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
};

std::vector<int64_t> ints_or(const NodeInfo& node, const char* name,
                             std::vector<int64_t> fallback) {
  auto v = node.attrs.get_ints(name);
  return v ? std::vector<int64_t>(v->begin(), v->end()) : fallback;
}

PoolGeometry geometry(Executable& exe, const NodeInfo& node) {
  const std::vector<int64_t>& x = exe.value(node.input_id(0)).shape;
  const std::vector<int64_t>& y = exe.value(node.output_id(0)).shape;
  size_t r = x.size() - 2;
  std::vector<int64_t> k = ints_or(node, "kernel_shape", {});
  if (k.size() != r)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              node.describe() + ": kernel_shape must have " + std::to_string(r) + " values");
  std::vector<int64_t> s = ints_or(node, "strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> d = ints_or(node, "dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end());
  const auto [begin, end] = sdk::window_pads(node.attrs, in, out, k, s, d, node.describe());
  PoolGeometry g;
  g.NC = x[0] * x[1];
  size_t w = r - 1;  // the last spatial axis is W; a 2-D pool also has H
  g.W = x[2 + w], g.OW = y[2 + w], g.KW = k[w], g.sw = s[w], g.dw = d[w];
  g.pl = begin[w], g.pr = end[w];
  if (r == 2) {
    g.H = x[2], g.OH = y[2], g.KH = k[0], g.sh = s[0], g.dh = d[0];
    g.pt = begin[0], g.pb = end[0];
  }
  return g;
}

std::string check_pool(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  const loom_value_info_t* x = node.input(0);
  if (x && x->rank >= 0 && x->rank != 3 && x->rank != 4)
    return "only 1-D and 2-D pooling is implemented on opencl";
  if (node.present_outputs() > 1) return "the Indices output of MaxPool is not supported";
  if (node.op() == "AveragePool" && node.attrs.has("dilations")) {
    auto d = node.attrs.get_ints("dilations");
    for (int64_t v : *d)
      if (v != 1) return "dilated AveragePool is not supported";
  }
  return "";
}

void lower_pool(Executable& exe, const NodeInfo& node, const Fusion&) {
  PoolGeometry g = geometry(exe, node);
  int64_t n = g.NC * g.OH * g.OW;
  bool max = node.op() == "MaxPool";
  KernelCall call(exe, max ? "max_pool2d" : "avg_pool2d", node.describe());
  call.buffer(node.input_id(0)).buffer(node.output_id(0)).i32(n);
  call.i32(g.H).i32(g.W).i32(g.OH).i32(g.OW).i32(g.KH).i32(g.KW).i32(g.sh).i32(g.sw);
  call.i32(g.pt).i32(g.pl);
  if (max)
    call.i32(g.dh).i32(g.dw);
  else
    call.i32(g.pb).i32(g.pr).i32(node.attrs.get_int("count_include_pad", 0));
  call.launch_1d(n);
}

std::string check_global_pool(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  const loom_value_info_t* x = node.input(0);
  if (x && x->rank >= 0 && x->rank < 2) return "the input needs N and C axes";
  return "";
}

void lower_global_pool(Executable& exe, const NodeInfo& node, const Fusion&) {
  const Value& x = exe.value(node.input_id(0));
  int64_t rows = x.shape[0] * x.shape[1];
  int64_t len = rows ? x.elements / rows : 0;
  KernelCall(exe, "global_pool", node.describe())
      .buffer(node.input_id(0))
      .buffer(node.output_id(0))
      .i32(len)
      .i32(node.op() == "GlobalMaxPool" ? 1 : 0)
      .launch_rows(rows);
}

}  // namespace

void add_pool_ops(OpTable& table) {
  table.add("MaxPool", {check_pool, lower_pool});
  table.add("AveragePool", {check_pool, lower_pool});
  table.add("GlobalAveragePool", {check_global_pool, lower_global_pool});
  table.add("GlobalMaxPool", {check_global_pool, lower_global_pool});
}

}  // namespace loom::opencl
