// tflite.custom::MaxPoolingWithArgmax2D (MediaPipe): max pooling that also returns where each
// maximum was, options TfLitePoolParams. Output 1 is float32, like MediaPipe's: the maximum's
// position inside its window (y * filter_w + x) plus 0.1, which MaxUnpooling2D truncates back.
#include <algorithm>
#include <limits>
#include <optional>

#include "tflite_mobile.hpp"

namespace loom::tflite_mobile {

using sdk::fail;

namespace {

// TFLite's padding for a windowed output size (dilation 1), never negative.
int64_t padding_for(int64_t stride, int64_t in, int64_t filter, int64_t out) {
  return std::max<int64_t>(0, ((out - 1) * stride + filter - in) / 2);
}

void activation_range(int32_t activation, float* lo, float* hi) {
  *lo = std::numeric_limits<float>::lowest();
  *hi = std::numeric_limits<float>::max();
  if (activation == 1) *lo = 0.f;
  if (activation == 2) *lo = -1.f, *hi = 1.f;
  if (activation == 3) *lo = 0.f, *hi = 6.f;
}

}  // namespace

PoolGeometry max_pool_geometry(const PoolOptions& o, const Shape4& input) {
  auto extent = [&](int64_t in, int64_t filter, int64_t stride, const char* axis) {
    const int64_t out =
        o.padding == Padding::kSame ? (in + stride - 1) / stride : (in - filter + stride) / stride;
    if (o.padding == Padding::kValid && in < filter)
      fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("VALID pooling window of ") +
                                            std::to_string(filter) + " is larger than the " + axis +
                                            " extent " + std::to_string(in));
    return out;
  };
  PoolGeometry g;
  g.output = {input.n, extent(input.h, o.filter_h, o.stride_h, "height"),
              extent(input.w, o.filter_w, o.stride_w, "width"), input.c};
  g.pad_top = padding_for(o.stride_h, input.h, o.filter_h, g.output.h);
  g.pad_left = padding_for(o.stride_w, input.w, o.filter_w, g.output.w);
  return g;
}

void max_pool_argmax(const PoolOptions& o, const Shape4& in, const float* x, float* values,
                     float* indices, const ParallelFor& parallel) {
  const PoolGeometry g = max_pool_geometry(o, in);
  const Shape4 out = g.output;
  float lo, hi;
  activation_range(o.activation, &lo, &hi);
  parallel(static_cast<size_t>(out.n * out.h), [&](size_t begin, size_t end) {
    for (auto row = static_cast<int64_t>(begin); row < static_cast<int64_t>(end); ++row) {
      const int64_t b = row / out.h, oy = row % out.h;
      const int64_t y0 = oy * o.stride_h - g.pad_top;
      const int64_t fy_lo = std::max<int64_t>(0, -y0);
      const int64_t fy_hi = std::min<int64_t>(o.filter_h, in.h - y0);
      for (int64_t ox = 0; ox < out.w; ++ox) {
        const int64_t x0 = ox * o.stride_w - g.pad_left;
        const int64_t fx_lo = std::max<int64_t>(0, -x0);
        const int64_t fx_hi = std::min<int64_t>(o.filter_w, in.w - x0);
        const int64_t dst = ((b * out.h + oy) * out.w + ox) * out.c;
        for (int64_t c = 0; c < in.c; ++c) {
          float best = std::numeric_limits<float>::lowest();
          int64_t best_y = 0, best_x = 0;
          for (int64_t fy = fy_lo; fy < fy_hi; ++fy)
            for (int64_t fx = fx_lo; fx < fx_hi; ++fx) {
              const float v = x[((b * in.h + y0 + fy) * in.w + x0 + fx) * in.c + c];
              if (v > best) best = v, best_y = fy, best_x = fx;
            }
          values[dst + c] = std::min(std::max(best, lo), hi);
          indices[dst + c] = static_cast<float>(best_y * o.filter_w + best_x) + 0.1f;
        }
      }
    }
  });
}

namespace {

loom_status_t* infer(void*, const loom_node_t* node, const loom_value_info_t* const* inputs,
                     size_t num_outputs, loom_inferred_t* outputs) {
  return sdk::guard([&] {
    if (node->num_inputs != 1)
      fail(LOOM_ERROR_INVALID_MODEL, "takes 1 input, not " + std::to_string(node->num_inputs));
    check_attribute_names(*node);
    const PoolOptions o = parse_pool_options(options_bytes(*node));
    check_float_info(inputs[0], "input");
    std::optional<Shape4> in = known_shape4(inputs[0], "input");
    std::optional<Shape4> out;
    if (in) {
      try {
        out = max_pool_geometry(o, *in).output;
      } catch (const sdk::Error& e) {
        fail(LOOM_ERROR_INVALID_MODEL, e.what());
      }
    }
    for (size_t i = 0; i < num_outputs && i < 2; ++i) set_inferred(outputs[i], out);
  });
}

const loom_op_schema_t kSchema = {
    sizeof(loom_op_schema_t), kDomain, "MaxPoolingWithArgmax2D", 1, 1, 1, 2, 2, infer, nullptr,
};

loom_status_t* create(void*, const loom_graph_t*, const loom_node_t* node, void** state) {
  return sdk::guard([&] {
    check_attribute_names(*node);
    *state = new PoolOptions(parse_pool_options(options_bytes(*node)));
  });
}

void destroy(void* state) {
  delete static_cast<PoolOptions*>(state);
}

loom_status_t* compute(void* state, const loom_node_t*, const loom_kernel_context_api_t* api,
                       loom_kernel_context_t* ctx) {
  return sdk::guard([&] {
    const PoolOptions& o = *static_cast<const PoolOptions*>(state);
    const loom_tensor_t& x = float_input(api, ctx, 0, "input");
    const Shape4 in = shape4(x.rank, x.dims, "input");
    const PoolGeometry g = max_pool_geometry(o, in);
    float* values = float_output(api, ctx, 0, g.output);
    float* indices = float_output(api, ctx, 1, g.output);
    max_pool_argmax(o, in, static_cast<const float*>(x.data), values, indices,
                    context_parallel(api, ctx));
  });
}

const loom_kernel_t kKernel = {
    sizeof(loom_kernel_t),
    "cpu",
    kDomain,
    "MaxPoolingWithArgmax2D",
    1,
    create,
    compute,
    destroy,
    nullptr,
};

}  // namespace

void register_max_pool_argmax(const loom_host_api_t* host, loom_registrar_t* registrar) {
  sdk::check(host->register_op_schema(registrar, &kSchema));
  sdk::check(host->register_kernel(registrar, &kKernel));
}

}  // namespace loom::tflite_mobile
