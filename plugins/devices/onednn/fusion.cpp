// Graph rewrites before emission. Each recognizes a pattern exporters emit for one operation
// that oneDNN has a single primitive or post-op for, replaces the first node of the pattern
// and marks the rest absorbed. Post-op fusion (activations, bias, residual) happens later, in
// the emitters, where oneDNN can be asked whether it has a fast implementation.
#include <cmath>

#include "builder.hpp"

namespace loom::onednn {

namespace {

bool near(std::optional<float> v, float want) {
  return v && std::fabs(*v - want) <= 1e-3f * std::fabs(want);
}

// x * 0.5 * (1 + erf(x / sqrt(2))), in the two orders torch exports, becomes Gelu(x).
void rewrite_gelu(IrGraph& g) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    IrNode& div = g.nodes[k];
    if (div.absorbed || div.inputs.size() != 2) continue;
    bool by_div = div.op == "Div" && near(scalar_constant(g, div.inputs[1]), std::sqrt(2.f));
    bool by_mul = div.op == "Mul" && near(scalar_constant(g, div.inputs[1]), std::sqrt(0.5f));
    if (!by_div && !by_mul) continue;
    int x = div.inputs[0];
    int erf = sole_reader(g, div.outputs[0], "Erf");
    if (erf < 0) continue;
    int add = sole_reader(g, g.nodes[erf].outputs[0], "Add");
    if (add < 0 ||
        !near(scalar_constant(g, other_input(g.nodes[add], g.nodes[erf].outputs[0])), 1.f))
      continue;
    int mul1 = sole_reader(g, g.nodes[add].outputs[0], "Mul");
    if (mul1 < 0) continue;
    int o = other_input(g.nodes[mul1], g.nodes[add].outputs[0]);
    std::vector<int> absorbed{erf, add, mul1};
    int final_value = -1;
    if (o == x) {  // (x * (1 + erf)) * 0.5
      int mul2 = sole_reader(g, g.nodes[mul1].outputs[0], "Mul");
      if (mul2 < 0 ||
          !near(scalar_constant(g, other_input(g.nodes[mul2], g.nodes[mul1].outputs[0])), 0.5f))
        continue;
      absorbed.push_back(mul2);
      final_value = g.nodes[mul2].outputs[0];
      drop_consumer(g, x, mul1);
    } else if (o >= 0 && g.value(o).producer >= 0 && g.nodes[g.value(o).producer].op == "Mul" &&
               g.sole_consumer(o) == mul1) {  // (x * 0.5) * (1 + erf)
      int half = g.value(o).producer;
      if (other_input(g.nodes[half], x) < 0 ||
          !near(scalar_constant(g, other_input(g.nodes[half], x)), 0.5f))
        continue;
      if (static_cast<size_t>(half) > k) continue;  // keep the topological order simple
      // The half node runs before the Div; it becomes the Gelu instead.
      absorbed.push_back(static_cast<int>(k));
      final_value = g.nodes[mul1].outputs[0];
      drop_consumer(g, x, static_cast<int>(k));
      IrNode& h = g.nodes[half];
      for (int a : absorbed) g.nodes[a].absorbed = true;
      h.folded.insert(h.folded.end(), absorbed.begin(), absorbed.end());
      h.op = "Gelu";
      h.inputs = {x};
      h.outputs = {final_value};
      g.value(final_value).producer = half;
      continue;
    } else {
      continue;
    }
    for (int a : absorbed) g.nodes[a].absorbed = true;
    div.folded.insert(div.folded.end(), absorbed.begin(), absorbed.end());
    div.op = "Gelu";
    div.inputs = {x};
    div.outputs = {final_value};
    g.value(final_value).producer = static_cast<int>(k);
  }
}

// Conv -> BatchNormalization with constant statistics: scale the weights, shift the bias.
void fold_batch_norm(IrGraph& g) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    IrNode& bn = g.nodes[k];
    if (bn.absorbed || bn.op != "BatchNormalization" || bn.inputs.size() < 5) continue;
    int x = bn.inputs[0];
    int p = g.value(x).producer;
    if (p < 0 || g.nodes[p].op != "Conv" || g.nodes[p].absorbed ||
        g.sole_consumer(x) != static_cast<int>(k))
      continue;
    bool constants = true;
    for (size_t i = 1; i < 5; ++i)
      constants = constants && bn.inputs[i] >= 0 && g.value(bn.inputs[i]).constant();
    if (bn.outputs.size() > 1 && bn.outputs[1] >= 0) constants = false;
    IrNode& conv = g.nodes[p];
    if (!constants || !g.value(conv.inputs[1]).constant()) continue;
    int conv_bias = g.in(conv, 2);
    if (conv_bias >= 0 && !g.value(conv_bias).constant()) continue;
    float eps = sdk::Attributes(*bn.view).get_float("epsilon", 1e-5f);
    std::vector<float> scale = constant_floats(g, bn.inputs[1]),
                       shift = constant_floats(g, bn.inputs[2]),
                       mean = constant_floats(g, bn.inputs[3]),
                       var = constant_floats(g, bn.inputs[4]);
    std::vector<float> w =
        conv.folded_weights.empty() ? constant_floats(g, conv.inputs[1]) : conv.folded_weights;
    size_t m = scale.size();
    if (m == 0 || w.size() % m != 0 || shift.size() != m || mean.size() != m || var.size() != m)
      continue;
    std::vector<float> bias = conv.folded_bias;
    if (bias.empty())
      bias = conv_bias >= 0 ? constant_floats(g, conv_bias) : std::vector<float>(m, 0.f);
    size_t per = w.size() / m;
    for (size_t c = 0; c < m; ++c) {
      float a = scale[c] / std::sqrt(var[c] + eps);
      for (size_t i = 0; i < per; ++i) w[c * per + i] *= a;
      bias[c] = (bias[c] - mean[c]) * a + shift[c];
    }
    conv.folded_weights = std::move(w);
    conv.folded_bias = std::move(bias);
    conv.outputs[0] = bn.outputs[0];
    g.value(bn.outputs[0]).producer = p;
    bn.absorbed = true;
    conv.folded.push_back(static_cast<int>(k));
  }
}

// True when ReduceMean node `k` averages only the last axis of its input, keeping dims.
bool mean_of_last_axis(const IrGraph& g, const IrNode& n) {
  if (n.op != "ReduceMean" || n.inputs.empty() || n.outputs.empty()) return false;
  sdk::Attributes attrs(*n.view);
  if (attrs.get_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (auto a = attrs.get_ints("axes")) axes.assign(a->begin(), a->end());
  if (g.in(n, 1) >= 0) {
    if (!g.value(n.inputs[1]).constant()) return false;
    axes = constant_ints(g, n.inputs[1]);
  }
  int64_t rank = static_cast<int64_t>(g.value(n.inputs[0]).dims.size());
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// mean = ReduceMean(x); d = x - mean; var = ReduceMean(d^2); n = d / Sqrt(var + eps);
// y = n * gamma (+ beta), over the last axis, becomes LayerNormalization(x, gamma, beta).
void rewrite_layer_norm(IrGraph& g) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    IrNode& mean = g.nodes[k];
    if (mean.absorbed || !mean_of_last_axis(g, mean)) continue;
    int x = mean.inputs[0];
    int sub = sole_reader(g, mean.outputs[0], "Sub");
    if (sub < 0 || g.nodes[sub].inputs[0] != x) continue;
    int d = g.nodes[sub].outputs[0];
    const auto& dc = g.value(d).consumers;
    if (g.value(d).graph_output || dc.size() != 2) continue;
    int pow = -1, div = -1;
    for (int c : dc) {
      if (g.nodes[c].op == "Pow" && near(scalar_constant(g, g.in(g.nodes[c], 1)), 2.f)) pow = c;
      if (g.nodes[c].op == "Mul" && g.nodes[c].inputs.size() == 2 && g.nodes[c].inputs[0] == d &&
          g.nodes[c].inputs[1] == d)
        pow = c;
      if (g.nodes[c].op == "Div" && g.nodes[c].inputs[0] == d) div = c;
    }
    if (pow < 0 || div < 0) continue;
    int var = sole_reader(g, g.nodes[pow].outputs[0], "ReduceMean");
    if (var < 0 || !mean_of_last_axis(g, g.nodes[var])) continue;
    int add = sole_reader(g, g.nodes[var].outputs[0], "Add");
    if (add < 0) continue;
    auto eps = scalar_constant(g, other_input(g.nodes[add], g.nodes[var].outputs[0]));
    int sqrt = sole_reader(g, g.nodes[add].outputs[0], "Sqrt");
    if (!eps || sqrt < 0 || sole_reader(g, g.nodes[sqrt].outputs[0], "Div") != div ||
        g.nodes[div].inputs[1] != g.nodes[sqrt].outputs[0])
      continue;
    int mul = sole_reader(g, g.nodes[div].outputs[0], "Mul");
    if (mul < 0) continue;
    int64_t last = g.value(x).dims.back();
    int gamma = other_input(g.nodes[mul], g.nodes[div].outputs[0]);
    if (gamma < 0 || !g.value(gamma).constant() || g.value(gamma).elements() != last ||
        g.value(gamma).dims.back() != last)
      continue;
    std::vector<int> absorbed{sub, pow, var, add, sqrt, div, mul};
    int out = g.nodes[mul].outputs[0];
    int beta = -1;
    if (int bias = sole_reader(g, out, "Add"); bias >= 0) {
      int b = other_input(g.nodes[bias], out);
      if (b >= 0 && g.value(b).constant() && g.value(b).elements() == last &&
          g.value(b).dims.back() == last) {
        beta = b;
        absorbed.push_back(bias);
        out = g.nodes[bias].outputs[0];
      }
    }
    if (g.value(out).dims != g.value(x).dims) continue;
    for (int a : absorbed) g.nodes[a].absorbed = true;
    mean.folded.insert(mean.folded.end(), absorbed.begin(), absorbed.end());
    drop_consumer(g, x, sub);
    mean.op = "LayerNormalization";
    mean.inputs = {x, gamma};
    if (beta >= 0) mean.inputs.push_back(beta);
    mean.outputs = {out};
    mean.epsilon = *eps;
    g.value(out).producer = static_cast<int>(k);
  }
}

// x * Sigmoid(x) (SiLU, EfficientNet's activation) becomes Swish(x), and x * HardSigmoid(x)
// with alpha 1/6 and beta 1/2 (HardSwish as exported before opset 14) becomes HardSwish(x):
// one eltwise, which the producing convolution then carries as a post-op.
void rewrite_gated_activations(IrGraph& g) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    IrNode& gate = g.nodes[k];
    if (gate.absorbed || gate.inputs.size() != 1 || gate.outputs.size() != 1 ||
        gate.inputs[0] < 0 || gate.outputs[0] < 0)
      continue;
    const char* fused = nullptr;
    if (gate.op == "Sigmoid") {
      fused = "Swish";
    } else if (gate.op == "HardSigmoid") {
      sdk::Attributes attrs(*gate.view);
      if (near(attrs.get_float("alpha", 0.2f), 1.f / 6.f) &&
          near(attrs.get_float("beta", 0.5f), 0.5f))
        fused = "HardSwish";
    }
    if (!fused) continue;
    int x = gate.inputs[0];
    int mul = sole_reader(g, gate.outputs[0], "Mul");
    if (mul < 0 || other_input(g.nodes[mul], gate.outputs[0]) != x) continue;
    int out = g.nodes[mul].outputs[0];
    if (out < 0 || g.value(out).dims != g.value(x).dims) continue;
    g.nodes[mul].absorbed = true;
    gate.folded.push_back(mul);
    drop_consumer(g, x, mul);
    gate.op = fused;
    gate.outputs = {out};
    g.value(out).producer = static_cast<int>(k);
  }
}

// A float Conv whose only reader is an Add of a residual made later in node order (TFLite
// orders a block's shortcut MaxPool/Pad after the block's last convolution): the Conv is
// emitted right after the residual's producer, so that the Add can be its sum post-op
// (landmark_like_float: 5 of 10 residual Adds were separate steps). Nothing between reads the
// Conv's output, and its inputs are older, so no result changes.
void defer_to_residuals(IrGraph& g) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const IrNode& n = g.nodes[k];
    if (n.op != "Conv" || n.absorbed || n.quant || n.outputs.size() != 1 || n.outputs[0] < 0)
      continue;
    int add = sole_reader(g, n.outputs[0], "Add");
    if (add < 0 || g.nodes[static_cast<size_t>(add)].inputs.size() != 2) continue;
    int other = other_input(g.nodes[static_cast<size_t>(add)], n.outputs[0]);
    if (other < 0 || other == n.outputs[0]) continue;
    const IrValue& r = g.value(other);
    if (r.constant() || r.graph_input || r.producer <= static_cast<int>(k) ||
        g.nodes[static_cast<size_t>(r.producer)].absorbed)
      continue;
    g.nodes[k].emit_after = r.producer;
  }
}

}  // namespace

void rewrite_patterns(IrGraph& g) {
  rewrite_gated_activations(g);
  rewrite_layer_norm(g);
  rewrite_gelu(g);
  fold_batch_norm(g);
  defer_to_residuals(g);
}

}  // namespace loom::onednn
