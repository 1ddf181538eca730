// ONNX TypeProto -> the dtype and (possibly symbolic) shape the graph builder takes.
#pragma once

#include <loom/plugin.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace loom::onnx {

// A tensor type as the builder wants it. Pointers refer into this object.
struct TensorType {
  // 0 for a tensor; LOOM_VALUE_SEQUENCE and/or LOOM_VALUE_OPTIONAL for seq(tensor),
  // optional(tensor) and optional(seq(tensor)), whose elements the fields below describe.
  uint32_t container_flags = 0;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  int32_t rank = -1;                    // -1: shape not given
  std::vector<int64_t> dims;            // -1: unknown extent
  std::vector<std::string> names;       // per dim: dim_param or ""
  std::vector<const char*> dim_params;  // per dim: names[i] or NULL; empty when none is named

  const int64_t* dims_ptr() const { return dims.empty() ? nullptr : dims.data(); }
  const char* const* dim_params_ptr() const {
    return dim_params.empty() ? nullptr : dim_params.data();
  }
};

// "tensor(float32)", "seq(tensor(int64))", "map(string,tensor(float32))", "optional(...)".
std::string describe_type(const ::onnx::TypeProto& type);

// True if `type` is unset or a tensor type Loom can represent (known element type).
bool is_loom_tensor_type(const ::onnx::TypeProto& type);

// The type of a graph input/output: a tensor, or a sequence/optional of tensors (described by
// its element tensor type and container_flags). `role` ("graph input", "graph output") names
// it in errors. Throws LOOM_ERROR_UNSUPPORTED for map/sparse/opaque types, nested containers
// other than optional(seq(tensor)) and element types Loom lacks, LOOM_ERROR_INVALID_MODEL for a
// rank above LOOM_MAX_RANK.
TensorType tensor_type_of(const ::onnx::ValueInfoProto& value, const std::string& role);

}  // namespace loom::onnx
