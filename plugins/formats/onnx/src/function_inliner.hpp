// Model-local functions (ModelProto.functions, IR >= 8): exporters such as the torch.onnx
// dynamo exporter and export_modules_as_functions wrap modules in them. Loom's graph has no
// functions, so every call is replaced by the function's body before the graph is loaded,
// the way ONNX Runtime inlines them.
#pragma once

#include <onnx/onnx_pb.h>

namespace loom::onnx {

// Calls nested deeper than this (through function bodies and their subgraphs) are refused:
// ONNX forbids recursive functions, and a chain this deep is a hostile file.
inline constexpr int kMaxFunctionCallDepth = 32;
// Bound on the nodes inlining may create: a function calling another twice, many levels deep,
// would otherwise grow exponentially.
inline constexpr int64_t kMaxInlinedNodes = int64_t{1} << 20;

// Rewrites `model` in place: every node (in any graph, at any depth) whose (domain, op_type
// [, overload]) names a local function becomes the function's nodes, with formal inputs and
// outputs bound to the call's values, intermediate names made unique, attribute references
// (ref_attr_name) replaced by the call's attributes or the function's defaults, and the
// function's opset imports merged into the model's. Throws sdk::Error on invalid or hostile
// functions, or LOOM_ERROR_UNSUPPORTED when a function needs another version of an opset the
// model imports.
void inline_local_functions(::onnx::ModelProto& model);

}  // namespace loom::onnx
