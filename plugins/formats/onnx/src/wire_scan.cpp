#include "wire_scan.hpp"

#include <cstring>
#include <string_view>

namespace loom::onnx {
namespace {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

// Fields of ModelProto (onnx.proto) and the wire type each must have.
struct KnownField {
  uint32_t number;
  WireType wire;
  const char* name;
};
constexpr KnownField kModelFields[] = {
    {1, kVarint, "ir_version"},  {2, kLen, "producer_name"},    {3, kLen, "producer_version"},
    {4, kLen, "domain"},         {5, kVarint, "model_version"}, {6, kLen, "doc_string"},
    {7, kLen, "graph"},          {8, kLen, "opset_import"},     {14, kLen, "metadata_props"},
    {20, kLen, "training_info"}, {25, kLen, "functions"},
};

const KnownField* find_field(uint32_t number) {
  for (const KnownField& f : kModelFields)
    if (f.number == number) return &f;
  return nullptr;
}

// Cursor over a byte range; every read is bounds-checked.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  bool at_end() const { return pos_ == size_; }

  std::optional<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= size_) return std::nullopt;
      uint8_t b = data_[pos_++];
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return std::nullopt;  // more than 10 bytes: not a varint
  }
  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    pos_ += static_cast<size_t>(n);
    return true;
  }
  const uint8_t* here() const { return data_ + pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

bool has_onnx_extension(const char* path) {
  if (!path) return false;
  std::string_view p(path);
  constexpr std::string_view ext = ".onnx";
  if (p.size() < ext.size()) return false;
  std::string_view tail = p.substr(p.size() - ext.size());
  for (size_t i = 0; i < ext.size(); ++i)
    if ((tail[i] | 0x20) != ext[i]) return false;
  return true;
}

// One field read by next_field: offsets are relative to the reader's range.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  size_t start = 0;    // the tag
  size_t payload = 0;  // length-delimited fields: the first payload byte
  size_t end = 0;      // one past the field
};

// Reads the field at `r`; nullopt when it is truncated, malformed or a group.
std::optional<Field> next_field(Reader& r) {
  Field f;
  f.start = r.pos();
  auto tag = r.varint();
  if (!tag || (*tag >> 3) == 0 || (*tag >> 3) > 0x1fffffff) return std::nullopt;
  f.number = static_cast<uint32_t>(*tag >> 3);
  f.wire = static_cast<uint32_t>(*tag & 7);
  switch (f.wire) {
    case kVarint:
      if (!r.varint()) return std::nullopt;
      break;
    case kFixed64:
      if (!r.skip(8)) return std::nullopt;
      break;
    case kFixed32:
      if (!r.skip(4)) return std::nullopt;
      break;
    case kLen: {
      auto len = r.varint();
      if (!len) return std::nullopt;
      f.payload = r.pos();
      if (!r.skip(*len)) return std::nullopt;
      break;
    }
    default:
      return std::nullopt;  // groups: no ONNX message uses them
  }
  f.end = r.pos();
  return f;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Field numbers of the messages strip_initializer_raw_data walks (onnx.proto).
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorRawData = 9;

// Rewrites the length-delimited message at [begin, begin + size) of `data` field by field:
// `child` decides for each field whether it is kept as is (returns false) or was handled
// (returns true, having appended its own replacement to `out`, if any); nullopt stops the walk.
// `out` is NULL when only surveying.
template <typename Child>
bool rewrite_message(const uint8_t* data, size_t begin, size_t size, std::string* out,
                     Child&& child) {
  Reader r(data + begin, size);
  while (!r.at_end()) {
    auto f = next_field(r);
    if (!f) return false;
    std::optional<bool> handled = child(*f, begin, out);
    if (!handled) return false;
    if (!*handled && out)
      out->append(reinterpret_cast<const char*>(data + begin + f->start), f->end - f->start);
  }
  return true;
}

// Appends field `number` holding `payload` as a length-delimited field.
void put_message(std::string& out, uint32_t number, const std::string& payload) {
  put_varint(out, (uint64_t{number} << 3) | kLen);
  put_varint(out, payload.size());
  out.append(payload);
}

}  // namespace

std::optional<StrippedModel> strip_initializer_raw_data(const uint8_t* data, size_t size,
                                                        bool copy) {
  StrippedModel result;
  auto tensor = [&](const Field& f, size_t base, std::string*) -> std::optional<bool> {
    if (f.number != kTensorRawData || f.wire != kLen) return false;
    // A repeated singular field: protobuf keeps the last one, and so does this.
    result.raw_data.back() = {true, base + f.payload, f.end - f.payload};
    result.raw_data_bytes += f.end - f.payload;
    return true;
  };
  auto graph = [&](const Field& f, size_t base, std::string* out) -> std::optional<bool> {
    if (f.number != kGraphInitializer || f.wire != kLen) return false;
    result.raw_data.emplace_back();
    std::string stripped;
    if (!rewrite_message(data, base + f.payload, f.end - f.payload, out ? &stripped : nullptr,
                         tensor))
      return std::nullopt;
    if (out) put_message(*out, f.number, stripped);
    return true;
  };
  auto model = [&](const Field& f, size_t base, std::string* out) -> std::optional<bool> {
    if (f.number != kModelGraph || f.wire != kLen) return false;
    std::string stripped;
    if (!rewrite_message(data, base + f.payload, f.end - f.payload, out ? &stripped : nullptr,
                         graph))
      return std::nullopt;
    if (out) put_message(*out, f.number, stripped);
    return true;
  };
  if (!data || !rewrite_message(data, 0, size, copy ? &result.bytes : nullptr, model))
    return std::nullopt;
  return result;
}

int32_t probe_model_head(const uint8_t* head, size_t head_size, const char* path) {
  if (!head || head_size == 0) return 0;
  Reader r(head, head_size);
  int known = 0;
  bool ir_version_first = false;
  bool saw_graph_or_opset = false;
  while (!r.at_end()) {
    auto tag = r.varint();
    if (!tag) break;  // the head may end inside a tag
    uint32_t number = static_cast<uint32_t>(*tag >> 3);
    uint32_t wire = static_cast<uint32_t>(*tag & 7);
    const KnownField* f = find_field(number);
    // An unknown field number or a wrong wire type cannot start a ModelProto we understand.
    // (Newer ONNX fields would also appear here; they never come first in exporters' output.)
    if (!f || f->wire != wire) {
      if (known == 0) return 0;
      break;
    }
    if (wire == kVarint) {
      auto v = r.varint();
      if (!v) break;
      if (number == 1 && known == 0 && *v >= 1 && *v <= 100) ir_version_first = true;
      if (number == 1 && (*v == 0 || *v > 100)) return 0;  // no IR version is 0 or that large
    } else {
      auto len = r.varint();
      if (!len) break;
      if (number == 7 || number == 8) saw_graph_or_opset = true;
      // Length-delimited fields may run past the head: that is fine, the head is a prefix.
      if (!r.skip(*len)) {
        ++known;
        break;
      }
    }
    ++known;
  }
  if (known == 0) return 0;
  int32_t score = 0;
  if (ir_version_first)
    score = 90;  // what every exporter writes first
  else if (saw_graph_or_opset && known >= 2)
    score = 70;
  else
    score = 20 + 10 * (known > 3 ? 3 : known);
  if (has_onnx_extension(path)) score += 10;
  return score > 100 ? 100 : score;
}

std::optional<std::string> describe_wire_problem(const uint8_t* data, size_t size) {
  Reader r(data, size);
  while (!r.at_end()) {
    size_t at = r.pos();
    auto tag = r.varint();
    if (!tag) return "truncated or corrupt field tag at byte " + std::to_string(at);
    uint32_t number = static_cast<uint32_t>(*tag >> 3);
    uint32_t wire = static_cast<uint32_t>(*tag & 7);
    if (number == 0) return "invalid field number 0 at byte " + std::to_string(at);
    const KnownField* f = find_field(number);
    if (f && f->wire != wire)
      return std::string("field '") + f->name + "' at byte " + std::to_string(at) +
             " has wire type " + std::to_string(wire) + ", expected " + std::to_string(f->wire);
    switch (wire) {
      case kVarint:
        if (!r.varint()) return "truncated varint at byte " + std::to_string(at);
        break;
      case kFixed64:
        if (!r.skip(8)) return "truncated fixed64 field at byte " + std::to_string(at);
        break;
      case kFixed32:
        if (!r.skip(4)) return "truncated fixed32 field at byte " + std::to_string(at);
        break;
      case kLen: {
        auto len = r.varint();
        if (!len) return "truncated length at byte " + std::to_string(at);
        if (*len > r.remaining())
          return std::string("field '") + (f ? f->name : "#" + std::to_string(number)) +
                 "' at byte " + std::to_string(at) + " claims " + std::to_string(*len) +
                 " bytes but only " + std::to_string(r.remaining()) + " remain (file truncated?)";
        r.skip(*len);
        break;
      }
      default:
        return "unsupported wire type " + std::to_string(wire) + " at byte " + std::to_string(at);
    }
  }
  return std::nullopt;
}

}  // namespace loom::onnx
