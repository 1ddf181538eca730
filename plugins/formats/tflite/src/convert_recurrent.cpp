// UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM and UNIDIRECTIONAL_SEQUENCE_RNN
// (float32).
//
// The plain variants map to ONNX LSTM / RNN: an LSTM with input gate, optional peepholes, TANH
// and no clip, projection or layer normalization; an RNN with TANH. ONNX cannot express the
// others (its LSTM `clip` bounds gate inputs, not TFLite's cell state; its `input_forget`
// derives the forget gate from the input gate, the reverse of TFLite's CIFG; it has no
// projection, layer normalization or RELU6), so those are unrolled over the static sequence
// length into MatMul/Add/Mul/Sigmoid/activation nodes following TFLite's float kernel step by
// step. Input projections of all time steps are computed by one MatMul before the loop.
//
// State operands (TFLite variable tensors) give the initial state: a graph input or constant
// is used as is; a variable tensor nothing writes starts at zero, as in TFLite.
#include <cmath>
#include <loom/plugin.hpp>

#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

// UNIDIRECTIONAL_SEQUENCE_LSTM operand indices (lstm_shared.h); read_lstm takes the weights
// (4 input, 4 recurrent, 3 peephole, 4 bias, projection weights and bias) from kInputToInput on.
enum LstmInput : size_t {
  kInput = 0,
  kInputToInput = 1,
  kOutputState = 18,
  kCellState = 19,
  kInputLayerNorm = 20,  // i f c o coefficients: 20-23
};

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// The contents of a float32 constant operand of shape `dims`.
std::vector<float> weight_data(const Converter& c, const TensorView& t,
                               const std::vector<int64_t>& dims, const std::string& what) {
  if (t.dtype != LOOM_DTYPE_FLOAT32)
    c.unsupported(what + " '" + t.name + "' is " + sdk::dtype_name(t.dtype) +
                  "; only float32 recurrent operators are supported (no integer or hybrid "
                  "kernels)");
  if (!t.is_constant()) c.unsupported(what + " '" + t.name + "' must be a constant");
  if (t.shape != dims)
    c.invalid(what + " '" + t.name + "' has shape " + dims_text(t.shape) + ", expected " +
              dims_text(dims));
  return c.dequantized_data(t);
}

// The fused activation as nodes (TFLite's ApplyActivationToVector); returns the result.
std::string activate(Converter& c, const std::string& x, int activation, const std::string& base) {
  if (activation == 0) return x;
  const std::string y = c.fresh(base);
  switch (activation) {
    case 1:
      c.emit("Relu", {x}, {y});
      break;
    case 2:
      c.emit("Clip",
             {x, c.constant_f32("clip_min", {-1.f}, {}), c.constant_f32("clip_max", {1.f}, {})},
             {y});
      break;
    case 3:
      c.emit("Clip",
             {x, c.constant_f32("clip_min", {0.f}, {}), c.constant_f32("clip_max", {6.f}, {})},
             {y});
      break;
    case 4:
      c.emit("Tanh", {x}, {y});
      break;
    default:
      c.unsupported("fused activation " + std::to_string(activation) +
                    " is not supported for recurrent operators");
  }
  return y;
}

int checked_activation(const Converter& c, int activation) {
  if (activation < 0 || activation > 4)
    c.unsupported("fused activation " + std::to_string(activation) +
                  " (only NONE, RELU, RELU_N1_TO_1, RELU6 and TANH) is not supported");
  return activation;
}

std::string binary(Converter& c, const char* op, const std::string& a, const std::string& b,
                   const std::string& base) {
  const std::string y = c.fresh(base);
  c.emit(op, {a, b}, {y});
  return y;
}

// Sequence geometry shared by LSTM and RNN.
struct Sequence {
  int64_t batch = 0, steps = 0, features = 0;
  int64_t time_axis = 0;
};

// The input's feature count, after checking its rank and type.
int64_t input_features(const Converter& c, const TensorView& x) {
  if (x.rank() != 3)
    c.invalid("the input must have rank 3 ([batch, time, features] or time-major), not " +
              std::to_string(x.rank()));
  if (x.dtype != LOOM_DTYPE_FLOAT32)
    c.unsupported("input '" + x.name + "' is " + sdk::dtype_name(x.dtype) +
                  "; only float32 recurrent operators are supported");
  if (x.shape[2] < 1) c.invalid("the input has no features");
  return x.shape[2];
}

Sequence sequence_of(const Converter& c, const TensorView& x, bool time_major) {
  input_features(c, x);
  Sequence s;
  s.time_axis = time_major ? 0 : 1;
  s.steps = x.shape[s.time_axis];
  s.batch = x.shape[1 - s.time_axis];
  s.features = x.shape[2];
  if (s.steps < 1 || s.batch < 1 || s.features < 1)
    c.unsupported("the sequence length, batch and features must be static and positive");
  return s;
}

void check_output(const Converter& c, const TensorView& y, const Sequence& s, int64_t units) {
  const std::vector<int64_t> expected = s.time_axis == 0
                                            ? std::vector<int64_t>{s.steps, s.batch, units}
                                            : std::vector<int64_t>{s.batch, s.steps, units};
  if (y.shape != expected)
    c.invalid("the output has shape " + dims_text(y.shape) + ", expected " + dims_text(expected));
  if (y.dtype != LOOM_DTYPE_FLOAT32) c.unsupported("the output must be float32");
}

// The initial value of state operand `t` ([batch, units]).
std::string initial_state(Converter& c, const TensorView& t, const Sequence& s, int64_t units,
                          const std::string& what) {
  const std::vector<int64_t> dims = {s.batch, units};
  if (t.shape != dims)
    c.invalid(what + " '" + t.name + "' has shape " + dims_text(t.shape) + ", expected " +
              dims_text(dims));
  if (t.dtype != LOOM_DTYPE_FLOAT32) c.unsupported(what + " '" + t.name + "' must be float32");
  if (t.is_constant() || c.has_form(t, Layout::kNative)) return c.float_value(t, Layout::kNative);
  // A variable tensor no operator wrote: TFLite zero-initializes it.
  return c.constant_f32(t.name + "/zero", std::vector<float>(s.batch * units, 0.f), dims);
}

// [features, gates * units] from per-gate [units, features] matrices: x @ this = all gates.
std::string stacked_transposed(Converter& c, const std::vector<std::vector<float>>& gates,
                               int64_t units, int64_t features, const std::string& base) {
  const int64_t n = static_cast<int64_t>(gates.size());
  std::vector<float> out(features * n * units);
  for (int64_t f = 0; f < features; ++f)
    for (int64_t g = 0; g < n; ++g)
      for (int64_t u = 0; u < units; ++u) out[(f * n + g) * units + u] = gates[g][u * features + f];
  return c.constant_f32(base, out, {features, n * units});
}

// Concatenates the per-step outputs [batch, units] along the time axis into `y`.
void stack_steps(Converter& c, const std::vector<std::string>& steps, const Sequence& s,
                 const TensorView& y) {
  std::vector<std::string> expanded;
  const std::string axis = c.constant_i64("time_axis", {s.time_axis});
  for (const auto& h : steps) {
    expanded.push_back(c.fresh(y.name + "/step"));
    c.emit("Unsqueeze", {h, axis}, {expanded.back()});
  }
  c.emit("Concat", expanded, {c.define(y, Layout::kNative)}, {Attr::Int("axis", s.time_axis)});
}

// ---- LSTM ------------------------------------------------------------------------------------

// TFLite's MeanStddevNormalization over the units, times the coefficients, plus the bias.
std::string layer_norm(Converter& c, const std::string& x, const std::string& coefficients,
                       const std::string& bias, const std::string& base) {
  // Opset 17's ReduceMean takes its axes as an attribute.
  const std::vector<Attr> reduce = {Attr::Ints("axes", {-1}), Attr::Int("keepdims", 1)};
  const std::string mean = c.fresh(base + "/mean");
  c.emit("ReduceMean", {x}, {mean}, reduce);
  const std::string centered = binary(c, "Sub", x, mean, base + "/centered");
  const std::string squared = binary(c, "Mul", centered, centered, base + "/squared");
  const std::string variance = c.fresh(base + "/variance");
  c.emit("ReduceMean", {squared}, {variance}, reduce);
  const std::string padded =
      binary(c, "Add", variance, c.constant_f32("norm_epsilon", {1e-8f}, {}), base + "/var_eps");
  const std::string stddev = c.fresh(base + "/stddev");
  c.emit("Sqrt", {padded}, {stddev});
  const std::string normalized = binary(c, "Div", centered, stddev, base + "/normalized");
  return binary(c, "Add", binary(c, "Mul", normalized, coefficients, base + "/scaled"), bias,
                base + "/norm");
}

// One direction's LSTM operands, read from the operator's inputs starting at `first` (the
// input-to-input weights) in TFLite's order: 4 input weights, 4 recurrent weights, 3
// peepholes, 4 biases, projection weights and bias.
struct LstmWeights {
  int64_t units = 0, outputs = 0;
  bool cifg = false, peephole = false, projection = false, layer_norm = false;
  std::vector<int> present;  // gates in TFLite's order i f c o, without i for CIFG
  std::vector<std::vector<float>> w = std::vector<std::vector<float>>(4), r = w, b = w, ln = w;
  std::vector<float> p_i, p_f, p_o, proj_w, proj_b;
};

constexpr const char* kGate[4] = {"input", "forget", "cell", "output"};

// `layer_norm_first`: index of the input gate's layer-norm coefficients, 0 when the operator
// has none.
LstmWeights read_lstm(Converter& c, size_t first, int64_t features, size_t layer_norm_first) {
  LstmWeights p;
  const size_t w0 = first, r0 = first + 4, peep0 = first + 8, b0 = first + 11, proj0 = first + 15;
  const TensorView& forget_w = c.input(w0 + 1);
  if (forget_w.rank() != 2 || forget_w.shape[0] < 1)
    c.invalid("input_to_forget_weights must have shape [units, features]");
  p.units = forget_w.shape[0];
  p.cifg = !c.has_input(w0);
  if (p.cifg != !c.has_input(r0) || p.cifg != !c.has_input(b0))
    c.invalid(
        "the input gate's weights, recurrent weights and bias must be all present or all "
        "absent (CIFG)");
  p.peephole = c.has_input(peep0 + 2);
  if (p.peephole != c.has_input(peep0 + 1) || (!p.cifg && p.peephole != c.has_input(peep0)) ||
      (p.cifg && c.has_input(peep0)))
    c.invalid("the peephole weights must be all present or all absent");
  p.projection = c.has_input(proj0);
  if (!p.projection && c.has_input(proj0 + 1))
    c.invalid("a projection bias without projection weights");
  p.outputs = p.units;  // the output state's size: the projection's when there is one
  if (p.projection) {
    const TensorView& pw = c.input(proj0);
    if (pw.rank() != 2 || pw.shape[0] < 1)
      c.invalid("projection_weights must have shape [outputs, units]");
    p.outputs = pw.shape[0];
  }
  if (layer_norm_first) {
    p.layer_norm = c.has_input(layer_norm_first + 1);
    for (size_t i = layer_norm_first + 1; i < layer_norm_first + 4; ++i)
      if (c.has_input(i) != p.layer_norm)
        c.invalid("the layer normalization coefficients must be all present or all absent");
    if (p.layer_norm && c.has_input(layer_norm_first) == p.cifg)
      c.invalid(
          "the input gate's layer normalization coefficients must be present exactly "
          "when the input gate is");
  }
  for (int g = p.cifg ? 1 : 0; g < 4; ++g) p.present.push_back(g);
  for (int g : p.present) {
    p.w[g] = weight_data(c, c.input(w0 + g), {p.units, features},
                         std::string(kGate[g]) + " gate input weights");
    p.r[g] = weight_data(c, c.input(r0 + g), {p.units, p.outputs},
                         std::string(kGate[g]) + " gate recurrent weights");
    p.b[g] = weight_data(c, c.input(b0 + g), {p.units}, std::string(kGate[g]) + " gate bias");
    if (p.layer_norm)
      p.ln[g] = weight_data(c, c.input(layer_norm_first + g), {p.units},
                            std::string(kGate[g]) + " gate layer normalization coefficients");
  }
  if (p.peephole) {
    if (!p.cifg) p.p_i = weight_data(c, c.input(peep0), {p.units}, "cell_to_input weights");
    p.p_f = weight_data(c, c.input(peep0 + 1), {p.units}, "cell_to_forget weights");
    p.p_o = weight_data(c, c.input(peep0 + 2), {p.units}, "cell_to_output weights");
  }
  if (p.projection) {
    p.proj_w = weight_data(c, c.input(proj0), {p.outputs, p.units}, "projection weights");
    if (c.has_input(proj0 + 1))
      p.proj_b = weight_data(c, c.input(proj0 + 1), {p.outputs}, "projection bias");
  }
  return p;
}

struct LstmOptions {
  int activation = 4;
  float cell_clip = 0.f, proj_clip = 0.f;
};

LstmOptions lstm_options(const Converter& c, int activation, float cell_clip, float proj_clip) {
  if (!(cell_clip >= 0.f) || !(proj_clip >= 0.f) || std::isinf(cell_clip) || std::isinf(proj_clip))
    c.invalid("cell_clip and proj_clip must be finite and non-negative");
  return {checked_activation(c, activation), cell_clip, proj_clip};
}

// The LSTM unrolled over the time steps, following TFLite's float kernel; returns the output
// state of every step in time order (a `reverse` direction runs from the last step).
std::vector<std::string> unroll_lstm(Converter& c, const LstmWeights& p, const LstmOptions& opt,
                                     const std::string& xs, const Sequence& s, std::string h,
                                     std::string cell, bool reverse, const std::string& name) {
  // All input projections at once: [.., gates * units] (+ bias unless layer norm adds it
  // after normalizing).
  const int64_t n = static_cast<int64_t>(p.present.size());
  std::vector<std::vector<float>> wp, rp;
  std::vector<float> bias_all;
  for (int g : p.present) {
    wp.push_back(p.w[g]);
    rp.push_back(p.r[g]);
    bias_all.insert(bias_all.end(), p.b[g].begin(), p.b[g].end());
  }
  std::string projected = binary(
      c, "MatMul", xs, stacked_transposed(c, wp, p.units, s.features, name + "/W"), name + "/xw");
  if (!p.layer_norm)
    projected = binary(c, "Add", projected, c.constant_f32(name + "/B", bias_all), name + "/xw_b");
  const std::string recurrent = stacked_transposed(c, rp, p.units, p.outputs, name + "/R");
  const std::string split = c.constant_i64("gate_split", std::vector<int64_t>(n, p.units));
  auto vec = [&](const std::vector<float>& v, const std::string& base) {
    return c.constant_f32(name + "/" + base, v);
  };
  std::vector<std::string> ln_c(4), b_c(4);
  if (p.layer_norm)
    for (int g : p.present) {
      ln_c[g] = vec(p.ln[g], std::string(kGate[g]) + "_ln");
      b_c[g] = vec(p.b[g], std::string(kGate[g]) + "_bias");
    }
  const std::string pi = p.peephole && !p.cifg ? vec(p.p_i, "p_i") : "";
  const std::string pf = p.peephole ? vec(p.p_f, "p_f") : "";
  const std::string po = p.peephole ? vec(p.p_o, "p_o") : "";
  std::string proj_w_c, proj_b_c;
  if (p.projection) {
    proj_w_c = stacked_transposed(c, {p.proj_w}, p.outputs, p.units, name + "/proj_w");
    if (!p.proj_b.empty()) proj_b_c = vec(p.proj_b, "proj_b");
  }
  const std::string one = c.constant_f32("one", {1.f}, {});
  std::vector<std::string> steps(s.steps);
  for (int64_t k = 0; k < s.steps; ++k) {
    const int64_t t = reverse ? s.steps - 1 - k : k;
    const std::string base = name + "/t" + std::to_string(t);
    const std::string xt = c.fresh(base + "/xw");
    c.emit("Gather", {projected, c.constant_i64("step", {t}, {})}, {xt},
           {Attr::Int("axis", s.time_axis)});
    const std::string pre =
        binary(c, "Add", xt, binary(c, "MatMul", h, recurrent, base + "/hr"), base + "/pre");
    std::vector<std::string> parts;
    for (int64_t g = 0; g < n; ++g) parts.push_back(c.fresh(base + "/gate"));
    c.emit("Split", {pre, split}, parts, {Attr::Int("axis", 1)});
    std::string gate_pre[4];
    for (int64_t g = 0; g < n; ++g) gate_pre[p.present[g]] = parts[g];
    // Peephole (with the previous cell for i, f; the new one for o), layer norm, activation.
    auto finish_gate = [&](int g, const std::string& peep, const std::string& with_cell) {
      std::string v = gate_pre[g];
      if (!peep.empty())
        v = binary(c, "Add", v, binary(c, "Mul", peep, with_cell, base + "/peep"),
                   base + "/peeped");
      if (p.layer_norm) v = layer_norm(c, v, ln_c[g], b_c[g], base + "/" + kGate[g]);
      if (g == 2) return activate(c, v, opt.activation, base + "/g");
      const std::string sig = c.fresh(base + "/" + kGate[g]);
      c.emit("Sigmoid", {v}, {sig});
      return sig;
    };
    const std::string f = finish_gate(1, pf, cell);
    const std::string i =
        p.cifg ? binary(c, "Sub", one, f, base + "/input") : finish_gate(0, pi, cell);
    const std::string g = finish_gate(2, "", "");
    std::string next_cell = binary(c, "Add", binary(c, "Mul", f, cell, base + "/keep"),
                                   binary(c, "Mul", i, g, base + "/write"), base + "/c");
    if (opt.cell_clip > 0.f) {
      const std::string clipped = c.fresh(base + "/c_clip");
      c.emit("Clip",
             {next_cell, c.constant_f32("cell_clip_min", {-opt.cell_clip}, {}),
              c.constant_f32("cell_clip_max", {opt.cell_clip}, {})},
             {clipped});
      next_cell = clipped;
    }
    const std::string og = finish_gate(3, po, next_cell);
    std::string next_h =
        binary(c, "Mul", og, activate(c, next_cell, opt.activation, base + "/c_act"), base + "/h");
    if (p.projection) {
      next_h = binary(c, "MatMul", next_h, proj_w_c, base + "/proj");
      if (!proj_b_c.empty()) next_h = binary(c, "Add", next_h, proj_b_c, base + "/proj_b");
      if (opt.proj_clip > 0.f) {
        const std::string clipped = c.fresh(base + "/proj_clip");
        c.emit("Clip",
               {next_h, c.constant_f32("proj_clip_min", {-opt.proj_clip}, {}),
                c.constant_f32("proj_clip_max", {opt.proj_clip}, {})},
               {clipped});
        next_h = clipped;
      }
    }
    h = next_h;
    cell = next_cell;
    steps[t] = h;
  }
  return steps;
}

void convert_lstm(Converter& c) {
  const auto& op = c.op();
  if (op.inputs.size() != 20 && op.inputs.size() != 24)
    c.invalid("UNIDIRECTIONAL_SEQUENCE_LSTM needs 20 or 24 inputs, not " +
              std::to_string(op.inputs.size()));
  // Operands first, options after: the weights' shapes do not depend on them.
  const TensorView& x = c.input(kInput);
  const int64_t features = input_features(c, x);
  const LstmWeights p = read_lstm(c, kInputToInput, features,
                                  op.inputs.size() == 24 ? size_t{kInputLayerNorm} : size_t{0});
  const auto* o = options_of<fb::UnidirectionalSequenceLSTMOptions>(c);
  if (!o) c.invalid("UNIDIRECTIONAL_SEQUENCE_LSTM without options");
  if (o->diagonal_recurrent_tensors())
    c.unsupported("diagonal recurrent weights (diagonal_recurrent_tensors) are not supported");
  const LstmOptions opt = lstm_options(c, static_cast<int>(o->fused_activation_function()),
                                       o->cell_clip(), o->proj_clip());
  const Sequence s = sequence_of(c, x, o->time_major());
  const TensorView& y = c.output();
  check_output(c, y, s, p.outputs);
  const std::string h0 = initial_state(c, c.input(kOutputState), s, p.outputs, "output state");
  const std::string c0 = initial_state(c, c.input(kCellState), s, p.units, "cell state");
  const std::string xs = c.float_value(x, Layout::kNative);

  if (!p.cifg && opt.cell_clip == 0.f && !p.projection && !p.layer_norm && opt.activation == 4) {
    // ONNX LSTM: gates i o f c, peepholes i o f, layout 1 = batch-major.
    const int64_t units = p.units;
    constexpr int kOnnxOrder[4] = {0, 3, 1, 2};
    std::vector<float> wd, rd, bd;
    for (int g : kOnnxOrder) {
      wd.insert(wd.end(), p.w[g].begin(), p.w[g].end());
      rd.insert(rd.end(), p.r[g].begin(), p.r[g].end());
      bd.insert(bd.end(), p.b[g].begin(), p.b[g].end());
    }
    bd.resize(8 * units, 0.f);  // the recurrence bias: TFLite has one bias per gate
    std::vector<std::string> inputs = {
        xs, c.constant_f32(y.name + "/W", wd, {1, 4 * units, s.features}),
        c.constant_f32(y.name + "/R", rd, {1, 4 * units, units}),
        c.constant_f32(y.name + "/B", bd, {1, 8 * units}), ""};
    const std::string dir_axis = c.constant_i64("direction_axis", {s.time_axis == 0 ? 0 : 1});
    for (const auto& state : {h0, c0}) {
      inputs.push_back(c.fresh(y.name + "/initial"));
      c.emit("Unsqueeze", {state, dir_axis}, {inputs.back()});
    }
    if (p.peephole) {
      std::vector<float> pd = p.p_i;
      pd.insert(pd.end(), p.p_o.begin(), p.p_o.end());
      pd.insert(pd.end(), p.p_f.begin(), p.p_f.end());
      inputs.push_back(c.constant_f32(y.name + "/P", pd, {1, 3 * units}));
    }
    const std::string full = c.fresh(y.name + "/lstm");
    c.emit("LSTM", inputs, {full},
           {Attr::Int("hidden_size", units), Attr::Int("layout", s.time_axis == 0 ? 0 : 1)});
    // Y is [T, 1, B, H] (layout 0) or [B, T, 1, H] (layout 1).
    c.emit("Squeeze", {full, c.constant_i64("direction_axis", {s.time_axis == 0 ? 1 : 2})},
           {c.define(y, Layout::kNative)});
    return;
  }
  stack_steps(c, unroll_lstm(c, p, opt, xs, s, h0, c0, false, y.name), s, y);
}

// BIDIRECTIONAL_SEQUENCE_LSTM: inputs 1-17 forward and 18-34 backward weights (as the
// unidirectional operator's 1-17), 35-36 / 37-38 their states, 39-47 the auxiliary input and
// its weights. Both directions are unrolled; the backward one runs from the last step and
// writes each step's state at its own time position. merge_outputs concatenates the two
// directions' features in output 0.
void convert_bidirectional_lstm(Converter& c) {
  const auto& op = c.op();
  if (op.inputs.size() != 48)
    c.invalid("BIDIRECTIONAL_SEQUENCE_LSTM needs 48 inputs, not " +
              std::to_string(op.inputs.size()));
  for (size_t i = 39; i < 48; ++i)
    if (c.has_input(i)) c.unsupported("the auxiliary input (inputs 39-47) is not supported");
  const TensorView& x = c.input(kInput);
  const int64_t features = input_features(c, x);
  const LstmWeights fw = read_lstm(c, 1, features, 0);
  const LstmWeights bw = read_lstm(c, 18, features, 0);
  const auto* o = options_of<fb::BidirectionalSequenceLSTMOptions>(c);
  if (!o) c.invalid("BIDIRECTIONAL_SEQUENCE_LSTM without options");
  const LstmOptions opt = lstm_options(c, static_cast<int>(o->fused_activation_function()),
                                       o->cell_clip(), o->proj_clip());
  const Sequence s = sequence_of(c, x, o->time_major());
  const bool merge = o->merge_outputs();
  if (op.outputs.size() != (merge ? 1u : 2u))
    c.invalid(std::string("BIDIRECTIONAL_SEQUENCE_LSTM needs ") +
              (merge ? "1 output" : "2 outputs") + (merge ? " with" : " without") +
              " merge_outputs, not " + std::to_string(op.outputs.size()));
  if (merge) {
    check_output(c, c.output(0), s, fw.outputs + bw.outputs);
  } else {
    check_output(c, c.output(0), s, fw.outputs);
    check_output(c, c.output(1), s, bw.outputs);
  }
  const std::string xs = c.float_value(x, Layout::kNative);
  const std::string name = c.output(0).name;
  const std::vector<std::string> forward = unroll_lstm(
      c, fw, opt, xs, s, initial_state(c, c.input(35), s, fw.outputs, "forward output state"),
      initial_state(c, c.input(36), s, fw.units, "forward cell state"), false, name + "/fw");
  const std::vector<std::string> backward = unroll_lstm(
      c, bw, opt, xs, s, initial_state(c, c.input(37), s, bw.outputs, "backward output state"),
      initial_state(c, c.input(38), s, bw.units, "backward cell state"), true, name + "/bw");
  if (!merge) {
    stack_steps(c, forward, s, c.output(0));
    stack_steps(c, backward, s, c.output(1));
    return;
  }
  std::vector<std::string> merged;
  for (int64_t t = 0; t < s.steps; ++t) {
    merged.push_back(c.fresh(name + "/merged"));
    c.emit("Concat", {forward[t], backward[t]}, {merged.back()}, {Attr::Int("axis", 1)});
  }
  stack_steps(c, merged, s, c.output(0));
}

// ---- RNN -------------------------------------------------------------------------------------

void convert_rnn(Converter& c) {
  if (c.op().inputs.size() != 5)
    c.invalid(
        "UNIDIRECTIONAL_SEQUENCE_RNN needs 5 inputs (input, weights, recurrent weights, "
        "bias, hidden state), not " +
        std::to_string(c.op().inputs.size()));
  const TensorView& x = c.input(0);
  const int64_t features = input_features(c, x);
  const TensorView& w_t = c.input(1);
  if (w_t.rank() != 2 || w_t.shape[0] < 1)
    c.invalid("the weights must have shape [units, features]");
  const int64_t units = w_t.shape[0];
  const std::vector<float> w = weight_data(c, w_t, {units, features}, "input weights");
  const std::vector<float> r = weight_data(c, c.input(2), {units, units}, "recurrent weights");
  const std::vector<float> b = weight_data(c, c.input(3), {units}, "bias");
  const auto* o = options_of<fb::SequenceRNNOptions>(c);
  if (!o) c.invalid("UNIDIRECTIONAL_SEQUENCE_RNN without options");
  const int activation = checked_activation(c, static_cast<int>(o->fused_activation_function()));
  const Sequence s = sequence_of(c, x, o->time_major());
  const TensorView& y = c.output();
  check_output(c, y, s, units);
  const std::string h0 = initial_state(c, c.input(4), s, units, "hidden state");
  const std::string xs = c.float_value(x, Layout::kNative);
  if (activation == 4) {
    std::vector<float> bd = b;
    bd.resize(2 * units, 0.f);
    const std::string initial = c.fresh(y.name + "/initial");
    c.emit("Unsqueeze", {h0, c.constant_i64("direction_axis", {s.time_axis == 0 ? 0 : 1})},
           {initial});
    const std::string full = c.fresh(y.name + "/rnn");
    c.emit("RNN",
           {xs, c.constant_f32(y.name + "/W", w, {1, units, s.features}),
            c.constant_f32(y.name + "/R", r, {1, units, units}),
            c.constant_f32(y.name + "/B", bd, {1, 2 * units}), "", initial},
           {full},
           {Attr::Int("hidden_size", units), Attr::Int("layout", s.time_axis == 0 ? 0 : 1)});
    c.emit("Squeeze", {full, c.constant_i64("direction_axis", {s.time_axis == 0 ? 1 : 2})},
           {c.define(y, Layout::kNative)});
    return;
  }
  const std::string projected =
      binary(c, "Add",
             binary(c, "MatMul", xs, stacked_transposed(c, {w}, units, s.features, y.name + "/W"),
                    y.name + "/xw"),
             c.constant_f32(y.name + "/B", b), y.name + "/xw_b");
  const std::string recurrent = stacked_transposed(c, {r}, units, units, y.name + "/R");
  std::string h = h0;
  std::vector<std::string> steps;
  for (int64_t t = 0; t < s.steps; ++t) {
    const std::string base = y.name + "/t" + std::to_string(t);
    const std::string xt = c.fresh(base + "/xw");
    c.emit("Gather", {projected, c.constant_i64("step", {t}, {})}, {xt},
           {Attr::Int("axis", s.time_axis)});
    const std::string pre =
        binary(c, "Add", xt, binary(c, "MatMul", h, recurrent, base + "/hr"), base + "/pre");
    h = activate(c, pre, activation, base + "/h");
    steps.push_back(h);
  }
  stack_steps(c, steps, s, y);
}

}  // namespace

bool convert_recurrent(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kUnidirectionalSequenceLstm:
      convert_lstm(c);
      return true;
    case BuiltinOp::kBidirectionalSequenceLstm:
      convert_bidirectional_lstm(c);
      return true;
    case BuiltinOp::kUnidirectionalSequenceRnn:
      convert_rnn(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
