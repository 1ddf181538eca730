#include "format_sniff.hpp"

#include <cstring>

namespace loom::core {
namespace {

bool starts_with(const uint8_t* data, size_t size, size_t offset, const char* magic) {
  size_t n = std::strlen(magic);
  return size >= offset + n && std::memcmp(data + offset, magic, n) == 0;
}

// An ONNX ModelProto almost always opens with field 1 (ir_version, a small varint) followed by
// another known ModelProto field (producer_name, opset_import, graph, ...). Protobuf has no
// magic, so this stays a heuristic; it only decides the wording of an error.
bool looks_like_onnx(const uint8_t* data, size_t size) {
  if (size < 3 || data[0] != 0x08 || data[1] == 0 || data[1] > 20) return false;
  switch (data[2]) {
    case 0x12:  // 2 producer_name
    case 0x1a:  // 3 producer_version
    case 0x22:  // 4 domain
    case 0x28:  // 5 model_version
    case 0x32:  // 6 doc_string
    case 0x3a:  // 7 graph
    case 0x42:  // 8 opset_import
    case 0x72:  // 14 metadata_props
      return true;
    default:
      return false;
  }
}

}  // namespace

SniffedFormat sniff_format(const uint8_t* data, size_t size) {
  if (!data) return {};
  if (starts_with(data, size, 0, "LOOMMODL")) return {"a Loom native model (.loom)", "loom", ""};
  // FlatBuffers put the file identifier right after the 4-byte root offset.
  if (starts_with(data, size, 4, "TFL3")) return {"a TFLite model", "tflite", ""};
  if (starts_with(data, size, 0, "7767517")) return {"an ncnn model (.param)", "ncnn", ""};
  if (looks_like_onnx(data, size)) return {"an ONNX model", "onnx", ""};
  if (starts_with(data, size, 0, "PK\x03\x04"))
    return {"a zip archive (e.g. a PyTorch .pt or a Keras file)", "",
            "export the model to ONNX first"};
  if (starts_with(data, size, 0, "\x89HDF"))
    return {"an HDF5 file (e.g. Keras .h5)", "", "export the model to ONNX first"};
  return {};
}

}  // namespace loom::core
