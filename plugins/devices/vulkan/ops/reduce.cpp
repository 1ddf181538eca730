// Reduce* ops over any set of axes: the host splits the input dims into kept and reduced ones
// (each coalesced to at most 4) and shaders/reduce.comp loops over the reduced ones.
#include <set>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

struct ReduceDef {
  const char* op_type;
  uint32_t code;
  int64_t axes_input_since;  // opset from which axes is an input instead of an attribute
};
const ReduceDef kReduce[] = {
    {"ReduceSum", 0, 13},       {"ReduceMean", 1, 18},      {"ReduceMax", 2, 18},
    {"ReduceMin", 3, 18},       {"ReduceProd", 4, 18},      {"ReduceL1", 5, 18},
    {"ReduceL2", 6, 18},        {"ReduceSumSquare", 7, 18}, {"ReduceLogSum", 8, 18},
    {"ReduceLogSumExp", 9, 18},
};
const ReduceDef& def_of(const loom_node_t& node) {
  for (const ReduceDef& d : kReduce)
    if (std::string(node.op_type) == d.op_type) return d;
  sdk::fail(LOOM_ERROR_INTERNAL, "vulkan: not a reduce op");
}

// The axes (normalized, sorted), nullopt when they are not known at compile time.
std::optional<std::set<int64_t>> axes_of(const loom_graph_t& graph, const loom_node_t& node,
                                         int64_t rank, bool* noop) {
  const ReduceDef& d = def_of(node);
  sdk::Attributes a(node);
  std::vector<int64_t> axes;
  *noop = false;
  if (node.opset >= d.axes_input_since) {
    if (const loom_value_info_t* v = sdk::node_input(graph, node, 1)) {
      auto c = constant_ints(v);
      if (!c) return std::nullopt;
      axes = *c;
    }
    if (axes.empty() && a.get_int("noop_with_empty_axes", 0)) *noop = true;
  } else if (auto given = a.get_ints("axes")) {
    axes.assign(given->begin(), given->end());
  }
  std::set<int64_t> out;
  if (axes.empty() && !*noop)
    for (int64_t i = 0; i < rank; ++i) out.insert(i);
  for (int64_t ax : axes) {
    std::optional<int64_t> n = sdk::try_normalize_axis(ax, rank);
    if (!n) return std::nullopt;
    out.insert(*n);
  }
  return out;
}

std::string check_reduce(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (auto r = require_dtype(x, "input", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (auto r = require_rank(x, "input", 16); !r.empty()) return r;
  bool noop = false;
  if (!axes_of(graph, node, x->rank, &noop)) return "axes must be constant and in range on vulkan";
  return "";
}

// Merges adjacent dims that are contiguous in the input.
void coalesce(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == strides[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = strides[i];
      continue;
    }
    d.push_back(dims[i]);
    s.push_back(strides[i]);
  }
  dims = d, strides = s;
}

void build_reduce(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  bool noop = false;
  auto axes = axes_of(b.graph(), node, x.rank(), &noop);
  if (!axes)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              std::string(node.op_type) + " node '" + node.name + "': axes out of range");
  if (axes->empty()) {  // noop_with_empty_axes: the output is the input
    b.copy(x.loc, y.loc, y.loc.bytes);
    return;
  }
  auto strides = strides_of(x.dims);
  std::vector<int64_t> kd, ks, rd, rs;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = axes->count(i) > 0;
    (reduced ? rd : kd).push_back(x.dims[i]);
    (reduced ? rs : ks).push_back(strides[i]);
  }
  coalesce(kd, ks);
  coalesce(rd, rs);
  if (kd.size() > 4 || rd.size() > 4)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string(node.op_type) + " node '" + node.name +
                                          "': too many separate kept or reduced dims for vulkan");
  auto pad = [](std::vector<int64_t>& d, std::vector<int64_t>& s) {
    while (d.size() < 4) d.insert(d.begin(), 1), s.insert(s.begin(), 0);
  };
  pad(kd, ks);
  pad(rd, rs);
  std::vector<uint32_t> spec = {0, u32(y.elements(), "elements"), def_of(node).code};
  for (auto* v : {&kd, &ks, &rd, &rs})
    for (int64_t e : *v) spec.push_back(u32(e, "dim"));
  b.dispatch_1d("reduce", spec, {x.loc, y.loc}, static_cast<uint64_t>(y.elements()));
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  for (const ReduceDef& d : kReduce) t.add(d.op_type, {check_reduce, build_reduce});
}

}  // namespace loom::vulkan
