// tflite.custom::Convolution2DTransposeBias (MediaPipe): a transposed convolution with a bias,
// weights [O, KH, KW, I], options TfLiteTransposeConvParams.
//
// MediaPipe scatters every input pixel into the output; here each output pixel gathers the
// input pixels that reach it, so rows can be computed in parallel without write conflicts.
// Visiting the contributions in (input y, input x, input channel) order adds them in the same
// order as MediaPipe's scatter.
#include <optional>

#include "tflite_mobile.hpp"

namespace loom::tflite_mobile {

using sdk::fail;

namespace {

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

ConvGeometry transpose_conv_geometry(const ConvOptions& o, const Shape4& input,
                                     const Shape4& weights) {
  if (input.c != weights.c)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input has " + std::to_string(input.c) +
                                          " channels but the weights " + weights.text() +
                                          " expect " + std::to_string(weights.c));
  if (weights.h < 1 || weights.w < 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "weights " + weights.text() + " have an empty kernel");
  if (input.h < 1 || input.w < 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input " + input.text() + " has an empty image");
  int64_t pad_h = 0, pad_w = 0;
  if (o.padding == Padding::kSame) {
    pad_h = std::max<int64_t>(0, weights.h - (input.h - 1) % o.stride_h - 1);
    pad_w = std::max<int64_t>(0, weights.w - (input.w - 1) % o.stride_w - 1);
  }
  auto extent = [](int64_t in, int64_t stride, int64_t k, int64_t pad) {
    std::optional<int64_t> s = sdk::checked_mul(stride, in - 1);
    std::optional<int64_t> e = s ? sdk::checked_add(*s, k - pad) : std::nullopt;
    if (!e) fail(LOOM_ERROR_INVALID_ARGUMENT, "the output extent overflows");
    return *e;
  };
  ConvGeometry g;
  g.output = {input.n, extent(input.h, o.stride_h, weights.h, pad_h),
              extent(input.w, o.stride_w, weights.w, pad_w), weights.n};
  g.output.count();
  g.pad_top = pad_h / 2;
  g.pad_left = pad_w / 2;
  return g;
}

void transpose_conv_bias(const ConvOptions& o, const Shape4& in, const float* x, const Shape4& ws,
                         const float* w, const float* bias, float* y, const ParallelFor& parallel) {
  const ConvGeometry g = transpose_conv_geometry(o, in, ws);
  const Shape4 out = g.output;
  const int64_t rows = out.n * out.h;
  parallel(static_cast<size_t>(rows), [&](size_t begin, size_t end) {
    for (auto row = static_cast<int64_t>(begin); row < static_cast<int64_t>(end); ++row) {
      const int64_t b = row / out.h, oy = row % out.h;
      // Input rows iy with ky = oy + pad_top - iy * stride_h in [0, KH).
      const int64_t ty = oy + g.pad_top;
      const int64_t iy_lo = std::max<int64_t>(0, floor_div(ty - ws.h, o.stride_h) + 1);
      const int64_t iy_hi = std::min<int64_t>(in.h - 1, floor_div(ty, o.stride_h));
      for (int64_t ox = 0; ox < out.w; ++ox) {
        const int64_t tx = ox + g.pad_left;
        const int64_t ix_lo = std::max<int64_t>(0, floor_div(tx - ws.w, o.stride_w) + 1);
        const int64_t ix_hi = std::min<int64_t>(in.w - 1, floor_div(tx, o.stride_w));
        float* dst = y + ((b * out.h + oy) * out.w + ox) * out.c;
        for (int64_t oc = 0; oc < out.c; ++oc) {
          float acc = bias[oc];
          for (int64_t iy = iy_lo; iy <= iy_hi; ++iy) {
            const int64_t ky = ty - iy * o.stride_h;
            for (int64_t ix = ix_lo; ix <= ix_hi; ++ix) {
              const int64_t kx = tx - ix * o.stride_w;
              const float* src = x + ((b * in.h + iy) * in.w + ix) * in.c;
              const float* k = w + ((oc * ws.h + ky) * ws.w + kx) * ws.c;
              for (int64_t ic = 0; ic < in.c; ++ic) acc += src[ic] * k[ic];
            }
          }
          dst[oc] = acc;
        }
      }
    }
  });
}

namespace {

loom_status_t* infer(void*, const loom_node_t* node, const loom_value_info_t* const* inputs,
                     size_t num_outputs, loom_inferred_t* outputs) {
  return sdk::guard([&] {
    if (node->num_inputs != 3)
      fail(LOOM_ERROR_INVALID_MODEL,
           "takes 3 inputs (input, weights, bias), not " + std::to_string(node->num_inputs));
    check_attribute_names(*node);
    const ConvOptions o = parse_conv_options(options_bytes(*node));
    check_float_info(inputs[0], "input");
    check_float_info(inputs[1], "weights");
    check_float_info(inputs[2], "bias");
    std::optional<Shape4> in = known_shape4(inputs[0], "input");
    std::optional<Shape4> ws = known_shape4(inputs[1], "weights");
    if (inputs[2]->rank >= 0 && inputs[2]->rank != 1)
      fail(LOOM_ERROR_INVALID_MODEL,
           "bias must have rank 1, not " + std::to_string(inputs[2]->rank));
    if (ws && inputs[2]->rank == 1 && inputs[2]->dims[0] >= 0 && inputs[2]->dims[0] != ws->n)
      fail(LOOM_ERROR_INVALID_MODEL, "bias has " + std::to_string(inputs[2]->dims[0]) +
                                         " entries but the weights " + ws->text() + " have " +
                                         std::to_string(ws->n) + " output channels");
    std::optional<Shape4> out;
    if (in && ws) {
      try {
        out = transpose_conv_geometry(o, *in, *ws).output;
      } catch (const sdk::Error& e) {
        fail(LOOM_ERROR_INVALID_MODEL, e.what());
      }
    }
    if (num_outputs >= 1) set_inferred(outputs[0], out);
  });
}

const loom_op_schema_t kSchema = {
    sizeof(loom_op_schema_t), kDomain, "Convolution2DTransposeBias", 1, 3, 3, 1, 1, infer, nullptr,
};

loom_status_t* create(void*, const loom_graph_t*, const loom_node_t* node, void** state) {
  return sdk::guard([&] {
    check_attribute_names(*node);
    *state = new ConvOptions(parse_conv_options(options_bytes(*node)));
  });
}

void destroy(void* state) {
  delete static_cast<ConvOptions*>(state);
}

loom_status_t* compute(void* state, const loom_node_t*, const loom_kernel_context_api_t* api,
                       loom_kernel_context_t* ctx) {
  return sdk::guard([&] {
    const ConvOptions& o = *static_cast<const ConvOptions*>(state);
    const loom_tensor_t& x = float_input(api, ctx, 0, "input");
    const loom_tensor_t& w = float_input(api, ctx, 1, "weights");
    const loom_tensor_t& b = float_input(api, ctx, 2, "bias");
    const Shape4 in = shape4(x.rank, x.dims, "input");
    const Shape4 ws = shape4(w.rank, w.dims, "weights");
    if (b.rank != 1 || b.dims[0] != ws.n)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "bias must have shape [" + std::to_string(ws.n) +
                                            "] (the weights' output channels), not " +
                                            sdk::shape_text(sdk::shape_of(b)));
    const ConvGeometry g = transpose_conv_geometry(o, in, ws);
    float* y = float_output(api, ctx, 0, g.output);
    transpose_conv_bias(o, in, static_cast<const float*>(x.data), ws,
                        static_cast<const float*>(w.data), static_cast<const float*>(b.data), y,
                        context_parallel(api, ctx));
  });
}

const loom_kernel_t kKernel = {
    sizeof(loom_kernel_t),
    "cpu",
    kDomain,
    "Convolution2DTransposeBias",
    1,
    create,
    compute,
    destroy,
    nullptr,
};

}  // namespace

void register_transpose_conv_bias(const loom_host_api_t* host, loom_registrar_t* registrar) {
  sdk::check(host->register_op_schema(registrar, &kSchema));
  sdk::check(host->register_kernel(registrar, &kKernel));
}

}  // namespace loom::tflite_mobile
