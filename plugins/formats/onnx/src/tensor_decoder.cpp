#include "tensor_decoder.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <loom/narrow_types.hpp>
#include <loom/plugin.hpp>

#include "checked_math.hpp"
#include "dtypes.hpp"

namespace loom::onnx {
namespace {

// Something valid to point at for empty tensors: builders may memcpy from `data`.
constexpr uint64_t kEmpty = 0;

[[noreturn]] void invalid(const std::string& what, const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, what + ": " + message);
}

// The typed repeated fields of TensorProto, and which dtypes each may carry.
enum class Field { kNone, kFloat, kInt32, kInt64, kDouble, kUint64, kString };

const char* field_name(Field f) {
  switch (f) {
    case Field::kFloat:
      return "float_data";
    case Field::kInt32:
      return "int32_data";
    case Field::kInt64:
      return "int64_data";
    case Field::kDouble:
      return "double_data";
    case Field::kUint64:
      return "uint64_data";
    case Field::kString:
      return "string_data";
    default:
      return "no field";
  }
}

Field field_for(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_COMPLEX64:
      return Field::kFloat;
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_UINT16:
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_BOOL:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return Field::kInt32;
    case LOOM_DTYPE_INT64:
      return Field::kInt64;
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_COMPLEX128:
      return Field::kDouble;
    case LOOM_DTYPE_UINT32:
    case LOOM_DTYPE_UINT64:
      return Field::kUint64;
    case LOOM_DTYPE_STRING:
      return Field::kString;
    default:
      // The narrow types keep bytes in int32_data: one element each (float8, float6, e8m0) or
      // one packed byte each (the 4- and 2-bit types).
      return sdk::narrow::is_narrow(t) ? Field::kInt32 : Field::kNone;
  }
}

// Values per element in the typed field (complex numbers are stored as two reals).
int64_t values_per_element(loom_dtype_t t) {
  return t == LOOM_DTYPE_COMPLEX64 || t == LOOM_DTYPE_COMPLEX128 ? 2 : 1;
}

// The sub-byte types whose file form packs several elements per byte (float6: 4 in 3 bytes).
bool is_packed(loom_dtype_t t) {
  int bits = sdk::narrow::packed_bits(t);
  return bits != 0 && bits < 8;
}

// Values the typed field must hold for `count` elements.
std::optional<uint64_t> typed_values(loom_dtype_t t, uint64_t count) {
  // int32_data of the 4- and 2-bit types holds the packed bytes, as raw_data would.
  int bits = sdk::narrow::packed_bits(t);
  if (bits == 4 || bits == 2) return sdk::narrow::packed_size(t, count);
  return checked_mul(count, static_cast<uint64_t>(values_per_element(t)));
}

// Unpacks `count` sub-byte elements read from the file into one byte each (Loom's in-memory
// form); `packed` holds exactly packed_size(dtype, count) bytes, checked by the caller.
void unpack_into(DecodedTensor& out, const uint8_t* packed, uint64_t count) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  sdk::narrow::unpack(out.dtype, packed, count, bytes.data());
  out.owned = std::move(bytes);
  out.data = out.owned.empty() ? static_cast<const void*>(&kEmpty) : out.owned.data();
  out.size = out.owned.size();
  out.mapping.reset();  // `packed` may have pointed into it; nothing does now
}

// int32_data of a narrow type: each value is a byte (an element, or for the 4- and 2-bit types
// a packed byte of several).
void narrow_from_int32(const ::onnx::TensorProto& t, const std::string& what, uint64_t count,
                       DecodedTensor& out) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.int32_data_size()));
  for (int i = 0; i < t.int32_data_size(); ++i) {
    int32_t v = t.int32_data(i);
    if (v < 0 || v > 255)
      invalid(what, "int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
                        " is not a byte of " + sdk::dtype_name(out.dtype));
    bytes[i] = static_cast<uint8_t>(v);
  }
  if (is_packed(out.dtype) && sdk::narrow::packed_bits(out.dtype) != 6) {
    unpack_into(out, bytes.data(), count);
    return;
  }
  // One element per value; float6 uses the low 6 bits, as the ONNX reference reads it.
  for (uint8_t& b : bytes) b = sdk::narrow::from_packed_bits(out.dtype, b);
  out.owned = std::move(bytes);
  out.data = out.owned.empty() ? static_cast<const void*>(&kEmpty) : out.owned.data();
  out.size = out.owned.size();
}

int field_count(const ::onnx::TensorProto& t, Field f) {
  switch (f) {
    case Field::kFloat:
      return t.float_data_size();
    case Field::kInt32:
      return t.int32_data_size();
    case Field::kInt64:
      return t.int64_data_size();
    case Field::kDouble:
      return t.double_data_size();
    case Field::kUint64:
      return t.uint64_data_size();
    case Field::kString:
      return t.string_data_size();
    default:
      return 0;
  }
}

// Narrows int32_data values to `T`, refusing values outside [lo, hi] (the 16-bit float types
// store their bit pattern and are accepted as signed or unsigned 16-bit).
template <typename T>
void narrow_int32(const ::onnx::TensorProto& t, const std::string& what, int64_t lo, int64_t hi,
                  DecodedTensor& out) {
  out.owned.resize(static_cast<size_t>(t.int32_data_size()) * sizeof(T));
  T* dst = reinterpret_cast<T*>(out.owned.data());
  for (int i = 0; i < t.int32_data_size(); ++i) {
    int32_t v = t.int32_data(i);
    if (v < lo || v > hi)
      invalid(what, "int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
                        " does not fit " + sdk::dtype_name(out.dtype));
    // Modular narrowing keeps the low bits: the value, or the 16-bit float's bit pattern.
    dst[i] = static_cast<T>(static_cast<uint32_t>(v));
  }
}

void decode_typed(const ::onnx::TensorProto& t, const std::string& what, Field f, uint64_t count,
                  DecodedTensor& out) {
  if (sdk::narrow::is_narrow(out.dtype)) {
    narrow_from_int32(t, what, count, out);
    return;
  }
  switch (out.dtype) {
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_COMPLEX64:
      out.data = t.float_data().data();
      out.size = t.float_data_size() * sizeof(float);
      return;
    case LOOM_DTYPE_INT32:
      out.data = t.int32_data().data();
      out.size = t.int32_data_size() * sizeof(int32_t);
      return;
    case LOOM_DTYPE_INT8:
      narrow_int32<int8_t>(t, what, -128, 127, out);
      break;
    case LOOM_DTYPE_UINT8:
      narrow_int32<uint8_t>(t, what, 0, 255, out);
      break;
    case LOOM_DTYPE_INT16:
      narrow_int32<int16_t>(t, what, -32768, 32767, out);
      break;
    case LOOM_DTYPE_UINT16:
      narrow_int32<uint16_t>(t, what, 0, 65535, out);
      break;
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      narrow_int32<uint16_t>(t, what, -32768, 65535, out);
      break;
    case LOOM_DTYPE_BOOL: {
      out.owned.resize(static_cast<size_t>(t.int32_data_size()));
      for (int i = 0; i < t.int32_data_size(); ++i) out.owned[i] = t.int32_data(i) != 0;
      break;
    }
    case LOOM_DTYPE_INT64:
      out.data = t.int64_data().data();
      out.size = t.int64_data_size() * sizeof(int64_t);
      return;
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_COMPLEX128:
      out.data = t.double_data().data();
      out.size = t.double_data_size() * sizeof(double);
      return;
    case LOOM_DTYPE_UINT64:
      out.data = t.uint64_data().data();
      out.size = t.uint64_data_size() * sizeof(uint64_t);
      return;
    case LOOM_DTYPE_UINT32: {
      out.owned.resize(static_cast<size_t>(t.uint64_data_size()) * sizeof(uint32_t));
      auto* dst = reinterpret_cast<uint32_t*>(out.owned.data());
      for (int i = 0; i < t.uint64_data_size(); ++i) {
        uint64_t v = t.uint64_data(i);
        if (v > std::numeric_limits<uint32_t>::max())
          invalid(what, "uint64_data[" + std::to_string(i) + "] = " + std::to_string(v) +
                            " does not fit uint32");
        dst[i] = static_cast<uint32_t>(v);
      }
      break;
    }
    case LOOM_DTYPE_STRING: {
      out.strings.resize(static_cast<size_t>(t.string_data_size()));
      for (int i = 0; i < t.string_data_size(); ++i)
        out.strings[i] = {t.string_data(i).data(), t.string_data(i).size()};
      out.data = out.strings.data();
      out.size = out.strings.size() * sizeof(loom_string_t);
      return;
    }
    default:
      invalid(what, std::string("cannot decode ") + field_name(f));
  }
  out.data = out.owned.data();
  out.size = out.owned.size();
}

// raw_data and external data are little-endian; big-endian hosts swap into owned storage.
void to_native_order(DecodedTensor& out) {
  if constexpr (std::endian::native == std::endian::big) {
    size_t width = sdk::dtype_size(out.dtype);
    if (out.dtype == LOOM_DTYPE_COMPLEX64) width = 4;
    if (out.dtype == LOOM_DTYPE_COMPLEX128) width = 8;
    const auto* src = static_cast<const uint8_t*>(out.data);
    out.owned.assign(src, src + out.size);
    for (size_t i = 0; i + width <= out.owned.size(); i += width)
      std::reverse(out.owned.begin() + i, out.owned.begin() + i + width);
    out.data = out.owned.data();
    out.mapping.reset();
  }
}

}  // namespace

DecodedTensor decode_tensor(const ::onnx::TensorProto& t, const std::string& what,
                            ExternalData& external, const RawDataSpan* lifted_raw_data) {
  DecodedTensor out;
  const bool has_raw_data = lifted_raw_data ? lifted_raw_data->has_value() : t.has_raw_data();
  const std::span<const uint8_t> raw_data =
      lifted_raw_data
          ? lifted_raw_data->value_or(std::span<const uint8_t>())
          : std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.raw_data().data()),
                                     t.raw_data().size());
  if (t.data_type() == 0) invalid(what, "data_type is not set");
  out.dtype = dtype_from_onnx(t.data_type());
  if (out.dtype == LOOM_DTYPE_UNDEFINED)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, what + ": element type " + onnx_type_name(t.data_type()) +
                                          " is not supported by Loom");
  if (t.dims_size() > LOOM_MAX_RANK)
    invalid(what, "rank " + std::to_string(t.dims_size()) + " exceeds Loom's maximum of " +
                      std::to_string(LOOM_MAX_RANK));
  out.dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : out.dims)
    if (d < 0) invalid(what, "negative dimension in shape " + format_shape(out.dims));
  auto count = element_count(out.dims);
  if (!count) invalid(what, "shape " + format_shape(out.dims) + " has too many elements");
  if (t.has_segment())
    sdk::fail(LOOM_ERROR_UNSUPPORTED, what + ": segmented tensors are not supported");

  const std::string type_desc = format_shape(out.dims) + " " + sdk::dtype_name(out.dtype);
  const bool is_string = out.dtype == LOOM_DTYPE_STRING;
  // What the file holds: the sub-byte types are packed there (ceil(count * bits / 8) bytes)
  // and unpacked to a byte per element below.
  const bool packed = is_packed(out.dtype);
  std::optional<size_t> need =
      is_string ? std::optional<size_t>(0)
      : packed  ? sdk::narrow::packed_size(out.dtype, static_cast<uint64_t>(*count))
                : byte_size(*count, sdk::dtype_size(out.dtype));
  if (!need) invalid(what, "shape " + type_desc + " needs more bytes than addressable");

  // Exactly one place may hold the data.
  const bool external_data = t.data_location() == ::onnx::TensorProto::EXTERNAL;
  std::vector<const char*> sources;
  if (external_data) sources.push_back("external data");
  if (has_raw_data && !raw_data.empty()) sources.push_back("raw_data");
  for (Field f : {Field::kFloat, Field::kInt32, Field::kInt64, Field::kDouble, Field::kUint64,
                  Field::kString})
    if (field_count(t, f) > 0) sources.push_back(field_name(f));
  if (sources.size() > 1)
    invalid(what, std::string("holds data both in ") + sources[0] + " and in " + sources[1]);

  out.data = &kEmpty;
  out.size = 0;
  if (external_data) {
    if (is_string) invalid(what, "string tensors cannot be stored as external data");
    ExternalData::View v = external.read(t, what, *need);
    if (v.size) out.data = v.data;
    out.size = v.size;
    out.mapping = std::move(v.keep_alive);
    if (packed) {
      unpack_into(out, static_cast<const uint8_t*>(out.data), static_cast<uint64_t>(*count));
      return out;
    }
    to_native_order(out);
    return out;
  }
  if (sources.empty()) {
    if (*count == 0) return out;
    if (!has_raw_data)
      invalid(what, "shape " + type_desc + " has " + std::to_string(*count) +
                        " elements but the tensor holds no data");
  }
  if (sources.empty() || sources[0] == std::string("raw_data")) {
    if (is_string) invalid(what, "string tensors cannot use raw_data; use string_data");
    if (raw_data.size() != *need)
      invalid(what, "raw_data has " + std::to_string(raw_data.size()) + " bytes but shape " +
                        type_desc + " needs " + std::to_string(*need));
    if (packed) {
      unpack_into(out, raw_data.data(), static_cast<uint64_t>(*count));
      return out;
    }
    if (!raw_data.empty()) out.data = raw_data.data();  // else the non-NULL kEmpty
    out.size = *need;
    to_native_order(out);
    return out;
  }
  Field expected = field_for(out.dtype);
  Field present = Field::kNone;
  for (Field f : {Field::kFloat, Field::kInt32, Field::kInt64, Field::kDouble, Field::kUint64,
                  Field::kString})
    if (field_count(t, f) > 0) present = f;
  if (present != expected)
    invalid(what, std::string(sdk::dtype_name(out.dtype)) + " data must be in " +
                      field_name(expected) + ", not " + field_name(present));
  auto values = typed_values(out.dtype, static_cast<uint64_t>(*count));
  if (!values || static_cast<uint64_t>(field_count(t, present)) != *values)
    invalid(what, std::string(field_name(present)) + " has " +
                      std::to_string(field_count(t, present)) + " values but shape " + type_desc +
                      " needs " + (values ? std::to_string(*values) : "more than addressable"));
  decode_typed(t, what, present, static_cast<uint64_t>(*count), out);
  if (out.size == 0) out.data = &kEmpty;
  return out;
}

DecodedTensor decode_sparse_tensor(const ::onnx::SparseTensorProto& t, const std::string& what,
                                   ExternalData& external) {
  if (!t.has_values()) invalid(what, "sparse tensor has no values");
  DecodedTensor values = decode_tensor(t.values(), what + " values", external);
  if (values.dims.size() != 1)
    invalid(what, "sparse values must be 1-D, got shape " + format_shape(values.dims));
  const int64_t nnz = values.dims[0];

  DecodedTensor out;
  out.dtype = values.dtype;
  if (t.dims_size() > LOOM_MAX_RANK)
    invalid(what, "rank " + std::to_string(t.dims_size()) + " exceeds Loom's maximum of " +
                      std::to_string(LOOM_MAX_RANK));
  out.dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : out.dims)
    if (d < 0) invalid(what, "negative dimension in dense shape " + format_shape(out.dims));
  auto count = element_count(out.dims);
  const size_t elem = sdk::dtype_size(out.dtype);
  auto bytes = count ? byte_size(*count, elem) : std::nullopt;
  if (!bytes || *bytes > kMaxDensifiedBytes)
    invalid(what, "dense shape " + format_shape(out.dims) + " " + sdk::dtype_name(out.dtype) +
                      " exceeds the " + std::to_string(kMaxDensifiedBytes >> 30) +
                      " GiB limit for densified sparse tensors");
  if (nnz > *count)
    invalid(what, std::to_string(nnz) + " sparse values exceed the " + std::to_string(*count) +
                      " elements of dense shape " + format_shape(out.dims));

  if (!t.has_indices() && nnz > 0) invalid(what, "sparse tensor has values but no indices");
  std::vector<int64_t> linear(static_cast<size_t>(nnz));
  if (nnz > 0) {
    DecodedTensor indices = decode_tensor(t.indices(), what + " indices", external);
    if (indices.dtype != LOOM_DTYPE_INT64)
      invalid(what,
              std::string("sparse indices must be int64, got ") + sdk::dtype_name(indices.dtype));
    const int64_t* idx = static_cast<const int64_t*>(indices.data);
    const size_t rank = out.dims.size();
    if (indices.dims.size() == 1 && indices.dims[0] == nnz) {
      for (int64_t i = 0; i < nnz; ++i) linear[i] = idx[i];
    } else if (indices.dims.size() == 2 && indices.dims[0] == nnz &&
               indices.dims[1] == static_cast<int64_t>(rank)) {
      for (int64_t i = 0; i < nnz; ++i) {
        int64_t flat = 0;
        for (size_t k = 0; k < rank; ++k) {
          int64_t c = idx[i * static_cast<int64_t>(rank) + static_cast<int64_t>(k)];
          if (c < 0 || c >= out.dims[k])
            invalid(what, "sparse index " + std::to_string(i) + " coordinate " + std::to_string(k) +
                              " = " + std::to_string(c) + " is outside dense shape " +
                              format_shape(out.dims));
          flat = flat * out.dims[k] + c;  // < count, which fits int64
        }
        linear[i] = flat;
      }
    } else {
      invalid(what, "sparse indices have shape " + format_shape(indices.dims) + "; expected " +
                        std::to_string(nnz) + " or " + std::to_string(nnz) + "x" +
                        std::to_string(rank));
    }
    for (int64_t i = 0; i < nnz; ++i) {
      if (linear[i] < 0 || linear[i] >= *count)
        invalid(what, "sparse index " + std::to_string(i) + " = " + std::to_string(linear[i]) +
                          " is outside dense shape " + format_shape(out.dims));
      if (i > 0 && linear[i] <= linear[i - 1])
        invalid(what,
                "sparse indices must be strictly increasing (index " + std::to_string(i) + ")");
    }
  }

  if (out.dtype == LOOM_DTYPE_STRING) {
    out.strings.assign(static_cast<size_t>(*count), loom_string_t{"", 0});
    const auto* src = static_cast<const loom_string_t*>(values.data);
    for (int64_t i = 0; i < nnz; ++i) out.strings[linear[i]] = src[i];
    out.data = out.strings.empty() ? static_cast<const void*>(&kEmpty) : out.strings.data();
    out.size = out.strings.size() * sizeof(loom_string_t);
    return out;
  }
  out.owned.assign(*bytes, 0);
  const auto* src = static_cast<const uint8_t*>(values.data);
  for (int64_t i = 0; i < nnz; ++i)
    std::memcpy(out.owned.data() + linear[i] * elem, src + i * elem, elem);
  out.data = out.owned.empty() ? static_cast<const void*>(&kEmpty) : out.owned.data();
  out.size = out.owned.size();
  return out;
}

}  // namespace loom::onnx
