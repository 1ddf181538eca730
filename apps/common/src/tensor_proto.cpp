// ONNX TensorProto <-> HostTensor, through the system's libonnx_proto (never a private copy of
// onnx.proto: two registrations of the same descriptors in one process abort).
#include <fmt/format.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <loom/narrow_types.hpp>
#include <loom_apps/dtype.hpp>
#include <loom_apps/tensor_proto.hpp>

#include "file_bytes.hpp"

namespace loom::apps {
namespace {

// protobuf refuses messages above 2 GiB.
constexpr size_t kMaxProtoBytes = (size_t{1} << 31) - 1;

bool known_dtype(int32_t type) {
  return type >= LOOM_DTYPE_FLOAT32 && type <= LOOM_DTYPE_FLOAT6E3M2;
}

// The sub-byte types, which a TensorProto packs (two 4-bit, four 2-bit, or four 6-bit values in
// three bytes); in a HostTensor they take a byte each.
bool is_packed(loom_dtype_t t) {
  int bits = sdk::narrow::packed_bits(t);
  return bits != 0 && bits < 8;
}

// int32_data of a narrow type: each value is a byte, one element (float8, float6, e8m0) or a
// packed byte of several (the 4- and 2-bit types), as onnx.helper.make_tensor writes them.
void read_narrow_int32(const onnx::TensorProto& p, HostTensor& t, size_t count,
                       const std::string& what) {
  const int bits = sdk::narrow::packed_bits(t.dtype);
  const size_t need = bits == 4 || bits == 2 ? *sdk::narrow::packed_size(t.dtype, count) : count;
  if (static_cast<size_t>(p.int32_data_size()) != need)
    throw TensorIoError(fmt::format("{}: int32_data holds {} values, shape {} of {} needs {}", what,
                                    p.int32_data_size(), t.shape_string(), dtype_name(t.dtype),
                                    need));
  std::vector<uint8_t> bytes(need);
  for (size_t i = 0; i < need; ++i) {
    int32_t v = p.int32_data(static_cast<int>(i));
    if (v < 0 || v > 255)
      throw TensorIoError(fmt::format("{}: int32_data[{}] = {} is not a byte of {}", what, i, v,
                                      dtype_name(t.dtype)));
    bytes[i] = static_cast<uint8_t>(v);
  }
  auto* out = reinterpret_cast<uint8_t*>(t.data.data());
  if (bits == 4 || bits == 2) {
    sdk::narrow::unpack(t.dtype, bytes.data(), count, out);
    return;
  }
  for (size_t i = 0; i < count; ++i) out[i] = sdk::narrow::from_packed_bits(t.dtype, bytes[i]);
}

template <typename Dst, typename Repeated>
void copy_typed(HostTensor& t, const Repeated& field, size_t per_element, size_t count,
                const std::string& what, const char* field_name) {
  if (static_cast<size_t>(field.size()) != count * per_element)
    throw TensorIoError(fmt::format("{}: {} holds {} values, shape {} needs {}", what, field_name,
                                    field.size(), t.shape_string(), count * per_element));
  Dst* out = t.as<Dst>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

void read_typed_fields(const onnx::TensorProto& p, HostTensor& t, size_t count,
                       const std::string& what) {
  switch (t.dtype) {
    case LOOM_DTYPE_FLOAT32:
      return copy_typed<float>(t, p.float_data(), 1, count, what, "float_data");
    case LOOM_DTYPE_COMPLEX64:
      return copy_typed<float>(t, p.float_data(), 2, count, what, "float_data");
    case LOOM_DTYPE_FLOAT64:
      return copy_typed<double>(t, p.double_data(), 1, count, what, "double_data");
    case LOOM_DTYPE_COMPLEX128:
      return copy_typed<double>(t, p.double_data(), 2, count, what, "double_data");
    case LOOM_DTYPE_INT64:
      return copy_typed<int64_t>(t, p.int64_data(), 1, count, what, "int64_data");
    case LOOM_DTYPE_UINT32:
      return copy_typed<uint32_t>(t, p.uint64_data(), 1, count, what, "uint64_data");
    case LOOM_DTYPE_UINT64:
      return copy_typed<uint64_t>(t, p.uint64_data(), 1, count, what, "uint64_data");
    case LOOM_DTYPE_INT32:
      return copy_typed<int32_t>(t, p.int32_data(), 1, count, what, "int32_data");
    case LOOM_DTYPE_INT16:
      return copy_typed<int16_t>(t, p.int32_data(), 1, count, what, "int32_data");
    case LOOM_DTYPE_INT8:
      return copy_typed<int8_t>(t, p.int32_data(), 1, count, what, "int32_data");
    case LOOM_DTYPE_UINT16:
      return copy_typed<uint16_t>(t, p.int32_data(), 1, count, what, "int32_data");
    case LOOM_DTYPE_UINT8:
      return copy_typed<uint8_t>(t, p.int32_data(), 1, count, what, "int32_data");
    // 16-bit floats travel as their bit patterns in int32_data.
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return copy_typed<uint16_t>(t, p.int32_data(), 1, count, what, "int32_data");
    case LOOM_DTYPE_BOOL: {
      copy_typed<uint8_t>(t, p.int32_data(), 1, count, what, "int32_data");
      for (std::byte& b : t.data) b = static_cast<std::byte>(b != std::byte{0});
      return;
    }
    default:
      if (sdk::narrow::is_narrow(t.dtype)) return read_narrow_int32(p, t, count, what);
      throw TensorIoError(
          fmt::format("{}: unsupported data_type {}", what, static_cast<int>(t.dtype)));
  }
}

// The tensor of a parsed TensorProto; `available` is the size of the file it came from (an
// element count above it is a lie, refused before allocating).
NamedTensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what,
                              size_t available) {
  if (!known_dtype(proto.data_type()))
    throw TensorIoError(fmt::format(
        "{}: unknown or missing data_type {} (is this a TensorProto, not a sequence/map?)", what,
        proto.data_type()));
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    throw TensorIoError(fmt::format("{}: tensors with external data are not supported", what));
  if (proto.has_segment())
    throw TensorIoError(fmt::format("{}: segmented tensors are not supported", what));
  if (proto.dims_size() > LOOM_MAX_RANK)
    throw TensorIoError(fmt::format("{}: rank {} above the supported maximum of {}", what,
                                    proto.dims_size(), LOOM_MAX_RANK));

  NamedTensor out;
  out.name = proto.name();
  HostTensor& t = out.tensor;
  t.dtype = static_cast<loom_dtype_t>(proto.data_type());
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  // Every element needs at least one byte of the file (or a typed value), so a count above the
  // file size is a lie: refuse before allocating.
  size_t count = checked_element_count(t.dims, what);
  if (t.dtype == LOOM_DTYPE_STRING) {
    if (static_cast<size_t>(proto.string_data_size()) != count)
      throw TensorIoError(fmt::format("{}: string_data holds {} values, shape {} needs {}", what,
                                      proto.string_data_size(), t.shape_string(), count));
    t.strings.assign(proto.string_data().begin(), proto.string_data().end());
    return out;
  }
  size_t element = dtype_size(t.dtype);
  if (proto.has_raw_data() && is_packed(t.dtype)) {
    // count <= SIZE_MAX, so count * bits / 8 cannot overflow a uint64.
    size_t need = *sdk::narrow::packed_size(t.dtype, count);
    if (proto.raw_data().size() != need)
      throw TensorIoError(fmt::format("{}: raw_data holds {} bytes, shape {} of {} needs {}", what,
                                      proto.raw_data().size(), t.shape_string(),
                                      dtype_name(t.dtype), need));
    t.data.resize(count);
    sdk::narrow::unpack(t.dtype, reinterpret_cast<const uint8_t*>(proto.raw_data().data()), count,
                        reinterpret_cast<uint8_t*>(t.data.data()));
    return out;
  }
  if (proto.has_raw_data()) {
    if (count > SIZE_MAX / element || count * element != proto.raw_data().size())
      throw TensorIoError(fmt::format("{}: raw_data holds {} bytes, shape {} of {} needs {}", what,
                                      proto.raw_data().size(), t.shape_string(),
                                      dtype_name(t.dtype), count * element));
    t.data.resize(proto.raw_data().size());
    if (!t.data.empty()) std::memcpy(t.data.data(), proto.raw_data().data(), t.data.size());
    if (t.dtype == LOOM_DTYPE_BOOL)
      for (std::byte& b : t.data) b = static_cast<std::byte>(b != std::byte{0});
    return out;
  }
  if (count > available)
    throw TensorIoError(fmt::format("{}: shape {} claims more elements than the file holds", what,
                                    t.shape_string()));
  t.data.resize(count * element);
  read_typed_fields(proto, t, count, what);
  return out;
}

std::vector<HostTensor> sequence_tensors(const onnx::SequenceProto& seq, const std::string& what,
                                         size_t available) {
  if (seq.sparse_tensor_values_size() || seq.sequence_values_size() || seq.map_values_size() ||
      seq.optional_values_size())
    throw TensorIoError(fmt::format(
        "{}: only sequences of dense tensors are supported (elem_type {})", what, seq.elem_type()));
  std::vector<HostTensor> out;
  for (int i = 0; i < seq.tensor_values_size(); ++i)
    out.push_back(
        tensor_from_proto(seq.tensor_values(i), fmt::format("{} element {}", what, i), available)
            .tensor);
  return out;
}

}  // namespace

NamedTensor parse_tensor_proto(const std::string& bytes, const std::string& what) {
  onnx::TensorProto proto;
  if (bytes.size() > kMaxProtoBytes || !proto.ParseFromString(bytes))
    throw TensorIoError(fmt::format("{}: not a valid ONNX TensorProto", what));
  return tensor_from_proto(proto, what, bytes.size());
}

NamedValue parse_value_proto(const std::string& bytes, const std::string& what,
                             ValueKind expected) {
  NamedValue out;
  HostValue& v = out.value;
  v.kind = expected;
  if (expected == ValueKind::kTensor) {
    NamedTensor t = parse_tensor_proto(bytes, what);
    out.name = t.name;
    v.elem_dtype = t.tensor.dtype;
    v.tensors.push_back(std::move(t.tensor));
    return out;
  }
  if (expected == ValueKind::kSequence) {
    onnx::SequenceProto seq;
    if (bytes.size() > kMaxProtoBytes || !seq.ParseFromString(bytes))
      throw TensorIoError(fmt::format("{}: not a valid ONNX SequenceProto", what));
    out.name = seq.name();
    v.tensors = sequence_tensors(seq, what, bytes.size());
    if (!v.tensors.empty()) v.elem_dtype = v.tensors[0].dtype;
    return out;
  }
  onnx::OptionalProto opt;
  if (bytes.size() > kMaxProtoBytes || !opt.ParseFromString(bytes))
    throw TensorIoError(fmt::format("{}: not a valid ONNX OptionalProto", what));
  out.name = opt.name();
  bool want_sequence = expected == ValueKind::kOptionalSequence;
  if (opt.has_tensor_value() && !want_sequence) {
    v.tensors.push_back(tensor_from_proto(opt.tensor_value(), what, bytes.size()).tensor);
    v.elem_dtype = v.tensors[0].dtype;
  } else if (opt.has_sequence_value() && want_sequence) {
    v.tensors = sequence_tensors(opt.sequence_value(), what, bytes.size());
    if (!v.tensors.empty()) v.elem_dtype = v.tensors[0].dtype;
  } else if (opt.has_tensor_value() || opt.has_sequence_value() || opt.has_sparse_tensor_value() ||
             opt.has_map_value() || opt.has_optional_value()) {
    throw TensorIoError(fmt::format("{}: the optional holds {} but {} was expected", what,
                                    opt.has_tensor_value()     ? "a tensor"
                                    : opt.has_sequence_value() ? "a sequence"
                                                               : "an unsupported value",
                                    want_sequence ? "a sequence" : "a tensor"));
  } else {
    v.has_value = false;  // elem_type may name the type; the value is absent
  }
  return out;
}

NamedValue read_value_proto(const std::string& path, ValueKind expected) {
  return parse_value_proto(detail::read_file_bytes(path, kMaxProtoBytes), path, expected);
}

NamedTensor read_tensor_proto(const std::string& path) {
  return parse_tensor_proto(detail::read_file_bytes(path, kMaxProtoBytes), path);
}

std::string serialize_tensor_proto(const std::string& name, const HostTensor& tensor) {
  if (!known_dtype(tensor.dtype))
    throw TensorIoError(
        fmt::format("cannot write dtype {} as a TensorProto", dtype_name(tensor.dtype)));
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype));
  for (int64_t d : tensor.dims) proto.add_dims(d);
  size_t count = tensor.element_count();
  if (tensor.dtype == LOOM_DTYPE_STRING) {
    if (tensor.strings.size() != count)
      throw TensorIoError("string tensor: element count does not match its shape");
    for (const auto& s : tensor.strings) proto.add_string_data(s);
  } else {
    if (tensor.data.size() != count * dtype_size(tensor.dtype))
      throw TensorIoError(fmt::format("tensor: {} data bytes do not match shape {} of {}",
                                      tensor.data.size(), tensor.shape_string(),
                                      dtype_name(tensor.dtype)));
    if (is_packed(tensor.dtype)) {
      std::string packed(*sdk::narrow::packed_size(tensor.dtype, count), '\0');
      sdk::narrow::pack(tensor.dtype, reinterpret_cast<const uint8_t*>(tensor.data.data()), count,
                        reinterpret_cast<uint8_t*>(packed.data()));
      proto.set_raw_data(std::move(packed));
    } else {
      proto.set_raw_data(tensor.data.data(), tensor.data.size());
    }
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) throw TensorIoError("TensorProto serialization failed");
  return bytes;
}

void write_tensor_proto(const std::string& path, const std::string& name,
                        const HostTensor& tensor) {
  std::string bytes;
  try {
    bytes = serialize_tensor_proto(name, tensor);
  } catch (const TensorIoError& e) {
    throw TensorIoError(fmt::format("{}: {}", path, e.what()));
  }
  detail::write_file_bytes(path, bytes);
}

}  // namespace loom::apps
