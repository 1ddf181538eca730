// Control flow: If, Loop, Scan. Types (and shapes where the body fixes them) come from the
// nested graphs' declared outputs; nothing is run.
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::kUnknownDim;
using infer::NodeView;

struct Declared {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::optional<Dims> dims;
};

const loom_graph_t* body(const NodeView& v, const char* name) {
  const loom_graph_t* g = v.attrs().get_graph(name);
  if (!g) v.fail(std::string("attribute ") + name + " (a graph) is required");
  return g;
}

// Declared type and shape of output `i` of graph `g`.
Declared graph_output(const NodeView& v, const loom_graph_t& g, size_t i, const char* name) {
  if (i >= g.num_outputs)
    v.fail(std::string("graph ") + name + " has " + std::to_string(g.num_outputs) +
           " outputs, fewer than the node needs");
  int32_t index = g.outputs[i];
  if (index < 0 || static_cast<size_t>(index) >= g.num_values) return {};
  const loom_value_info_t* value = g.values[index];
  Declared d{value->dtype, std::nullopt};
  if (value->rank >= 0 && (value->rank == 0 || value->dims)) {
    d.dims = Dims(value->dims, value->dims + value->rank);
    for (int64_t& x : *d.dims)
      if (x < 0) x = kUnknownDim;
  }
  return d;
}

// Common shape of two declarations: unknown where they differ.
std::optional<Dims> join(const std::optional<Dims>& a, const std::optional<Dims>& b) {
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  Dims out = *a;
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k] != (*b)[k]) out[k] = kUnknownDim;
  return out;
}

void if_op(NodeView& v) {
  const loom_graph_t* then_graph = body(v, "then_branch");
  const loom_graph_t* else_graph = body(v, "else_branch");
  for (size_t i = 0; i < v.num_outputs(); ++i) {
    Declared t = graph_output(v, *then_graph, i, "then_branch");
    Declared e = graph_output(v, *else_graph, i, "else_branch");
    if (t.dtype != LOOM_DTYPE_UNDEFINED && e.dtype != LOOM_DTYPE_UNDEFINED && t.dtype != e.dtype)
      v.fail("output " + std::to_string(i) + " is " + sdk::dtype_name(t.dtype) +
             " in then_branch but " + sdk::dtype_name(e.dtype) + " in else_branch");
    v.set_output(i, t.dtype != LOOM_DTYPE_UNDEFINED ? t.dtype : e.dtype, join(t.dims, e.dims));
  }
}

// Loop(M, cond, v_initial...): body (i, cond, v...) -> (cond, v..., scan outputs...). The N
// final loop-carried values keep their type; scan outputs gain a leading iteration dimension.
void loop(NodeView& v) {
  const loom_graph_t* g = body(v, "body");
  size_t carried = v.num_inputs() >= 2 ? v.num_inputs() - 2 : 0;
  for (size_t i = 0; i < v.num_outputs(); ++i) {
    Declared d = graph_output(v, *g, 1 + i, "body");
    if (i < carried) {
      loom_dtype_t dtype = v.dtype(2 + i) != LOOM_DTYPE_UNDEFINED ? v.dtype(2 + i) : d.dtype;
      v.set_output(i, dtype, join(d.dims, v.shape(2 + i)));
    } else {
      std::optional<Dims> dims = d.dims;
      if (dims) dims->insert(dims->begin(), kUnknownDim);
      v.set_output(i, d.dtype, dims);
    }
  }
}

// Scan-9+ (initial states..., scan inputs...): final states, then scan outputs stacked along
// scan_output_axes (default 0) with the scan length.
void scan(NodeView& v) {
  const loom_graph_t* g = body(v, "body");
  int64_t scan_inputs = v.attrs().get_int("num_scan_inputs", -1);
  if (scan_inputs < 1 || static_cast<size_t>(scan_inputs) > v.num_inputs())
    v.fail("num_scan_inputs " + std::to_string(scan_inputs) + " does not fit the " +
           std::to_string(v.num_inputs()) + " inputs");
  size_t states = v.num_inputs() - static_cast<size_t>(scan_inputs);
  // Scan length: extent of the first scan input along its scan axis.
  int64_t length = kUnknownDim;
  if (std::optional<Dims> first = v.shape(states); first && !first->empty()) {
    int64_t axis = 0;
    if (auto axes = v.ints_attr("scan_input_axes"); axes && !axes->empty()) axis = (*axes)[0];
    length = (*first)[static_cast<size_t>(
        v.normalize_axis(axis, static_cast<int64_t>(first->size()), "scan_input_axes entry"))];
  }
  std::optional<Dims> output_axes = v.ints_attr("scan_output_axes");
  for (size_t i = 0; i < v.num_outputs(); ++i) {
    Declared d = graph_output(v, *g, i, "body");
    if (i < states) {
      v.set_output(i, d.dtype != LOOM_DTYPE_UNDEFINED ? d.dtype : v.dtype(i),
                   join(d.dims, v.shape(i)));
      continue;
    }
    if (!d.dims) {
      v.set_output_dtype(i, d.dtype);
      continue;
    }
    size_t j = i - states;
    int64_t axis = output_axes && j < output_axes->size() ? (*output_axes)[j] : 0;
    Dims dims = *d.dims;
    axis = v.normalize_axis(axis, static_cast<int64_t>(dims.size()) + 1, "scan_output_axes entry");
    dims.insert(dims.begin() + axis, length);
    v.set_output(i, d.dtype, dims);
  }
}

const InferEntry kEntries[] = {
    {"", "If", adapt<if_op>},
    {"", "Loop", adapt<loop>},
    {"", "Scan", adapt<scan>, 9},
};

}  // namespace

std::span<const InferEntry> control_flow_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
