// The opset-18 schema versions of ONNX 1.13 (its Changelog, "Version 18 of the default ONNX
// operator set"). onnx 1.12, from which onnx_schema_table.cpp is generated, stops at opset 17,
// but current exporters (torch.onnx, tf2onnx) already emit these.
#include "schema_rows.hpp"

namespace loom::core {
namespace {

constexpr SchemaRow kOpset18Rows[] = {
    // New operators.
    {"", "BitwiseAnd", 18, 2, 2, 1, 1, false},
    {"", "BitwiseNot", 18, 1, 1, 1, 1, false},
    {"", "BitwiseOr", 18, 2, 2, 1, 1, false},
    {"", "BitwiseXor", 18, 2, 2, 1, 1, false},
    {"", "CenterCropPad", 18, 2, 2, 1, 1, false},  // input_data, shape; attr axes
    {"", "Col2Im", 18, 3, 3, 1, 1, false},         // input, image_shape, block_shape
    {"", "GroupNormalization", 18, 3, 3, 1, 1, false},
    {"", "Mish", 18, 1, 1, 1, 1, false},
    // Reductions: `axes` moves from an attribute to an optional input (as ReduceSum-13 did),
    // and noop_with_empty_axes is added.
    {"", "ReduceL1", 18, 1, 2, 1, 1, false},
    {"", "ReduceL2", 18, 1, 2, 1, 1, false},
    {"", "ReduceLogSum", 18, 1, 2, 1, 1, false},
    {"", "ReduceLogSumExp", 18, 1, 2, 1, 1, false},
    {"", "ReduceMax", 18, 1, 2, 1, 1, false},
    {"", "ReduceMean", 18, 1, 2, 1, 1, false},
    {"", "ReduceMin", 18, 1, 2, 1, 1, false},
    {"", "ReduceProd", 18, 1, 2, 1, 1, false},
    {"", "ReduceSumSquare", 18, 1, 2, 1, 1, false},
    // Split: attribute num_outputs (uneven last chunk allowed).
    {"", "Split", 18, 1, 2, 1, -1, false},
    // Pad: optional `axes` input after constant_value.
    {"", "Pad", 18, 2, 4, 1, 1, false},
    // Resize: attributes antialias, axes, keep_aspect_ratio_policy.
    {"", "Resize", 18, 1, 4, 1, 1, false},
    // reduction = "max" / "min" added.
    {"", "ScatterElements", 18, 3, 3, 1, 1, false},
    {"", "ScatterND", 18, 3, 3, 1, 1, false},
    // LpPool: ceil_mode and dilations attributes.
    {"", "LpPool", 18, 1, 1, 1, 1, false},
    // Optional ops accept tensors and sequences as well as optionals; the input of
    // OptionalHasElement becomes optional.
    {"", "OptionalGetElement", 18, 1, 1, 1, 1, false},
    {"", "OptionalHasElement", 18, 0, 1, 1, 1, false},
};

}  // namespace

std::span<const SchemaRow> opset18_schema_rows() {
  return kOpset18Rows;
}

}  // namespace loom::core
