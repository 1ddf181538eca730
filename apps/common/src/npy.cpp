// .npy reading and writing; the header dictionary itself is parsed in npy_header.cpp.
#include <fmt/format.h>

#include <cstring>
#include <loom/narrow_types.hpp>
#include <loom_apps/dtype.hpp>
#include <loom_apps/npy.hpp>

#include "file_bytes.hpp"
#include "npy_header.hpp"

namespace loom::apps {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Far above anything NumPy writes (it keeps headers small), low enough to refuse junk early.
constexpr size_t kMaxHeaderSize = size_t{1} << 20;

uint32_t read_le(const std::string& bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

void append_utf8(std::string& out, uint32_t cp, const std::string& what) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    throw TensorIoError(fmt::format("{}: invalid unicode code point U+{:X}", what, cp));
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void read_strings(HostTensor& t, const npy_detail::NpyType& type, const char* data, size_t count,
                  const std::string& what) {
  t.strings.resize(count);
  for (size_t i = 0; i < count; ++i) {
    std::string& s = t.strings[i];
    if (type.text == npy_detail::NpyType::Text::kBytes) {
      const char* item = data + i * type.itemsize;
      s.assign(item, strnlen(item, type.itemsize));  // NumPy pads with NULs
    } else {
      for (size_t k = 0; k < type.itemsize; ++k) {
        uint32_t cp;
        std::memcpy(&cp, data + (i * type.itemsize + k) * 4, 4);
        if (cp == 0) break;
        append_utf8(s, cp, what);
      }
    }
  }
}

}  // namespace

HostTensor parse_npy(const std::string& bytes, const std::string& what, loom_dtype_t expected) {
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    throw TensorIoError(fmt::format("{}: not a .npy file (bad magic)", what));
  unsigned major = static_cast<unsigned char>(bytes[6]);
  unsigned minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw TensorIoError(
        fmt::format("{}: unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 "
                    "are supported)",
                    what, major, minor));
  size_t len_width = major == 1 ? 2 : 4;
  size_t header_start = kMagicSize + 2 + len_width;
  if (bytes.size() < header_start)
    throw TensorIoError(fmt::format("{}: truncated .npy preamble", what));
  size_t header_len = read_le(bytes, kMagicSize + 2, len_width);
  if (header_len > kMaxHeaderSize)
    throw TensorIoError(
        fmt::format("{}: .npy header of {} bytes is implausibly large", what, header_len));
  if (header_len > bytes.size() - header_start)
    throw TensorIoError(fmt::format("{}: header length {} runs past the end of the {}-byte file",
                                    what, header_len, bytes.size()));
  // Version 3.0 headers are UTF-8; the keys and values we accept are all ASCII anyway.
  npy_detail::NpyHeader header =
      npy_detail::parse_header_dict(bytes.substr(header_start, header_len), what);
  if (header.fortran_order)
    throw TensorIoError(fmt::format(
        "{}: Fortran-order arrays are not supported; save np.ascontiguousarray(arr)", what));
  npy_detail::NpyType type = npy_detail::parse_descr(header.descr, what, expected);

  HostTensor t;
  t.dtype = type.dtype;
  t.dims = header.shape;
  size_t item_bytes =
      type.dtype == LOOM_DTYPE_STRING
          ? type.itemsize * (type.text == npy_detail::NpyType::Text::kUnicode ? 4 : 1)
          : dtype_size(type.dtype);
  size_t data_start = header_start + header_len;
  size_t available = bytes.size() - data_start;
  // Bounded by the file: a header cannot make us allocate more than the file holds.
  size_t count = checked_element_count(t.dims, what, SIZE_MAX / item_bytes);
  if (count * item_bytes != available)
    throw TensorIoError(fmt::format(
        "{}: data size mismatch: shape {} of {} needs {} bytes, the file has {} after the header",
        what, t.shape_string(), header.descr, count * item_bytes, available));
  const char* data = bytes.data() + data_start;
  if (type.dtype == LOOM_DTYPE_STRING) {
    read_strings(t, type, data, count, what);
  } else {
    t.data.resize(available);
    if (available > 0) std::memcpy(t.data.data(), data, available);  // empty: data() is null
    if (type.dtype == LOOM_DTYPE_BOOL) {
      for (std::byte& b : t.data)
        if (static_cast<unsigned>(b) > 1)
          throw TensorIoError(fmt::format("{}: bool element with value {} (must be 0 or 1)", what,
                                          static_cast<unsigned>(b)));
    }
    // ml_dtypes keeps only the low bits of a sub-byte element (int4 -8 is 0x08); Loom's bytes
    // are sign-extended.
    if (sdk::narrow::is_narrow(type.dtype))
      for (std::byte& b : t.data)
        b = static_cast<std::byte>(
            sdk::narrow::from_packed_bits(type.dtype, static_cast<uint8_t>(b)));
  }
  return t;
}

HostTensor read_npy(const std::string& path, loom_dtype_t expected) {
  return parse_npy(detail::read_file_bytes(path), path, expected);
}

std::string serialize_npy(const HostTensor& tensor) {
  std::string descr = npy_detail::descr_for(tensor);
  size_t count = tensor.element_count();
  std::string shape;
  for (int64_t d : tensor.dims) shape += fmt::format("{}, ", d);
  // Python tuple syntax: "(2, 3)", "(5,)", "()".
  if (!shape.empty()) shape.resize(shape.size() - (tensor.dims.size() == 1 ? 1 : 2));
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // Pad with spaces and a final newline so the data starts 64-byte aligned.
  auto padded = [&](size_t len_width) {
    size_t unpadded = kMagicSize + 2 + len_width + dict.size() + 1;
    return dict.size() + 1 + (64 - unpadded % 64) % 64;
  };
  size_t len_width = padded(2) <= 0xFFFF ? 2 : 4;  // version 1.0 unless the header needs 2.0
  dict.append(padded(len_width) - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(len_width == 2 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < len_width; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xFF);
  out += dict;
  if (tensor.dtype == LOOM_DTYPE_STRING) {
    if (tensor.strings.size() != count)
      throw TensorIoError("string tensor: element count does not match its shape");
    size_t width = std::stoul(descr.substr(2));
    for (const auto& s : tensor.strings) {
      out += s;
      out.append(width - s.size(), '\0');
    }
  } else {
    if (tensor.data.size() != count * dtype_size(tensor.dtype))
      throw TensorIoError(fmt::format("tensor: {} data bytes do not match shape {} of {}",
                                      tensor.data.size(), tensor.shape_string(),
                                      dtype_name(tensor.dtype)));
    size_t start = out.size();
    out.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size());
    // The bits ml_dtypes reads (a sign-extended int4 byte as its low nibble).
    if (sdk::narrow::is_narrow(tensor.dtype))
      for (size_t i = start; i < out.size(); ++i)
        out[i] =
            static_cast<char>(static_cast<uint8_t>(out[i]) & sdk::narrow::value_mask(tensor.dtype));
  }
  return out;
}

void write_npy(const std::string& path, const HostTensor& tensor) {
  std::string bytes;
  try {
    bytes = serialize_npy(tensor);
  } catch (const TensorIoError& e) {
    throw TensorIoError(fmt::format("{}: {}", path, e.what()));
  }
  detail::write_file_bytes(path, bytes);
}

}  // namespace loom::apps
