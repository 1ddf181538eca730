// Kernels of the TFLite custom operators in MediaPipe's mobile models, for Loom's cpu device.
// The tflite format hands a custom operator with custom code X over as node tflite.custom::X,
// inputs and outputs in TFLite's NHWC layout, the raw custom_options bytes as the INTS
// attribute "custom_options" (docs/tflite-format.md). MediaPipe stores plain C structs
// (TfLitePoolParams, TfLiteTransposeConvParams) there; they are parsed field by field,
// little-endian int32, size and values checked.
//
// The computations are plain functions over NHWC float buffers so tests can run them against
// their own references; they throw loom::sdk::Error on bad options or indices.
#pragma once

#include <cstdint>
#include <functional>
#include <loom/plugin.hpp>
#include <span>
#include <string>

namespace loom::tflite_mobile {

inline constexpr const char* kDomain = "tflite.custom";
inline constexpr const char* kOptionsAttribute = "custom_options";

// TfLitePadding (kTfLitePaddingUnknown = 0 is refused).
enum class Padding : int32_t { kSame = 1, kValid = 2 };

// TfLiteTransposeConvParams: padding, stride_width, stride_height (int32 each; later TFLite
// versions append fields, which MediaPipe's kernel ignores).
struct ConvOptions {
  Padding padding = Padding::kValid;
  int64_t stride_w = 1, stride_h = 1;
};
// TfLitePoolParams: padding, stride_width, stride_height, filter_width, filter_height,
// activation (int32 each), then the computed padding MediaPipe fills at prepare time.
struct PoolOptions {
  Padding padding = Padding::kValid;
  int64_t stride_w = 1, stride_h = 1, filter_w = 1, filter_h = 1;
  int32_t activation = 0;  // TfLiteFusedActivation: 0 none, 1 relu, 2 relu_n1_to_1, 3 relu6
};

// The custom_options bytes of `node` (attribute required, every entry 0..255).
std::vector<uint8_t> options_bytes(const loom_node_t& node);
// Parse the structs; throw LOOM_ERROR_INVALID_MODEL naming the field.
ConvOptions parse_conv_options(std::span<const uint8_t> bytes);
PoolOptions parse_pool_options(std::span<const uint8_t> bytes);
// Refuses attributes other than custom_options (a schema cannot declare its attributes).
void check_attribute_names(const loom_node_t& node);

struct Shape4 {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t count() const;  // throws on overflow
  bool operator==(const Shape4&) const = default;
  std::string text() const;
};
// A rank-4 shape from dims (all known, >= 0), or an error naming `what`.
Shape4 shape4(int32_t rank, const int64_t* dims, const std::string& what);

// Splits [0, n) into chunks run by body(begin, end); body must not throw.
using ParallelFor = std::function<void(size_t n, const std::function<void(size_t, size_t)>& body)>;
void serial_for(size_t n, const std::function<void(size_t, size_t)>& body);

// ---- Convolution2DTransposeBias -----------------------------------------------------------
// weights [O, KH, KW, I], bias [O]. Output extent: stride * (in - 1) + k - pad, where SAME's
// total pad is max(0, k - (in - 1) % stride - 1) (its top/left half, rounded down, comes off
// the start); VALID pads nothing.
struct ConvGeometry {
  Shape4 output;
  int64_t pad_top = 0, pad_left = 0;
};
ConvGeometry transpose_conv_geometry(const ConvOptions& o, const Shape4& input,
                                     const Shape4& weights);
void transpose_conv_bias(const ConvOptions& o, const Shape4& input, const float* x,
                         const Shape4& weights, const float* w, const float* bias, float* y,
                         const ParallelFor& parallel);

// ---- MaxPoolingWithArgmax2D ---------------------------------------------------------------
// Outputs: the window maxima (fused activation applied) and, as float32, the position of each
// maximum inside its window, y * filter_w + x, plus 0.1 (MediaPipe's encoding: truncating to
// int recovers the position). The first maximum in row-major window order wins.
struct PoolGeometry {
  Shape4 output;
  int64_t pad_top = 0, pad_left = 0;
};
PoolGeometry max_pool_geometry(const PoolOptions& o, const Shape4& input);
void max_pool_argmax(const PoolOptions& o, const Shape4& input, const float* x, float* values,
                     float* indices, const ParallelFor& parallel);

// ---- MaxUnpooling2D -----------------------------------------------------------------------
// Output [N, H * filter_h, W * filter_w, C], zero except where an index puts an input value:
// output (y * stride_h - pad_top + idx / filter_w, x * stride_w - pad_left + idx % filter_w).
// Indices outside the window, or positions outside the output, are errors.
PoolGeometry max_unpool_geometry(const PoolOptions& o, const Shape4& input);
void max_unpooling(const PoolOptions& o, const Shape4& input, const float* x, const float* indices,
                   float* y, const ParallelFor& parallel);

// Registration (plugin_entry.cpp).
void register_transpose_conv_bias(const loom_host_api_t* host, loom_registrar_t* registrar);
void register_max_pool_argmax(const loom_host_api_t* host, loom_registrar_t* registrar);
void register_max_unpooling(const loom_host_api_t* host, loom_registrar_t* registrar);

// Helpers of the schema/kernel glue shared by the op files.
ParallelFor context_parallel(const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx);
const loom_tensor_t& float_input(const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx,
                                 size_t index, const char* what);
float* float_output(const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx, size_t index,
                    const Shape4& shape);
void check_float_info(const loom_value_info_t* v, const char* what);
// Shape of a value info when fully known.
std::optional<Shape4> known_shape4(const loom_value_info_t* v, const char* what);
void set_inferred(loom_inferred_t& out, const std::optional<Shape4>& shape);

}  // namespace loom::tflite_mobile
