// Options parsing, shapes and the kernel-context glue shared by the three operators.
#include <algorithm>
#include <cstring>
#include <optional>

#include "tflite_mobile.hpp"

namespace loom::tflite_mobile {

using sdk::fail;

std::vector<uint8_t> options_bytes(const loom_node_t& node) {
  std::optional<std::span<const int64_t>> ints = sdk::Attributes(node).get_ints(kOptionsAttribute);
  if (!ints)
    fail(LOOM_ERROR_INVALID_MODEL,
         "attribute custom_options (the operator's option bytes) is missing");
  std::vector<uint8_t> bytes;
  bytes.reserve(ints->size());
  for (int64_t v : *ints) {
    if (v < 0 || v > 255)
      fail(LOOM_ERROR_INVALID_MODEL,
           "attribute custom_options holds " + std::to_string(v) + ", not a byte (0..255)");
    bytes.push_back(static_cast<uint8_t>(v));
  }
  return bytes;
}

void check_attribute_names(const loom_node_t& node) {
  for (size_t i = 0; i < node.num_attributes; ++i) {
    const std::string name = node.attributes[i]->name ? node.attributes[i]->name : "";
    if (name != kOptionsAttribute)
      fail(LOOM_ERROR_INVALID_MODEL, "unknown attribute '" + name + "' (" +
                                         std::string(node.op_type) + " reads only custom_options)");
  }
}

namespace {

// Field `index` of a struct of int32 fields, little-endian as TFLite writes it on every
// platform it supports.
int32_t field(std::span<const uint8_t> bytes, size_t index) {
  uint32_t u = 0;
  for (int b = 0; b < 4; ++b) u |= static_cast<uint32_t>(bytes[index * 4 + b]) << (8 * b);
  int32_t v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

void need_size(std::span<const uint8_t> bytes, size_t fields, const char* what) {
  if (bytes.size() < fields * 4)
    fail(LOOM_ERROR_INVALID_MODEL, "custom_options has " + std::to_string(bytes.size()) +
                                       " bytes, too few for " + what + " (" +
                                       std::to_string(fields * 4) + " bytes needed)");
}

Padding padding_of(int32_t v) {
  if (v != 1 && v != 2)
    fail(LOOM_ERROR_INVALID_MODEL,
         "custom_options: padding " + std::to_string(v) + " is not SAME (1) or VALID (2)");
  return static_cast<Padding>(v);
}

int64_t positive(int32_t v, const char* name) {
  if (v < 1)
    fail(LOOM_ERROR_INVALID_MODEL,
         std::string("custom_options: ") + name + " " + std::to_string(v) + " must be >= 1");
  return v;
}

}  // namespace

ConvOptions parse_conv_options(std::span<const uint8_t> bytes) {
  need_size(bytes, 3, "TfLiteTransposeConvParams");
  ConvOptions o;
  o.padding = padding_of(field(bytes, 0));
  o.stride_w = positive(field(bytes, 1), "stride_width");
  o.stride_h = positive(field(bytes, 2), "stride_height");
  return o;
}

PoolOptions parse_pool_options(std::span<const uint8_t> bytes) {
  need_size(bytes, 6, "TfLitePoolParams");
  PoolOptions o;
  o.padding = padding_of(field(bytes, 0));
  o.stride_w = positive(field(bytes, 1), "stride_width");
  o.stride_h = positive(field(bytes, 2), "stride_height");
  o.filter_w = positive(field(bytes, 3), "filter_width");
  o.filter_h = positive(field(bytes, 4), "filter_height");
  o.activation = field(bytes, 5);
  // MediaPipe's kernels clamp for these three and silently ignore the others (tanh, sigmoid,
  // sign bit): refused rather than computed differently from what the model asks.
  if (o.activation < 0 || o.activation > 3)
    fail(LOOM_ERROR_INVALID_MODEL, "custom_options: fused activation " +
                                       std::to_string(o.activation) +
                                       " is not NONE, RELU, RELU_N1_TO_1 or RELU6");
  return o;
}

int64_t Shape4::count() const {
  const int64_t dims[4] = {n, h, w, c};
  return sdk::element_count(std::span<const int64_t>(dims, 4));
}

std::string Shape4::text() const {
  const int64_t dims[4] = {n, h, w, c};
  return sdk::shape_text(std::span<const int64_t>(dims, 4));
}

Shape4 shape4(int32_t rank, const int64_t* dims, const std::string& what) {
  if (rank != 4)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         what + " must have rank 4 (NHWC), not " + std::to_string(rank));
  for (int i = 0; i < 4; ++i)
    if (dims[i] < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has an unknown extent");
  Shape4 s{dims[0], dims[1], dims[2], dims[3]};
  s.count();  // throws on overflow
  return s;
}

void serial_for(size_t n, const std::function<void(size_t, size_t)>& body) {
  if (n) body(0, n);
}

ParallelFor context_parallel(const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx) {
  return [api, ctx](size_t n, const std::function<void(size_t, size_t)>& body) {
    if (!n) return;
    if (!api->parallel_for) return body(0, n);
    api->parallel_for(
        ctx, n,
        [](void* user, size_t begin, size_t end) {
          (*static_cast<const std::function<void(size_t, size_t)>*>(user))(begin, end);
        },
        const_cast<std::function<void(size_t, size_t)>*>(&body));
  };
}

const loom_tensor_t& float_input(const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx,
                                 size_t index, const char* what) {
  if (api->num_inputs(ctx) <= index)
    fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("input ") + what + " is missing");
  const loom_tensor_t* t = api->input(ctx, index);
  if (!t) fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("input ") + what + " is missing");
  if (t->dtype != LOOM_DTYPE_FLOAT32)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         std::string("input ") + what + " must be float32, not " + sdk::dtype_name(t->dtype));
  if (!t->data && t->byte_size)
    fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("input ") + what + " is not in host memory");
  return *t;
}

float* float_output(const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx, size_t index,
                    const Shape4& shape) {
  if (api->num_outputs(ctx) <= index)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "output " + std::to_string(index) + " is missing");
  const int64_t dims[4] = {shape.n, shape.h, shape.w, shape.c};
  loom_tensor_t* t = nullptr;
  sdk::check(api->allocate_output(ctx, index, LOOM_DTYPE_FLOAT32, 4, dims, &t));
  if (!t || (!t->data && shape.count() > 0))
    fail(LOOM_ERROR_INTERNAL, "output " + std::to_string(index) + " has no host memory");
  return static_cast<float*>(t->data);
}

void check_float_info(const loom_value_info_t* v, const char* what) {
  if (!v) fail(LOOM_ERROR_INVALID_MODEL, std::string("input ") + what + " is missing");
  if (v->dtype != LOOM_DTYPE_UNDEFINED && v->dtype != LOOM_DTYPE_FLOAT32)
    fail(LOOM_ERROR_INVALID_MODEL,
         std::string("input ") + what + " must be float32, not " + sdk::dtype_name(v->dtype));
}

std::optional<Shape4> known_shape4(const loom_value_info_t* v, const char* what) {
  if (v->rank < 0) return std::nullopt;
  if (v->rank != 4)
    fail(LOOM_ERROR_INVALID_MODEL,
         std::string("input ") + what + " must have rank 4 (NHWC), not " + std::to_string(v->rank));
  for (int i = 0; i < 4; ++i)
    if (v->dims[i] < 0) return std::nullopt;
  return Shape4{v->dims[0], v->dims[1], v->dims[2], v->dims[3]};
}

void set_inferred(loom_inferred_t& out, const std::optional<Shape4>& shape) {
  out.dtype = LOOM_DTYPE_FLOAT32;
  out.rank = 4;
  out.dims[0] = shape ? shape->n : -1;
  out.dims[1] = shape ? shape->h : -1;
  out.dims[2] = shape ? shape->w : -1;
  out.dims[3] = shape ? shape->c : -1;
}

}  // namespace loom::tflite_mobile
