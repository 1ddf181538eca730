#include "model_parser.hpp"

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <loom/plugin.hpp>
#include <string>

#include "wire_scan.hpp"

namespace loom::onnx {
namespace {

// Graph -> Node -> Attribute -> Graph costs three levels per nested graph; allow the loader's
// depth plus room for tensors and type protos inside the deepest graph.
constexpr int kRecursionLimit = 3 * kMaxGraphDepth + 64;

bool parse_bytes(const uint8_t* data, size_t size, ::onnx::ModelProto& model) {
  google::protobuf::io::CodedInputStream in(data, static_cast<int>(size));
  // The buffer bounds what can be read; the limit keeps protobuf from trusting any length.
  in.SetTotalBytesLimit(static_cast<int>(size));
  in.SetRecursionLimit(kRecursionLimit);
  return model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// Parses the model without its initializers' raw_data when that saves memory; false when the
// caller should parse the original bytes (not worth it, or the bytes are malformed: the full
// parse then produces the diagnostics).
bool parse_stripped(const uint8_t* data, size_t size, ::onnx::ModelProto& model,
                    std::vector<RawDataSpan>& lifted) {
  // The stripped copy costs what is not raw_data; it must save more than it costs.
  auto survey = strip_initializer_raw_data(data, size, false);
  if (!survey || survey->raw_data_bytes == 0 || survey->raw_data_bytes < size / 2) return false;
  auto stripped = strip_initializer_raw_data(data, size, true);
  if (!stripped) return false;
  const auto* bytes = reinterpret_cast<const uint8_t*>(stripped->bytes.data());
  if (!parse_bytes(bytes, stripped->bytes.size(), model) ||
      static_cast<size_t>(model.graph().initializer_size()) != stripped->raw_data.size()) {
    model.Clear();
    return false;
  }
  lifted.clear();
  lifted.reserve(stripped->raw_data.size());
  for (const RawDataLocation& loc : stripped->raw_data) {
    if (loc.present)
      lifted.emplace_back(std::span<const uint8_t>(data + loc.offset, loc.size));
    else
      lifted.emplace_back(std::nullopt);
  }
  return true;
}

}  // namespace

void parse_model(const uint8_t* data, size_t size, ::onnx::ModelProto& model,
                 std::vector<RawDataSpan>* lifted) {
  if (size == 0) sdk::fail(LOOM_ERROR_INVALID_MODEL, "the model file is empty");
  if (size > static_cast<size_t>(INT_MAX))
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "the model file is " + std::to_string(size) +
                  " bytes; protobuf cannot parse 2 GiB or more: save the weights as ONNX external "
                  "data (onnx.save_model(..., save_as_external_data=True))");
  if (lifted) lifted->clear();
  if (!lifted || !parse_stripped(data, size, model, *lifted)) {
    if (!parse_bytes(data, size, model)) {
      std::string why = describe_wire_problem(data, size)
                            .value_or(
                                "a nested message is truncated, corrupt, or nested more "
                                "than " +
                                std::to_string(kRecursionLimit) + " levels deep");
      sdk::fail(LOOM_ERROR_INVALID_MODEL, "not a valid ONNX model (protobuf ModelProto): " + why);
    }
  }
  // protobuf keeps a known field with the wrong wire type as an unknown field; at the top level
  // that means the file is not a ModelProto at all (e.g. another format that parsed by chance).
  if (auto why = describe_wire_problem(data, size))
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "not a valid ONNX model (protobuf ModelProto): " + *why);
}

}  // namespace loom::onnx
