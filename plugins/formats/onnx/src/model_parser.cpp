#include "model_parser.hpp"

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <loom/plugin.hpp>
#include <string>

#include "wire_scan.hpp"

namespace loom::onnx {

void parse_model(const uint8_t* data, size_t size, ::onnx::ModelProto& model) {
  if (size == 0) sdk::fail(LOOM_ERROR_INVALID_MODEL, "the model file is empty");
  if (size > static_cast<size_t>(INT_MAX))
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "the model file is " + std::to_string(size) +
                  " bytes; protobuf cannot parse 2 GiB or more: save the weights as ONNX external "
                  "data (onnx.save_model(..., save_as_external_data=True))");
  google::protobuf::io::CodedInputStream in(data, static_cast<int>(size));
  // The buffer bounds what can be read; the limit keeps protobuf from trusting any length.
  in.SetTotalBytesLimit(static_cast<int>(size));
  // Graph -> Node -> Attribute -> Graph costs three levels per nested graph; allow the loader's
  // depth plus room for tensors and type protos inside the deepest graph.
  in.SetRecursionLimit(3 * kMaxGraphDepth + 64);
  bool ok = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  if (!ok) {
    std::string why = describe_wire_problem(data, size)
                          .value_or("a nested message is truncated, corrupt, or nested more than " +
                                    std::to_string(3 * kMaxGraphDepth + 64) + " levels deep");
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "not a valid ONNX model (protobuf ModelProto): " + why);
  }
  // protobuf keeps a known field with the wrong wire type as an unknown field; at the top level
  // that means the file is not a ModelProto at all (e.g. another format that parsed by chance).
  if (auto why = describe_wire_problem(data, size))
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "not a valid ONNX model (protobuf ModelProto): " + *why);
}

}  // namespace loom::onnx
