#include "npy_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <limits>
#include <loom/narrow_types.hpp>
#include <loom/plugin.hpp>
#include <loom_apps/dtype.hpp>

namespace loom::apps::npy_detail {
namespace {

// A recursive-descent reader for the small subset of Python literals NumPy writes.
class DictReader {
 public:
  DictReader(const std::string& text, const std::string& what) : text_(text), what_(what) {}

  NpyHeader read() {
    NpyHeader header;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = read_string();
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() != '\'' && peek() != '"')
          fail("structured dtypes (a list descr) are not supported; save a plain array");
        header.descr = read_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = read_bool();
        have_order = true;
      } else if (key == "shape") {
        header.shape = read_shape();
        have_shape = true;
      } else {
        fail(fmt::format("unexpected header key '{}'", key));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail("expected ',' or '}' in header");
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters after the header dictionary");
    if (!have_descr || !have_order || !have_shape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw TensorIoError(fmt::format("{}: malformed .npy header: {}", what_, message));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string read_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string s = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return s;
  }
  bool read_bool() {
    skip_space();
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("fortran_order must be True or False");
  }
  std::vector<int64_t> read_shape() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      int64_t value = 0;
      const char* begin = text_.data() + pos_;
      const char* end = text_.data() + text_.size();
      auto [ptr, ec] = std::from_chars(begin, end, value);
      if (ec != std::errc() || value < 0) fail("shape entries must be non-negative integers");
      pos_ += static_cast<size_t>(ptr - begin);
      // Python longs may carry an 'L' suffix in files written by Python 2.
      if (peek() == 'L') ++pos_;
      dims.push_back(value);
      if (dims.size() > LOOM_MAX_RANK)
        fail(fmt::format("rank above the supported maximum of {}", LOOM_MAX_RANK));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in shape");
    }
    ++pos_;
    return dims;
  }

  const std::string& text_;
  const std::string& what_;
  size_t pos_ = 0;
};

}  // namespace

NpyHeader parse_header_dict(const std::string& text, const std::string& what) {
  return DictReader(text, what).read();
}

NpyType parse_descr(const std::string& descr, const std::string& what, loom_dtype_t expected) {
  if (descr.size() < 2) throw TensorIoError(fmt::format("{}: invalid descr '{}'", what, descr));
  char order = descr[0];
  std::string code = descr.substr(1);
  bool one_byte = code == "b1" || code == "i1" || code == "u1" || code[0] == 'S';
  if (order == '>' && !one_byte)
    throw TensorIoError(fmt::format(
        "{}: big-endian data ('{}') is not supported; convert with arr.astype(arr.dtype."
        "newbyteorder('<'))",
        what, descr));
  if (order == '=' && std::endian::native != std::endian::little)
    throw TensorIoError(fmt::format("{}: native byte order of a big-endian host", what));
  if (order != '<' && order != '|' && order != '=' && order != '>')
    throw TensorIoError(fmt::format("{}: invalid byte order in descr '{}'", what, descr));

  static const struct {
    const char* code;
    loom_dtype_t dtype;
  } kTable[] = {
      {"f2", LOOM_DTYPE_FLOAT16},   {"f4", LOOM_DTYPE_FLOAT32},     {"f8", LOOM_DTYPE_FLOAT64},
      {"i1", LOOM_DTYPE_INT8},      {"i2", LOOM_DTYPE_INT16},       {"i4", LOOM_DTYPE_INT32},
      {"i8", LOOM_DTYPE_INT64},     {"u1", LOOM_DTYPE_UINT8},       {"u2", LOOM_DTYPE_UINT16},
      {"u4", LOOM_DTYPE_UINT32},    {"u8", LOOM_DTYPE_UINT64},      {"b1", LOOM_DTYPE_BOOL},
      {"c8", LOOM_DTYPE_COMPLEX64}, {"c16", LOOM_DTYPE_COMPLEX128}, {"V2", LOOM_DTYPE_BFLOAT16},
  };
  for (const auto& entry : kTable)
    if (code == entry.code) return NpyType{entry.dtype, NpyType::Text::kNone, 0};
  if (code == "V1") {
    // Opaque bytes: which narrow type they are is not in the file.
    if (sdk::narrow::is_narrow(expected)) return NpyType{expected, NpyType::Text::kNone, 0};
    throw TensorIoError(fmt::format(
        "{}: descr '{}' (opaque bytes, as numpy writes ml_dtypes' float8/int4/... arrays) is "
        "read only where the expected element type is one of those; {}",
        what, descr,
        expected == LOOM_DTYPE_UNDEFINED
            ? std::string("here it is not known")
            : fmt::format("here it is {}", sdk::dtype_name(expected))));
  }

  if (code[0] == 'S' || code[0] == 'U') {
    size_t width = 0;
    auto [ptr, ec] = std::from_chars(code.data() + 1, code.data() + code.size(), width);
    if (ec != std::errc() || ptr != code.data() + code.size() || width == 0 || width > (1u << 20))
      throw TensorIoError(fmt::format("{}: invalid string descr '{}'", what, descr));
    return NpyType{LOOM_DTYPE_STRING,
                   code[0] == 'S' ? NpyType::Text::kBytes : NpyType::Text::kUnicode, width};
  }
  throw TensorIoError(fmt::format(
      "{}: unsupported dtype '{}' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 c8 c16 S U, "
      "and V2 as bfloat16)",
      what, descr));
}

std::string descr_for(const HostTensor& tensor) {
  switch (tensor.dtype) {
    case LOOM_DTYPE_FLOAT16:
      return "<f2";
    case LOOM_DTYPE_FLOAT32:
      return "<f4";
    case LOOM_DTYPE_FLOAT64:
      return "<f8";
    case LOOM_DTYPE_INT8:
      return "|i1";
    case LOOM_DTYPE_INT16:
      return "<i2";
    case LOOM_DTYPE_INT32:
      return "<i4";
    case LOOM_DTYPE_INT64:
      return "<i8";
    case LOOM_DTYPE_UINT8:
      return "|u1";
    case LOOM_DTYPE_UINT16:
      return "<u2";
    case LOOM_DTYPE_UINT32:
      return "<u4";
    case LOOM_DTYPE_UINT64:
      return "<u8";
    case LOOM_DTYPE_BOOL:
      return "|b1";
    case LOOM_DTYPE_COMPLEX64:
      return "<c8";
    case LOOM_DTYPE_COMPLEX128:
      return "<c16";
    case LOOM_DTYPE_BFLOAT16:
      return "<V2";
    // The narrow types of ABI 1.6, one element per byte: what numpy writes for ml_dtypes'
    // float8/int4/... arrays (the descr does not say which one).
    case LOOM_DTYPE_FLOAT8E4M3FN:
    case LOOM_DTYPE_FLOAT8E4M3FNUZ:
    case LOOM_DTYPE_FLOAT8E5M2:
    case LOOM_DTYPE_FLOAT8E5M2FNUZ:
    case LOOM_DTYPE_UINT4:
    case LOOM_DTYPE_INT4:
    case LOOM_DTYPE_FLOAT4E2M1:
    case LOOM_DTYPE_FLOAT8E8M0:
    case LOOM_DTYPE_UINT2:
    case LOOM_DTYPE_INT2:
    case LOOM_DTYPE_FLOAT6E2M3:
    case LOOM_DTYPE_FLOAT6E3M2:
      return "|V1";
    case LOOM_DTYPE_STRING: {
      size_t width = 1;  // NumPy refuses zero-width 'S0' arrays on load
      for (const auto& s : tensor.strings) width = std::max(width, s.size());
      return fmt::format("|S{}", width);
    }
    case LOOM_DTYPE_UNDEFINED:
      break;
  }
  throw TensorIoError(fmt::format("cannot write dtype {} to .npy", dtype_name(tensor.dtype)));
}

}  // namespace loom::apps::npy_detail
