// tflite.custom::MaxUnpooling2D (MediaPipe): puts each input value back where
// MaxPoolingWithArgmax2D found it, zeros elsewhere; inputs values and float32 indices (the
// window position y * filter_w + x, truncated like MediaPipe's int conversion), options
// TfLitePoolParams. MediaPipe writes wherever an index points; here an index outside its window
// or a position outside the output is an error naming the element, never a stray write.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>

#include "tflite_mobile.hpp"

namespace loom::tflite_mobile {

using sdk::fail;

PoolGeometry max_unpool_geometry(const PoolOptions& o, const Shape4& input) {
  std::optional<int64_t> h = sdk::checked_mul(input.h, o.filter_h);
  std::optional<int64_t> w = sdk::checked_mul(input.w, o.filter_w);
  if (!h || !w) fail(LOOM_ERROR_INVALID_ARGUMENT, "the output extent overflows");
  PoolGeometry g;
  g.output = {input.n, *h, *w, input.c};
  g.output.count();
  // TFLite's ComputePadding with the roles of input and output swapped, as MediaPipe calls it.
  g.pad_top = std::max<int64_t>(0, ((input.h - 1) * o.stride_h + o.filter_h - *h) / 2);
  g.pad_left = std::max<int64_t>(0, ((input.w - 1) * o.stride_w + o.filter_w - *w) / 2);
  return g;
}

void max_unpooling(const PoolOptions& o, const Shape4& in, const float* x, const float* indices,
                   float* y, const ParallelFor& parallel) {
  const PoolGeometry g = max_unpool_geometry(o, in);
  const Shape4 out = g.output;
  const int64_t total = out.count();
  if (total > 0) std::memset(y, 0, static_cast<size_t>(total) * sizeof(float));
  const double window = static_cast<double>(o.filter_h) * static_cast<double>(o.filter_w);
  // One task per (batch, channel) plane: planes never write to each other's elements, and
  // within a plane the writes keep MediaPipe's row-major order (a later duplicate wins).
  // The smallest bad element's flat input index is kept, so the error names the same element
  // whatever the thread schedule.
  const int64_t none = in.count();
  std::atomic<int64_t> first_bad{none};
  parallel(static_cast<size_t>(in.n * in.c), [&](size_t begin, size_t end) {
    for (auto plane = static_cast<int64_t>(begin); plane < static_cast<int64_t>(end); ++plane) {
      const int64_t b = plane / in.c, c = plane % in.c;
      for (int64_t iy = 0; iy < in.h; ++iy)
        for (int64_t ix = 0; ix < in.w; ++ix) {
          const int64_t at = ((b * in.h + iy) * in.w + ix) * in.c + c;
          const float f = indices[at];
          bool ok = std::isfinite(f) && f >= 0.f && static_cast<double>(f) < window;
          int64_t oy = 0, ox = 0;
          if (ok) {
            const auto idx = static_cast<int64_t>(f);
            oy = iy * o.stride_h - g.pad_top + idx / o.filter_w;
            ox = ix * o.stride_w - g.pad_left + idx % o.filter_w;
            ok = oy >= 0 && oy < out.h && ox >= 0 && ox < out.w;
          }
          if (!ok) {
            int64_t seen = first_bad.load();
            while (at < seen && !first_bad.compare_exchange_weak(seen, at)) {
            }
            continue;
          }
          y[((b * out.h + oy) * out.w + ox) * out.c + c] = x[at];
        }
    }
  });
  const int64_t bad = first_bad.load();
  if (bad < none) {
    const int64_t c = bad % in.c, ix = bad / in.c % in.w, iy = bad / in.c / in.w % in.h,
                  b = bad / in.c / in.w / in.h;
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "index " + std::to_string(indices[bad]) + " at [" + std::to_string(b) + ", " +
             std::to_string(iy) + ", " + std::to_string(ix) + ", " + std::to_string(c) +
             "] is outside its " + std::to_string(o.filter_h) + "x" + std::to_string(o.filter_w) +
             " window or puts the value outside the output " + out.text());
  }
}

namespace {

loom_status_t* infer(void*, const loom_node_t* node, const loom_value_info_t* const* inputs,
                     size_t num_outputs, loom_inferred_t* outputs) {
  return sdk::guard([&] {
    if (node->num_inputs != 2)
      fail(LOOM_ERROR_INVALID_MODEL,
           "takes 2 inputs (values, indices), not " + std::to_string(node->num_inputs));
    check_attribute_names(*node);
    const PoolOptions o = parse_pool_options(options_bytes(*node));
    check_float_info(inputs[0], "values");
    check_float_info(inputs[1], "indices");
    std::optional<Shape4> in = known_shape4(inputs[0], "values");
    std::optional<Shape4> idx = known_shape4(inputs[1], "indices");
    if (in && idx && !(*in == *idx))
      fail(LOOM_ERROR_INVALID_MODEL,
           "indices " + idx->text() + " must have the shape of values " + in->text());
    std::optional<Shape4> out;
    if (in) {
      try {
        out = max_unpool_geometry(o, *in).output;
      } catch (const sdk::Error& e) {
        fail(LOOM_ERROR_INVALID_MODEL, e.what());
      }
    }
    if (num_outputs >= 1) set_inferred(outputs[0], out);
  });
}

const loom_op_schema_t kSchema = {
    sizeof(loom_op_schema_t), kDomain, "MaxUnpooling2D", 1, 2, 2, 1, 1, infer, nullptr,
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
    const loom_tensor_t& x = float_input(api, ctx, 0, "values");
    const loom_tensor_t& i = float_input(api, ctx, 1, "indices");
    const Shape4 in = shape4(x.rank, x.dims, "values");
    const Shape4 is = shape4(i.rank, i.dims, "indices");
    if (!(in == is))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "indices " + is.text() + " must have the shape of values " + in.text());
    const PoolGeometry g = max_unpool_geometry(o, in);
    float* y = float_output(api, ctx, 0, g.output);
    max_unpooling(o, in, static_cast<const float*>(x.data), static_cast<const float*>(i.data), y,
                  context_parallel(api, ctx));
  });
}

const loom_kernel_t kKernel = {
    sizeof(loom_kernel_t), "cpu", kDomain, "MaxUnpooling2D", 1, create, compute, destroy, nullptr,
};

}  // namespace

void register_max_unpooling(const loom_host_api_t* host, loom_registrar_t* registrar) {
  sdk::check(host->register_op_schema(registrar, &kSchema));
  sdk::check(host->register_kernel(registrar, &kKernel));
}

}  // namespace loom::tflite_mobile
