// Ops that change the element type: Cast (integer `to`, or the type name of Cast-1), CastLike,
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
#include <loom/narrow_types.hpp>
#include <string>
#include <string_view>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::NodeView;

loom_dtype_t checked_dtype(const NodeView& v, int64_t code, const char* what) {
  // Up to the narrow types of ABI 1.6 (float8, float4, float6, int4, int2).
  if (code < LOOM_DTYPE_FLOAT32 || code > LOOM_DTYPE_FLOAT6E3M2)
    v.fail(std::string(what) + " " + std::to_string(code) + " is not a supported element type");
  return static_cast<loom_dtype_t>(code);
}

// Cast-1 names the type as a string ("FLOAT", "INT64", ...).
loom_dtype_t dtype_from_name(const NodeView& v, std::string_view name) {
  static constexpr std::pair<std::string_view, loom_dtype_t> kNames[] = {
      {"FLOAT", LOOM_DTYPE_FLOAT32},
      {"UINT8", LOOM_DTYPE_UINT8},
      {"INT8", LOOM_DTYPE_INT8},
      {"UINT16", LOOM_DTYPE_UINT16},
      {"INT16", LOOM_DTYPE_INT16},
      {"INT32", LOOM_DTYPE_INT32},
      {"INT64", LOOM_DTYPE_INT64},
      {"STRING", LOOM_DTYPE_STRING},
      {"BOOL", LOOM_DTYPE_BOOL},
      {"FLOAT16", LOOM_DTYPE_FLOAT16},
      {"DOUBLE", LOOM_DTYPE_FLOAT64},
      {"UINT32", LOOM_DTYPE_UINT32},
      {"UINT64", LOOM_DTYPE_UINT64},
      {"COMPLEX64", LOOM_DTYPE_COMPLEX64},
      {"COMPLEX128", LOOM_DTYPE_COMPLEX128},
      {"BFLOAT16", LOOM_DTYPE_BFLOAT16},
      {"FLOAT8E4M3FN", LOOM_DTYPE_FLOAT8E4M3FN},
      {"FLOAT8E4M3FNUZ", LOOM_DTYPE_FLOAT8E4M3FNUZ},
      {"FLOAT8E5M2", LOOM_DTYPE_FLOAT8E5M2},
      {"FLOAT8E5M2FNUZ", LOOM_DTYPE_FLOAT8E5M2FNUZ},
      {"UINT4", LOOM_DTYPE_UINT4},
      {"INT4", LOOM_DTYPE_INT4},
      {"FLOAT4E2M1", LOOM_DTYPE_FLOAT4E2M1},
      {"FLOAT8E8M0", LOOM_DTYPE_FLOAT8E8M0},
      {"UINT2", LOOM_DTYPE_UINT2},
      {"INT2", LOOM_DTYPE_INT2},
      {"FLOAT6E2M3", LOOM_DTYPE_FLOAT6E2M3},
      {"FLOAT6E3M2", LOOM_DTYPE_FLOAT6E3M2},
  };
  for (auto [n, t] : kNames)
    if (n == name) return t;
  v.fail("attribute to = '" + std::string(name) + "' is not an element type name");
}

void cast(NodeView& v) {
  const loom_attribute_t* to = v.attrs().find("to");
  if (!to) v.fail("attribute to is required");
  loom_dtype_t dtype = to->type == LOOM_ATTR_STRING
                           ? dtype_from_name(v, std::string_view(to->s, to->s_size))
                           : checked_dtype(v, v.attrs().get_int("to", 0), "attribute to =");
  v.set_output(0, dtype, v.shape(0));
}

// BitCast(input): the same shape, reinterpreted as attribute `to`, which must be as wide.
void bitcast(NodeView& v) {
  if (!v.attrs().has("to")) v.fail("attribute to is required");
  loom_dtype_t to = checked_dtype(v, v.attrs().get_int("to", 0), "attribute to =");
  const auto bits = sdk::narrow::element_bits;
  if (to == LOOM_DTYPE_STRING) v.fail("attribute to cannot be string");
  loom_dtype_t from = v.dtype(0);
  if (from == LOOM_DTYPE_STRING) v.fail("a string input cannot be bit-cast");
  if (from != LOOM_DTYPE_UNDEFINED && bits(from) != bits(to))
    v.fail("input of " + std::to_string(bits(from)) + "-bit elements cannot be reinterpreted as " +
           std::to_string(bits(to)) + "-bit ones");
  v.set_output(0, to, v.shape(0));
}

void cast_like(NodeView& v) {
  v.set_output(0, v.dtype(1), v.shape(0));
}

// QuantizeLinear(x, y_scale, y_zero_point?): y has the zero point's type, else the type of
// attribute output_dtype (opset 21), else uint8.
void quantize_linear(NodeView& v) {
  loom_dtype_t y = LOOM_DTYPE_UINT8;
  if (v.has_input(2))
    y = v.dtype(2);
  else if (v.attrs().get_int("output_dtype", 0) != 0)
    y = checked_dtype(v, v.attrs().get_int("output_dtype", 0), "attribute output_dtype =");
  v.set_output(0, y, v.shape(0));
}

// DequantizeLinear(x, x_scale, x_zero_point?): the type of attribute output_dtype (opset 23),
// else the scale's type, of x's shape.
void dequantize_linear(NodeView& v) {
  loom_dtype_t y = v.dtype(1) != LOOM_DTYPE_UNDEFINED ? v.dtype(1) : LOOM_DTYPE_FLOAT32;
  if (v.attrs().get_int("output_dtype", 0) != 0)
    y = checked_dtype(v, v.attrs().get_int("output_dtype", 0), "attribute output_dtype =");
  v.set_output(0, y, v.shape(0));
}

// DynamicQuantizeLinear(x): uint8 y, float scalar scale, uint8 scalar zero point.
void dynamic_quantize_linear(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_UINT8, v.shape(0));
  v.set_output(1, LOOM_DTYPE_FLOAT32, Dims{});
  v.set_output(2, LOOM_DTYPE_UINT8, Dims{});
}

const InferEntry kEntries[] = {
    {"", "Cast", adapt<cast>},
    {"", "BitCast", adapt<bitcast>},
    {"", "CastLike", adapt<cast_like>},
    {"", "QuantizeLinear", adapt<quantize_linear>},
    {"", "DequantizeLinear", adapt<dequantize_linear>},
    {"", "DynamicQuantizeLinear", adapt<dynamic_quantize_linear>},
};

}  // namespace

std::span<const InferEntry> type_op_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
