// The opset-19 schema versions of ONNX 1.14 (its Changelog, "Version 19 of the default ONNX
// operator set"). The devices already implement what opset 19 changed for the ops they run
// (Resize's half_pixel_symmetric, Pad's wrap mode, AveragePool's dilations), and validation
// refuses opsets newer than every schema, so these rows are what lets opset-19 models load.
// Most of the versions only widen the type lists to the float8 types, which no device has:
// such a model fails on its dtype, not silently. DeformConv is new in 19 (the cpu device runs
// it).
#include "schema_rows.hpp"

namespace loom::core {
namespace {

constexpr SchemaRow kOpset19Rows[] = {
    // Attribute dilations added.
    {"", "AveragePool", 19, 1, 1, 1, 1, false},
    // Float8 types; Cast and CastLike gain the saturate attribute for them.
    {"", "Cast", 19, 1, 1, 1, 1, false},
    {"", "CastLike", 19, 2, 2, 1, 1, false},
    {"", "Constant", 19, 0, 0, 1, 1, false},
    {"", "DequantizeLinear", 19, 2, 3, 1, 1, false},
    {"", "QuantizeLinear", 19, 2, 3, 1, 1, false},
    {"", "Identity", 19, 1, 1, 1, 1, false},
    {"", "If", 19, 1, 1, 1, -1, false},
    {"", "Loop", 19, 2, -1, 1, -1, false},
    {"", "Scan", 19, 1, -1, 1, -1, false},
    {"", "Reshape", 19, 2, 2, 1, 1, false},
    {"", "Shape", 19, 1, 1, 1, 1, false},
    {"", "Size", 19, 1, 1, 1, 1, false},
    // New: deformable 2-D convolution.
    {"", "DeformConv", 19, 3, 5, 1, 1, false},
    // String inputs accepted.
    {"", "Equal", 19, 2, 2, 1, 1, false},
    // Mode wrap added.
    {"", "Pad", 19, 2, 4, 1, 1, false},
    // coordinate_transformation_mode half_pixel_symmetric added.
    {"", "Resize", 19, 1, 4, 1, 1, false},
};

}  // namespace

std::span<const SchemaRow> opset19_schema_rows() {
  return kOpset19Rows;
}

}  // namespace loom::core
