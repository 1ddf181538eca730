// ONNX TensorProto / SparseTensorProto -> dense bytes the graph builder takes.
//
// Every encoding exporters use: raw_data (little-endian), the typed repeated fields (float_data,
// int32_data -- which also carries int8/int16/uint8/uint16/bool/float16/bfloat16 --, int64_data,
// double_data, uint64_data, string_data), external data and sparse tensors. Every size from the
// file is checked against the data actually present before anything is allocated.
#pragma once

#include <loom/plugin.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "external_data.hpp"
#include "model_parser.hpp"

namespace loom::onnx {

// Densified sparse tensors are not bounded by the file size; this bounds them instead.
inline constexpr uint64_t kMaxDensifiedBytes = uint64_t{4} << 30;

struct DecodedTensor {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
  const void* data = nullptr;  // never NULL: exactly product(dims) elements
  size_t size = 0;             // bytes at data
  // Where `data` lives when it is not in the TensorProto itself:
  std::vector<uint8_t> owned;           // converted from a typed field / densified
  std::vector<loom_string_t> strings;   // STRING elements, pointing into the proto
  std::shared_ptr<const void> mapping;  // external data mapping (data points into it)

  int32_t rank() const { return static_cast<int32_t>(dims.size()); }
  const int64_t* dims_ptr() const { return dims.data(); }
};

// Decodes `t`. `what` names it in errors, e.g. "initializer 'conv1.weight'". The result may
// point into `t`, which must outlive it. `lifted_raw_data`, when given, is the tensor's raw_data
// that parse_model left in the model bytes (t itself then has none); the result may point into
// those bytes.
DecodedTensor decode_tensor(const ::onnx::TensorProto& t, const std::string& what,
                            ExternalData& external, const RawDataSpan* lifted_raw_data = nullptr);

// Densifies a sparse tensor (values + 1-D linearized or 2-D coordinate indices).
DecodedTensor decode_sparse_tensor(const ::onnx::SparseTensorProto& t, const std::string& what,
                                   ExternalData& external);

}  // namespace loom::onnx
