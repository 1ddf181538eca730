// Normalizations: BatchNormalization with its running statistics (when no Conv absorbed it),
// LayerNormalization over the trailing axes (also what rewrite_patterns makes of the
// decomposed ReduceMean/Sub/Pow/Sqrt/Div pattern), RMSNormalization, Softmax and LogSoftmax.
#include <cmath>

#include "builder.hpp"
#include "softmax_rows.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using flags = dnnl::normalization_flags;

namespace {

int64_t product(const std::vector<int64_t>& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= d[i];
  return p;
}

void emit_batch_norm(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  int x = n.inputs[0], y = n.outputs[0];
  int64_t c = g.value(x).dims[1];
  int src = b.slot_of(x);
  dnnl::memory::desc md = b.slot_md(src);
  if (md.data_type() != b.input_type(x)) {  // the bf16 plan keeps it in f32: same layout, f32
    md.data.data_type = static_cast<dnnl_data_type_t>(b.input_type(x));
    src = b.as(x, md);
  }
  dnnl::batch_normalization_forward::desc d(
      dnnl::prop_kind::forward_inference, md, attrs.get_float("epsilon", 1e-5f),
      flags::use_global_stats | flags::use_scale | flags::use_shift);
  dnnl::batch_normalization_forward::primitive_desc pd(d, b.engine());
  dnnl::memory::desc vec = plain_md({c}, dt::f32);
  int dst = b.define(y, pd.dst_desc());
  b.add_step(dnnl::batch_normalization_forward(pd),
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_SCALE, b.constant_slot(n.inputs[1], vec)},
              {DNNL_ARG_SHIFT, b.constant_slot(n.inputs[2], vec)},
              {DNNL_ARG_MEAN, b.constant_slot(n.inputs[3], vec)},
              {DNNL_ARG_VARIANCE, b.constant_slot(n.inputs[4], vec)},
              {DNNL_ARG_DST, dst}},
             "BatchNormalization " + std::string(n.view->name));
}

void emit_layer_norm(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  int x = n.inputs[0], scale = n.inputs[1], shift = g.in(n, 2), y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  int64_t axis = sdk::normalize_axis(attrs.get_int("axis", -1), static_cast<int64_t>(xd.size()),
                                     "LayerNormalization");
  int64_t outer = product(xd, 0, static_cast<size_t>(axis));
  int64_t inner = product(xd, static_cast<size_t>(axis), xd.size());
  dt type = b.input_type(x);
  int plain = b.as_plain(x, type);
  dnnl::memory::desc md2 = plain_md({outer, inner}, type);
  int src = b.view(plain, md2);
  dnnl::memory::desc vec = plain_md({inner}, dt::f32);
  flags f = flags::use_scale | (shift >= 0 ? flags::use_shift : flags::none);
  float epsilon = n.epsilon ? *n.epsilon : attrs.get_float("epsilon", 1e-5f);
  dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md2, epsilon, f);
  dnnl::layer_normalization_forward::primitive_desc pd(d, b.engine());
  int out = b.define(y, plain_md(g.value(y).dims, type));
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, src},
                                        {DNNL_ARG_DST, b.view(out, md2)},
                                        {DNNL_ARG_SCALE, b.view(b.as_plain(scale, dt::f32), vec)}};
  if (shift >= 0) args.emplace_back(DNNL_ARG_SHIFT, b.view(b.as_plain(shift, dt::f32), vec));
  b.add_step(dnnl::layer_normalization_forward(pd), args,
             "LayerNormalization " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
}

// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale.
// oneDNN 2.6's layer normalization has no RMS mode (3.x added it), so this is the device's own
// loop, vectorized by the compiler: one pass for the sum of squares, one for the scaled output.
void rms_norm_rows(const float* x, const float* scale, bool scalar_scale, float* y, int64_t rows,
                   int64_t len, float epsilon) {
  // Split over the OpenMP team only where rows are many: a decode step's single row would pay
  // more for waking the team than the row costs.
#pragma omp parallel for schedule(static) if (rows * len >= (int64_t{1} << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * len;
    float* out = y + r * len;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < len; ++j) sum += in[j] * in[j];
    const float inv = 1.f / std::sqrt(sum / static_cast<float>(len) + epsilon);
    if (scalar_scale) {
      const float k = inv * scale[0];
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) out[j] = in[j] * k;
    } else {
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) out[j] = in[j] * inv * scale[j];
    }
  }
}

void emit_rms_norm(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  int x = n.inputs[0], scale = n.inputs[1], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const int64_t axis = sdk::normalize_axis(attrs.get_int("axis", -1),
                                           static_cast<int64_t>(xd.size()), "RMSNormalization");
  const int64_t rows = product(xd, 0, static_cast<size_t>(axis));
  const int64_t len = product(xd, static_cast<size_t>(axis), xd.size());
  const bool scalar_scale = g.value(scale).elements() == 1;
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  int out = b.define(y, plain_md(xd, dnnl::memory::data_type::f32));
  b.add_kernel_step(
      [rows, len, scalar_scale, epsilon](const std::unordered_map<int, dnnl::memory>& mem) {
        auto data = [&](int arg) { return static_cast<float*>(mem.at(arg).get_data_handle()); };
        rms_norm_rows(data(DNNL_ARG_SRC), data(DNNL_ARG_SCALE), scalar_scale, data(DNNL_ARG_DST),
                      rows, len, epsilon);
      },
      {{DNNL_ARG_SRC, b.as_plain(x, dnnl::memory::data_type::f32)},
       {DNNL_ARG_SCALE, b.as_plain(scale, dnnl::memory::data_type::f32)},
       {DNNL_ARG_DST, out}},
      "RMSNormalization " + std::string(n.view->name) + " [loom rows]", "loom rms_norm");
}

void emit_softmax(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  int64_t rank = static_cast<int64_t>(xd.size());
  bool log = n.op == "LogSoftmax";
  dt type = b.input_type(x);
  int plain = b.as_plain(x, type);
  int64_t axis;
  dnnl::memory::desc md;
  if (n.opset >= 13) {
    axis = sdk::normalize_axis(attrs.get_int("axis", -1), rank, n.op);
    md = b.slot_md(plain);
  } else {
    // Before opset 13 the input is coerced to 2D at `axis`.
    int64_t a = sdk::normalize_axis(attrs.get_int("axis", 1), rank, n.op);
    md = plain_md(
        {product(xd, 0, static_cast<size_t>(a)), product(xd, static_cast<size_t>(a), xd.size())},
        type);
    axis = 1;
  }
  int src = b.view(plain, md);
  int out = b.define(y, plain_md(g.value(y).dims, type));
  int dst = b.view(out, md);
  // Along the last (contiguous) axis in f32: the device's own row kernel, 2.5x faster than
  // oneDNN's on attention scores (softmax_rows.hpp).
  const int64_t len = md.dims()[static_cast<size_t>(axis)];
  if (type == dt::f32 && axis == static_cast<int64_t>(md.dims().size()) - 1 && len > 0 &&
      softmax_rows_available()) {
    const int64_t rows = static_cast<int64_t>(md.get_size() / sizeof(float)) / len;
    b.add_kernel_step(
        [rows, len, log](const std::unordered_map<int, dnnl::memory>& mem) {
          softmax_rows(static_cast<const float*>(mem.at(DNNL_ARG_SRC).get_data_handle()),
                       static_cast<float*>(mem.at(DNNL_ARG_DST).get_data_handle()), rows, len, log);
        },
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
        n.op + " " + std::string(n.view->name) + " [loom rows]", "loom softmax_rows");
    return;
  }
  if (log) {
    dnnl::logsoftmax_forward::desc d(dnnl::prop_kind::forward_inference, md,
                                     static_cast<int>(axis));
    dnnl::logsoftmax_forward::primitive_desc pd(d, b.engine());
    b.add_step(dnnl::logsoftmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
               "LogSoftmax " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
  } else {
    dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, md, static_cast<int>(axis));
    dnnl::softmax_forward::primitive_desc pd(d, b.engine());
    b.add_step(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
               "Softmax " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
  }
}

}  // namespace

void emit_normalization(Builder& b, int node) {
  const std::string& op = b.ir().nodes[node].op;
  if (op == "BatchNormalization") return emit_batch_norm(b, node);
  if (op == "LayerNormalization") return emit_layer_norm(b, node);
  if (op == "RMSNormalization") return emit_rms_norm(b, node);
  emit_softmax(b, node);
}

namespace {

std::string check_batch_norm(const loom_graph_t& graph, const loom_node_t& node) {
  if (has_extra_outputs(node, 1) || sdk::Attributes(node).get_int("training_mode", 0))
    return "training mode";
  for (size_t i = 1; i < 5; ++i)
    if (!is_constant(sdk::node_input(graph, node, i))) return "statistics are not constants";
  return sdk::node_input(graph, node, 0)->rank >= 2 ? "" : "rank below 2";
}

std::string check_layer_norm(const loom_graph_t&, const loom_node_t& node) {
  return has_extra_outputs(node, 1) ? "Mean/InvStdDev outputs" : "";
}

// Scale must be one value or exactly the normalized extents (leading 1s allowed): other
// broadcasts, and stash types other than float, stay with the cpu device.
std::string check_rms_norm(const loom_graph_t& graph, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  if (attrs.get_int("stash_type", LOOM_DTYPE_FLOAT32) != LOOM_DTYPE_FLOAT32)
    return "stash_type other than float";
  Info x = sdk::node_input(graph, node, 0), scale = sdk::node_input(graph, node, 1);
  if (!known_shape(x) || !known_shape(scale) || x->rank == 0) return "shape unknown";
  const int64_t axis = attrs.get_int("axis", -1);
  if (axis < -x->rank || axis >= x->rank) return "axis out of range";
  const int32_t first = static_cast<int32_t>(axis < 0 ? axis + x->rank : axis);
  if (sdk::element_count(scale->rank, scale->dims) == 1) return "";
  if (scale->rank > x->rank) return "scale of higher rank than X";
  for (int32_t d = 0; d < scale->rank; ++d) {
    const int32_t xd = x->rank - scale->rank + d;
    if (xd < first ? scale->dims[d] != 1 : scale->dims[d] != x->dims[xd])
      return "scale broadcast within the normalized axes";
  }
  return "";
}

std::string check_softmax(const loom_graph_t&, const loom_node_t&) {
  return "";
}

}  // namespace

LOOM_ONEDNN_OP("BatchNormalization", check_batch_norm, emit_normalization);
LOOM_ONEDNN_OP("LayerNormalization", check_layer_norm, emit_normalization);
LOOM_ONEDNN_OP("RMSNormalization", check_rms_norm, emit_normalization);
LOOM_ONEDNN_OP("Softmax", check_softmax, emit_normalization);
LOOM_ONEDNN_OP("LogSoftmax", check_softmax, emit_normalization);

}  // namespace loom::onednn
