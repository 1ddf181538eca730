#include "value_types.hpp"

#include <loom/plugin.hpp>

#include "dtypes.hpp"

namespace loom::onnx {
namespace {

std::string describe_type_at(const ::onnx::TypeProto& t, int depth) {
  // Types nest (seq of seq of ...); the description only needs the outer levels.
  if (depth > 8) return "...";
  switch (t.value_case()) {
    case ::onnx::TypeProto::kTensorType:
      return "tensor(" + onnx_type_name(t.tensor_type().elem_type()) + ")";
    case ::onnx::TypeProto::kSparseTensorType:
      return "sparse_tensor(" + onnx_type_name(t.sparse_tensor_type().elem_type()) + ")";
    case ::onnx::TypeProto::kSequenceType:
      return "seq(" + describe_type_at(t.sequence_type().elem_type(), depth + 1) + ")";
    case ::onnx::TypeProto::kOptionalType:
      return "optional(" + describe_type_at(t.optional_type().elem_type(), depth + 1) + ")";
    case ::onnx::TypeProto::kMapType:
      return "map(" + onnx_type_name(t.map_type().key_type()) + "," +
             describe_type_at(t.map_type().value_type(), depth + 1) + ")";
    case ::onnx::TypeProto::kOpaqueType:
      return "opaque(" + t.opaque_type().domain() + "." + t.opaque_type().name() + ")";
    default:
      return "undefined";
  }
}

}  // namespace

std::string describe_type(const ::onnx::TypeProto& type) {
  return describe_type_at(type, 0);
}

bool is_loom_tensor_type(const ::onnx::TypeProto& type) {
  if (type.value_case() == ::onnx::TypeProto::VALUE_NOT_SET) return true;
  if (type.value_case() != ::onnx::TypeProto::kTensorType) return false;
  int32_t elem = type.tensor_type().elem_type();
  return elem == 0 || dtype_from_onnx(elem) != LOOM_DTYPE_UNDEFINED;
}

TensorType tensor_type_of(const ::onnx::ValueInfoProto& value, const std::string& role) {
  TensorType out;
  if (!value.has_type() || value.type().value_case() == ::onnx::TypeProto::VALUE_NOT_SET)
    return out;  // untyped (allowed for values inside nested graphs): unknown dtype and rank
  // Sequences and optionals of tensors: unwrap to the element tensor type.
  const ::onnx::TypeProto* type = &value.type();
  if (type->value_case() == ::onnx::TypeProto::kOptionalType) {
    out.container_flags |= LOOM_VALUE_OPTIONAL;
    type = &type->optional_type().elem_type();
  }
  if (type->value_case() == ::onnx::TypeProto::kSequenceType) {
    out.container_flags |= LOOM_VALUE_SEQUENCE;
    type = &type->sequence_type().elem_type();
  }
  if (type->value_case() != ::onnx::TypeProto::kTensorType)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              role + " " + quote_name(value.name()) + " has type " + describe_type(value.type()) +
                  ": Loom supports tensors, seq(tensor), optional(tensor) and "
                  "optional(seq(tensor)) as graph inputs and outputs (no map, sparse or nested "
                  "sequence values)");
  const auto& tensor = type->tensor_type();
  if (tensor.elem_type() != 0) {
    out.dtype = dtype_from_onnx(tensor.elem_type());
    if (out.dtype == LOOM_DTYPE_UNDEFINED)
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                role + " " + quote_name(value.name()) + " has element type " +
                    onnx_type_name(tensor.elem_type()) + ", which Loom does not support");
  }
  if (!tensor.has_shape()) return out;
  const auto& shape = tensor.shape();
  if (shape.dim_size() > LOOM_MAX_RANK)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, role + " " + quote_name(value.name()) + " has rank " +
                                            std::to_string(shape.dim_size()) +
                                            "; Loom supports at most " +
                                            std::to_string(LOOM_MAX_RANK));
  out.rank = shape.dim_size();
  bool any_named = false;
  for (const auto& dim : shape.dim()) {
    if (dim.has_dim_value()) {
      // Some exporters write -1 for "unknown"; any negative extent means exactly that.
      out.dims.push_back(dim.dim_value() >= 0 ? dim.dim_value() : -1);
      out.names.emplace_back();
    } else {
      out.dims.push_back(-1);
      out.names.push_back(dim.has_dim_param() ? dim.dim_param() : std::string());
      any_named = any_named || !out.names.back().empty();
    }
  }
  if (any_named)
    for (const std::string& n : out.names)
      out.dim_params.push_back(n.empty() ? nullptr : n.c_str());
  return out;
}

}  // namespace loom::onnx
