// ONNX TensorProto files (.pb), as used by the ONNX backend test data: raw_data and the typed
// repeated fields (float_data, int32_data, int64_data, double_data, uint64_data, string_data)
// are all read; writing uses raw_data (string_data for strings). External data and segments
// are refused.
#pragma once

#include <loom_apps/host_tensor.hpp>
#include <string>

namespace loom::apps {

struct NamedTensor {
  std::string name;  // TensorProto.name, may be empty
  HostTensor tensor;
};

NamedTensor read_tensor_proto(const std::string& path);
NamedTensor parse_tensor_proto(const std::string& bytes, const std::string& what);

void write_tensor_proto(const std::string& path, const std::string& name, const HostTensor& tensor);
std::string serialize_tensor_proto(const std::string& name, const HostTensor& tensor);

struct NamedValue {
  std::string name;  // the proto's name, may be empty
  HostValue value;
};

// ONNX test data of any kind: a TensorProto (kTensor), a SequenceProto of tensors (kSequence)
// or an OptionalProto (kOptional*: of a tensor or a sequence, or empty). Protobuf cannot tell
// the messages apart by content, so the caller says which it expects (from the model's
// declaration). Sequences of non-tensors, maps and sparse tensors are refused.
NamedValue read_value_proto(const std::string& path, ValueKind expected);
NamedValue parse_value_proto(const std::string& bytes, const std::string& what, ValueKind expected);

// Reads `path` as .npy or TensorProto, chosen by content (the .npy magic), not by extension.
// `expected` as for read_npy: resolves '|V1' .npy files to a narrow dtype.
NamedTensor read_tensor_file(const std::string& path, loom_dtype_t expected = LOOM_DTYPE_UNDEFINED);

}  // namespace loom::apps
