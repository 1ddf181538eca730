// Custom operators (tflite issue #27): each becomes a node of domain "tflite.custom" whose op type
// is the operator's custom code, computed by whatever op-kernel plugin registers a schema and a
// cpu kernel for it (Loom's own: plugins/kernels/tflite-mobile, the MediaPipe operators).
//
// Contract with kernel plugins (docs/tflite-format.md, "Custom operators"):
//   - inputs and outputs are the operator's tensors in TFLite's own layout (NHWC), as stored
//     (quantized tensors keep their integer values): the kernel sees what a TFLite kernel would;
//   - attribute `custom_options` (INTS) holds the custom_options bytes, one entry per byte
//     (0..255), always, so kernels of operators that store a raw C struct there (MediaPipe's)
//     can parse it;
//   - when custom_options_format is FLEXBUFFERS and the bytes verify as a flexbuffers map, each
//     key becomes an attribute as well (int/bool -> INT, float -> FLOAT, string -> STRING,
//     vector of numbers -> INTS or FLOATS).
//
// Whether some plugin serves the operator cannot be asked here: host->find_kernel needs the
// loom_host_t handle, which the ABI hands to devices only, never to formats. The core's model
// check names every op no installed plugin knows (domain tflite.custom) when the model loads.
// flexbuffers' string-to-number helpers default to strtod_l with a locale object defined in
// libflatbuffers, which the plugin does not link (it needs the headers only). No option is
// ever parsed from text here (strings stay strings), so the plain C functions are enough.
// Only this file includes flatbuffers/util.h, where the setting matters.
#define FLATBUFFERS_LOCALE_INDEPENDENT 0
#include <flatbuffers/flexbuffers.h>

#include <cmath>
#include <limits>
#include <loom/plugin.hpp>
#include <set>

#include "schema_access.hpp"

namespace loom::tflite {
namespace {

constexpr const char* kCustomDomain = "tflite.custom";
constexpr int8_t kFlexbuffersFormat = 0;  // CustomOptionsFormat.FLEXBUFFERS

// Attribute names the converter sets itself; a flexbuffers key must not shadow them.
constexpr const char* kRawAttribute = "custom_options";

// A vector of numbers: all integers -> INTS, any float -> FLOATS; anything else is refused.
template <typename Vec>
Attr vector_attribute(const Converter& c, const std::string& key, const Vec& vec) {
  bool any_float = false;
  for (size_t i = 0; i < vec.size(); ++i) {
    const flexbuffers::Reference e = vec[i];
    if (e.IsFloat())
      any_float = true;
    else if (!e.IsInt() && !e.IsUInt() && !e.IsBool())
      c.invalid("custom option '" + key +
                "' is a vector holding something other than numbers; only numbers, strings "
                "and vectors of numbers become attributes");
  }
  if (any_float) {
    std::vector<float> out;
    for (size_t i = 0; i < vec.size(); ++i) {
      const double d = vec[i].AsDouble();
      // Out-of-range doubles would be undefined behaviour when narrowed to float.
      if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
        c.invalid("custom option '" + key + "' holds a value out of float range");
      out.push_back(static_cast<float>(d));
    }
    return Attr::Floats(key, std::move(out));
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < vec.size(); ++i) out.push_back(vec[i].AsInt64());
  return Attr::Ints(key, std::move(out));
}

// A flexbuffers value as an attribute, or a one-line error naming the key.
Attr flex_attribute(const Converter& c, const std::string& key, const flexbuffers::Reference& v) {
  auto checked_float = [&](double d) {
    // Out-of-range doubles would be undefined behaviour when narrowed to float.
    if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
      c.invalid("custom option '" + key + "' is out of float range");
    return static_cast<float>(d);
  };
  if (v.IsBool()) return Attr::Int(key, v.AsBool() ? 1 : 0);
  if (v.IsInt()) return Attr::Int(key, v.AsInt64());
  if (v.IsUInt()) {
    uint64_t u = v.AsUInt64();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      c.invalid("custom option '" + key + "' does not fit in int64");
    return Attr::Int(key, static_cast<int64_t>(u));
  }
  if (v.IsFloat()) return Attr::Float(key, checked_float(v.AsDouble()));
  if (v.IsString() || v.IsKey()) return Attr::String(key, v.ToString());
  if (v.IsVector() && !v.IsMap()) return vector_attribute(c, key, v.AsVector());
  if (v.IsTypedVector()) return vector_attribute(c, key, v.AsTypedVector());
  if (v.IsFixedTypedVector()) return vector_attribute(c, key, v.AsFixedTypedVector());
  c.invalid("custom option '" + key +
            "' has a flexbuffers type Loom cannot pass as an attribute (maps and blobs are "
            "not; numbers, strings and vectors of numbers are)");
}

// The attributes of the flexbuffers map in `bytes`, or none when the bytes are not one (many
// operators store a raw C struct there while declaring FLEXBUFFERS, the schema's default).
std::vector<Attr> flex_attributes(const Converter& c, std::span<const uint8_t> bytes) {
  std::vector<Attr> attrs;
  if (bytes.empty()) return attrs;
  // Verified as a whole before anything reads it: hostile offsets, sizes and nesting are
  // rejected here, so the reads below stay inside the buffer.
  std::vector<uint8_t> reuse_tracker;
  if (!flexbuffers::VerifyBuffer(bytes.data(), bytes.size(), &reuse_tracker)) return attrs;
  const flexbuffers::Reference root = flexbuffers::GetRoot(bytes.data(), bytes.size());
  if (!root.IsMap()) return attrs;
  const flexbuffers::Map map = root.AsMap();
  const flexbuffers::TypedVector keys = map.Keys();
  const flexbuffers::Vector values = map.Values();
  std::set<std::string> seen;
  for (size_t i = 0; i < keys.size() && i < values.size(); ++i) {
    const std::string key = keys[i].AsString().str();
    if (key.empty()) c.invalid("a custom option has an empty name");
    if (key == kRawAttribute)
      c.invalid("custom option '" + key + "' clashes with the attribute holding the raw bytes");
    if (!seen.insert(key).second) c.invalid("custom option '" + key + "' appears twice");
    attrs.push_back(flex_attribute(c, key, values[i]));
  }
  return attrs;
}

}  // namespace

void convert_custom(Converter& c) {
  const OperatorView& op = c.op();
  if (op.custom_code.empty()) c.invalid("the custom operator has an empty custom code");
  for (char ch : op.custom_code)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      c.invalid("the custom code holds a control character");

  const fb::Operator& raw = raw_operator(c);
  std::span<const uint8_t> bytes;
  if (const auto* options = raw.custom_options()) bytes = {options->data(), options->size()};

  std::vector<Attr> attrs;
  if (raw.custom_options_format() == kFlexbuffersFormat) attrs = flex_attributes(c, bytes);
  attrs.push_back(Attr::Ints(kRawAttribute, std::vector<int64_t>(bytes.begin(), bytes.end())));

  // Omitted optional inputs stay omitted (""); outputs are all defined in native layout.
  std::vector<std::string> inputs;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    inputs.push_back(c.has_input(i) ? c.value(c.input(i), Layout::kNative) : std::string());
  std::vector<std::string> outputs;
  for (size_t i = 0; i < op.outputs.size(); ++i)
    outputs.push_back(op.outputs[i] >= 0 ? c.define(c.output(i), Layout::kNative) : std::string());
  if (outputs.empty()) c.invalid("the custom operator has no outputs");
  c.emit(op.custom_code, inputs, outputs, attrs, kCustomDomain);
}

}  // namespace loom::tflite
