// The op schemas the core knows without any plugin: the ONNX default domain (opsets 1..19,
// the opset-18 and opset-19 changes included) and ai.onnx.ml where inference ops need
// them. The core's schema registry starts from this table; kernel plugins add their own.
#pragma once

#include <loom/plugin.hpp>
#include <span>

namespace loom::core {

// Type and shape inference for one node. `inputs[i]` is nullptr for an omitted optional
// input; constant inputs carry their data (value->data, LOOM_VALUE_CONSTANT), so ops such as
// Reshape or Slice can compute static shapes. Fill what can be known in `outputs` (they arrive
// initialised to dtype UNDEFINED, rank -1) and leave the rest unknown. Throw
// loom::sdk::Error(LOOM_ERROR_INVALID_MODEL, "...") for inputs that can never be valid
// (e.g. incompatible broadcast shapes, wrong rank), naming the node via its op_type/name.
using InferFn = void (*)(const loom_node_t& node, std::span<const loom_value_info_t* const> inputs,
                         std::span<loom_inferred_t> outputs);

struct BuiltinSchema {
  const char* domain;  // "" = ONNX default domain, "ai.onnx.ml"
  const char* op_type;
  int since_version;             // applies from this opset version until the next entry of the op
  int min_inputs, max_inputs;    // max -1 = variadic
  int min_outputs, max_outputs;  // max -1 = variadic
  bool deprecated;               // removed from the standard at since_version (e.g. Upsample 10)
  InferFn infer;                 // nullptr: outputs stay unknown until run time
};

// Every built-in schema version, in no particular order.
std::span<const BuiltinSchema> builtin_schemas();

}  // namespace loom::core
