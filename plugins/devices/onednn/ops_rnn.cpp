// LSTM through oneDNN's lstm_forward primitive. Recurrent models exported from PyTorch (text
// recognizers' bidirectional LSTMs, streaming voice models carrying h/c between chunks) ran
// their LSTM on the cpu device, between onednn subgraphs. The ONNX node maps onto one
// primitive: gates reordered from ONNX's (i, o, f, c) to oneDNN's (i, f, c~, o), the two bias
// halves summed, initial and final states seen as [1, D, N, H], and for bidirectional nodes
// the concatenated [T, N, 2H] result reordered into ONNX's [T, 2, N, H]. Batches of a few
// sequences run on the device's own kernel instead (lstm_cells.hpp).
#include <string>
#include <string_view>

#include "builder.hpp"
#include "ir.hpp"
#include "lstm_cells.hpp"

namespace loom::onednn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// oneDNN's gate g is ONNX's gate kOnnxGate[g].
constexpr int kOnnxGate[4] = {0, 2, 3, 1};

// Batches up to this size run on the device's own kernel (lstm_cells.hpp): a sequence or a few
// per step leave oneDNN's primitive a product too small to split over threads.
constexpr int64_t kSmallBatch = 4;

// Arg ids of the small-batch kernel step (any distinct ints: only its map reads them).
enum : int {
  kArgPre = DNNL_ARG_MULTIPLE_SRC,
  kArgH0,
  kArgC0,
  kArgY = DNNL_ARG_MULTIPLE_DST,
  kArgYh,
  kArgYc,
};

bool default_activations(const sdk::Attributes& attrs, int64_t directions) {
  auto acts = attrs.get_strings("activations");
  if (!acts) return true;
  if (acts->size() != static_cast<size_t>(3 * directions)) return false;
  for (size_t i = 0; i < acts->size(); ++i)
    if (std::string_view((*acts)[i].data, (*acts)[i].size) != (i % 3 == 0 ? "Sigmoid" : "Tanh"))
      return false;
  return true;
}

int64_t direction_count(const std::string& direction) {
  return direction == "bidirectional" ? 2 : 1;
}

}  // namespace

std::string why_lstm_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  auto in = [&](size_t i) { return sdk::node_input(graph, node, i); };
  auto constant = [](const loom_value_info_t* v) {
    return v && (v->flags & LOOM_VALUE_CONSTANT) && v->data;
  };
  const std::string direction = attrs.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return "LSTM direction '" + direction + "'";
  if (attrs.get_int("layout", 0) != 0) return "LSTM with layout 1 (batch first)";
  if (attrs.has("clip")) return "LSTM with clip";
  if (attrs.get_int("input_forget", 0) != 0) return "LSTM with input_forget";
  if (attrs.has("activation_alpha") || attrs.has("activation_beta") ||
      !default_activations(attrs, direction_count(direction)))
    return "LSTM with activations other than Sigmoid, Tanh, Tanh";
  if (in(4)) return "LSTM with sequence_lens";
  if (in(7)) return "LSTM with peepholes";
  const loom_value_info_t *x = in(0), *w = in(1), *r = in(2), *b = in(3);
  if (!constant(w) || !constant(r) || (b && !constant(b)))
    return "LSTM weights or bias that are not constants";
  if (!x || x->rank != 3 || !w || w->rank != 3 || !r || r->rank != 3)
    return "LSTM inputs of unexpected rank";
  const int64_t d = direction_count(direction), h = w->dims[1] / 4;
  if (w->dims[0] != d || w->dims[1] != 4 * h || w->dims[2] != x->dims[2] || r->dims[0] != d ||
      r->dims[1] != 4 * h || r->dims[2] != h || (b && (b->rank != 2 || b->dims[1] != 8 * h)))
    return "LSTM weights of unexpected shape";
  if (attrs.has("hidden_size") && attrs.get_int("hidden_size", 0) != h)
    return "LSTM hidden_size contradicts its weights";
  return "";
}

void emit_lstm(Builder& b, int node) {
  IrGraph& g = b.ir();
  IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  const std::string direction = attrs.get_string("direction", "forward");
  const int x = n.inputs[0], w = n.inputs[1], r = n.inputs[2], bias = g.in(n, 3);
  const int h0 = g.in(n, 5), c0 = g.in(n, 6);
  auto output = [&](size_t i) { return i < n.outputs.size() ? n.outputs[i] : -1; };
  const int y = output(0), yh = output(1), yc = output(2);
  const std::vector<int64_t>& xd = g.value(x).dims;
  const int64_t T = xd[0], N = xd[1], I = xd[2];
  const int64_t D = direction_count(direction), H = g.value(w).dims[1] / 4;
  const std::string name = n.view->name ? n.view->name : "";
  if (N <= kSmallBatch && small_lstm_available()) {
    // The input products of every step and direction with both biases, [T * N, D * 4H] in
    // ONNX's gate order, by one matmul primitive; then the recurrences (lstm_cells.hpp).
    const int64_t rows = T * N, width = D * 4 * H;
    const std::vector<float> wv = constant_floats(g, w);
    std::vector<float> wt(static_cast<size_t>(I * width)), bsum(static_cast<size_t>(width), 0.f);
    for (int64_t j = 0; j < width; ++j)
      for (int64_t i = 0; i < I; ++i)
        wt[static_cast<size_t>(i * width + j)] = wv[static_cast<size_t>(j * I + i)];
    if (bias >= 0) {
      const std::vector<float> bv = constant_floats(g, bias);
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < 4 * H; ++j)
          bsum[static_cast<size_t>(d * 4 * H + j)] = bv[static_cast<size_t>(d * 8 * H + j)] +
                                                     bv[static_cast<size_t>(d * 8 * H + 4 * H + j)];
    }
    const dnnl::memory::desc src_md({rows, I}, dt::f32, tag::ab),
        w_md({I, width}, dt::f32, tag::any), b_md({1, width}, dt::f32, tag::ab),
        pre_md({rows, width}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc mm(dnnl::matmul::desc(src_md, w_md, b_md, pre_md), b.engine());
    const int pre = b.define(-1, pre_md);
    b.add_step(dnnl::matmul(mm),
               {{DNNL_ARG_SRC, b.view(b.as_plain(x, dt::f32), src_md)},
                {DNNL_ARG_WEIGHTS, b.constant_slot(wt, {I, width}, mm.weights_desc())},
                {DNNL_ARG_BIAS, b.constant_slot(bsum, {1, width}, b_md)},
                {DNNL_ARG_DST, pre}},
               "LSTM " + name + " input products [" + mm.impl_info_str() + "]");
    auto lstm = std::make_shared<const SmallLstm>(
        make_small_lstm(T, N, H, D, direction == "reverse", constant_floats(g, r)));
    std::vector<std::pair<int, int>> args{{kArgPre, pre}};
    if (h0 >= 0) args.emplace_back(kArgH0, b.as_plain(h0, dt::f32));
    if (c0 >= 0) args.emplace_back(kArgC0, b.as_plain(c0, dt::f32));
    if (y >= 0) args.emplace_back(kArgY, b.define(y, plain_md({T, D, N, H}, dt::f32)));
    if (yh >= 0) args.emplace_back(kArgYh, b.define(yh, plain_md({D, N, H}, dt::f32)));
    if (yc >= 0) args.emplace_back(kArgYc, b.define(yc, plain_md({D, N, H}, dt::f32)));
    b.add_kernel_step(
        [lstm](const std::unordered_map<int, dnnl::memory>& mem) {
          auto data = [&](int arg) -> float* {
            auto it = mem.find(arg);
            return it == mem.end() ? nullptr : static_cast<float*>(it->second.get_data_handle());
          };
          run_small_lstm(*lstm, data(kArgPre), data(kArgH0), data(kArgC0), data(kArgY),
                         data(kArgYh), data(kArgYc));
        },
        args, "LSTM " + name + " [loom lstm]", "loom lstm");
    return;
  }

  // Weights in oneDNN's ldigo order ([1, D, in, gate, H]) and the bias in ldgo.
  const std::vector<float> wv = constant_floats(g, w), rv = constant_floats(g, r);
  const std::vector<float> bv = bias >= 0 ? constant_floats(g, bias) : std::vector<float>{};
  auto ldigo = [&](const std::vector<float>& onnx, int64_t in) {
    std::vector<float> out(static_cast<size_t>(D * in * 4 * H));
    for (int64_t dir = 0; dir < D; ++dir)
      for (int64_t i = 0; i < in; ++i)
        for (int64_t gate = 0; gate < 4; ++gate)
          for (int64_t o = 0; o < H; ++o)
            out[static_cast<size_t>(((dir * in + i) * 4 + gate) * H + o)] =
                onnx[static_cast<size_t>((dir * 4 * H + kOnnxGate[gate] * H + o) * in + i)];
    return out;
  };
  std::vector<float> bias_ldgo(static_cast<size_t>(D * 4 * H), 0.f);
  if (!bv.empty())
    for (int64_t dir = 0; dir < D; ++dir)
      for (int64_t gate = 0; gate < 4; ++gate)
        for (int64_t o = 0; o < H; ++o) {
          const size_t at = static_cast<size_t>(dir * 8 * H + kOnnxGate[gate] * H + o);
          bias_ldgo[static_cast<size_t>((dir * 4 + gate) * H + o)] = bv[at] + bv[at + 4 * H];
        }

  // oneDNN takes the initial h and c together or neither (zeros), and computes the final
  // states together: a missing initial one is a zero constant, an unread final one a scratch.
  const dnnl::memory::dims states{1, D, N, H};
  const bool initial = h0 >= 0 || c0 >= 0;
  const dnnl::memory::desc none, state_md(states, dt::f32, tag::ldnc);
  dnnl::memory::desc src_layer({T, N, I}, dt::f32, tag::tnc);
  dnnl::memory::desc src_iter = initial ? state_md : none, src_iter_c = src_iter;
  dnnl::memory::desc weights_layer({1, D, I, 4, H}, dt::f32, tag::any);
  dnnl::memory::desc weights_iter({1, D, H, 4, H}, dt::f32, tag::any);
  dnnl::memory::desc bias_md({1, D, 4, H}, dt::f32, tag::ldgo);
  dnnl::memory::desc dst_layer({T, N, D * H}, dt::f32, tag::tnc);
  dnnl::memory::desc dst_iter = state_md, dst_iter_c = state_md;
  const dnnl::rnn_direction dir = D == 2 ? dnnl::rnn_direction::bidirectional_concat
                                  : direction == "reverse"
                                      ? dnnl::rnn_direction::unidirectional_right2left
                                      : dnnl::rnn_direction::unidirectional_left2right;
  dnnl::lstm_forward::desc desc(dnnl::prop_kind::forward_inference, dir, src_layer, src_iter,
                                src_iter_c, weights_layer, weights_iter, bias_md, dst_layer,
                                dst_iter, dst_iter_c);
  dnnl::lstm_forward::primitive_desc pd(desc, b.engine());

  std::vector<std::pair<int, int>> args{
      {DNNL_ARG_SRC_LAYER, b.view(b.as_plain(x, dt::f32), src_layer)},
      {DNNL_ARG_WEIGHTS_LAYER,
       b.constant_slot(ldigo(wv, I), {1, D, I, 4, H}, pd.weights_layer_desc())},
      {DNNL_ARG_WEIGHTS_ITER,
       b.constant_slot(ldigo(rv, H), {1, D, H, 4, H}, pd.weights_iter_desc())},
      {DNNL_ARG_BIAS, b.constant_slot(bias_ldgo, {1, D, 4, H}, bias_md)}};
  auto initial_state = [&](int value) {
    if (value >= 0) return b.view(b.as_plain(value, dt::f32), state_md);
    return b.constant_slot(std::vector<float>(static_cast<size_t>(D * N * H), 0.f), {1, D, N, H},
                           state_md);
  };
  if (initial) {
    args.emplace_back(DNNL_ARG_SRC_ITER, initial_state(h0));
    args.emplace_back(DNNL_ARG_SRC_ITER_C, initial_state(c0));
  }
  // Y is [T, D, N, H]: one direction's [T, N, H] is the same bytes; two directions come
  // concatenated as [T, N, 2, H] and are reordered after the primitive.
  int y_slot = y >= 0 ? b.define(y, plain_md({T, D, N, H}, dt::f32)) : -1;
  int layer_slot = y_slot >= 0 && D == 1 ? b.view(y_slot, dst_layer) : b.define(-1, dst_layer);
  args.emplace_back(DNNL_ARG_DST_LAYER, layer_slot);
  auto final_state = [&](int value) {
    return value >= 0 ? b.view(b.define(value, plain_md({D, N, H}, dt::f32)), state_md)
                      : b.define(-1, state_md);
  };
  args.emplace_back(DNNL_ARG_DST_ITER, final_state(yh));
  args.emplace_back(DNNL_ARG_DST_ITER_C, final_state(yc));
  b.add_step(dnnl::lstm_forward(pd), args, "LSTM " + name + " [" + pd.impl_info_str() + "]");
  if (y_slot >= 0 && D == 2) {
    dnnl::memory::desc concat_view({T, D, N, H}, dt::f32,
                                   dnnl::memory::dims{N * D * H, H, D * H, 1});
    dnnl::memory::desc y_md = plain_md({T, D, N, H}, dt::f32);
    int from = b.view(layer_slot, concat_view);
    b.add_step(
        dnnl::reorder(dnnl::reorder::primitive_desc(b.engine(), concat_view, b.engine(), y_md)),
        {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, y_slot}}, "LSTM " + name + " Y");
  }
}

LOOM_ONEDNN_OP("LSTM", why_lstm_unsupported, emit_lstm);

}  // namespace loom::onednn
