// The bf16 precision plan (precision.hpp): which values and nodes keep f32.
#include "precision.hpp"

#include <optional>

#include "builder.hpp"

namespace loom::onednn {

namespace {

bool is_norm(const std::string& op) {
  return op == "BatchNormalization" || op == "LayerNormalization" || op == "RMSNormalization" ||
         op == "InstanceNormalization" || op == "GroupNormalization";
}

bool is_softmax(const std::string& op) {
  return op == "Softmax" || op == "LogSoftmax";
}

bool is_layout(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity" || op == "Transpose" || op == "Dropout";
}

bool is_arithmetic(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

// The operands of node `n` that are activations of the output's full shape (not constants).
std::vector<int> full_activations(const IrGraph& g, const IrNode& n) {
  std::vector<int> out;
  if (n.outputs.empty() || n.outputs[0] < 0) return out;
  const std::vector<int64_t>& dims = g.value(n.outputs[0]).dims;
  for (int id : n.inputs)
    if (id >= 0 && !g.value(id).constant() && g.value(id).dims == dims) out.push_back(id);
  return out;
}

// True when node `n` makes a float32 tensor: the plan concerns those only (an integer Add of
// shape arithmetic stays what it is).
bool makes_float(const IrGraph& g, const IrNode& n) {
  return !n.outputs.empty() && n.outputs[0] >= 0 &&
         g.value(n.outputs[0]).dtype == LOOM_DTYPE_FLOAT32;
}

// An Add or Sum of two or more activations of the result's shape: a residual connection.
bool is_residual_sum(const IrGraph& g, const IrNode& n) {
  if ((n.op != "Add" && n.op != "Sum") || !makes_float(g, n)) return false;
  size_t operands = 0;
  for (int id : n.inputs) operands += id >= 0;
  return operands >= 2 && full_activations(g, n).size() == operands;
}

}  // namespace

Bf16Keep bf16_keep_from(const std::vector<std::string>& names) {
  Bf16Keep k{false, false, false, false};
  for (const std::string& s : names) {
    k.norm = k.norm || s == "norm";
    k.softmax = k.softmax || s == "softmax";
    k.residual = k.residual || s == "residual";
    k.final = k.final || s == "final";
  }
  return k;
}

std::vector<std::string> bf16_keep_names(const Bf16Keep& keep) {
  std::vector<std::string> names;
  if (keep.norm) names.push_back("norm");
  if (keep.softmax) names.push_back("softmax");
  if (keep.residual) names.push_back("residual");
  if (keep.final) names.push_back("final");
  return names;
}

bool bf16_compute_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm";
}

PrecisionPlan plan_precision(const IrGraph& g, const Bf16Keep& keep) {
  PrecisionPlan plan;
  plan.f32_values.assign(g.values.size(), false);
  plan.f32_nodes.assign(g.nodes.size(), false);
  // Keeps `value` in f32 and, through the elementwise and layout ops that produce it from
  // another activation (whose result has that activation's type), that activation too, up to
  // the convolution or matrix product that computes it, which then writes f32. A work list,
  // not recursion: a chain may be as long as the graph.
  auto keep_f32 = [&](int first) {
    std::vector<int> work{first};
    while (!work.empty()) {
      const int value = work.back();
      work.pop_back();
      if (value < 0 || plan.f32_values[static_cast<size_t>(value)] ||
          g.value(value).dtype != LOOM_DTYPE_FLOAT32)
        continue;
      plan.f32_values[static_cast<size_t>(value)] = true;
      const int p = g.value(value).producer;
      if (p < 0) continue;
      const IrNode& n = g.nodes[static_cast<size_t>(p)];
      if (n.absorbed || bf16_compute_op(n.op)) continue;
      if (is_layout(n.op)) {
        if (!n.inputs.empty()) work.push_back(n.inputs[0]);
      } else if (std::optional<EltwiseForm> e = eltwise_form(g, n)) {
        work.push_back(g.in(n, e->data_input));
      } else if (is_arithmetic(n.op)) {
        for (int id : full_activations(g, n)) work.push_back(id);
      }
    }
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const IrNode& n = g.nodes[k];
    if (n.absorbed || n.inputs.empty() || n.outputs.empty()) continue;
    const bool kept =
        makes_float(g, n) && ((keep.norm && is_norm(n.op)) || (keep.softmax && is_softmax(n.op)) ||
                              (keep.residual && is_residual_sum(g, n)));
    if (!kept) continue;
    plan.f32_nodes[k] = true;
    if (is_residual_sum(g, n)) {
      for (int id : n.inputs) keep_f32(id);
    } else {
      keep_f32(n.inputs[0]);
    }
    for (int id : n.outputs)
      if (id >= 0) plan.f32_values[static_cast<size_t>(id)] = true;
  }
  if (keep.final) {
    // Per node: whether a convolution or matrix product reads what it computes, directly or
    // through other nodes. Nodes come in topological order (a consumer after its producer, also
    // where emission defers a node: IrNode::emit_after), so one pass from the end settles it; a
    // consumer out of that order counts as a reader, which keeps the node in bf16.
    std::vector<bool> feeds(g.nodes.size(), false);
    for (size_t k = g.nodes.size(); k-- > 0;) {
      const IrNode& n = g.nodes[k];
      if (n.absorbed) continue;
      bool any = false;
      for (int out : n.outputs) {
        if (out < 0) continue;
        for (int c : g.value(out).consumers) {
          const size_t ci = static_cast<size_t>(c);
          if (g.nodes[ci].absorbed) continue;
          any = any || ci <= k || bf16_compute_op(g.nodes[ci].op) || feeds[ci];
        }
      }
      feeds[k] = any;
      if (bf16_compute_op(n.op) && !any) plan.f32_nodes[k] = true;
    }
  }
  return plan;
}

}  // namespace loom::onednn
