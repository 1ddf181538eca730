#include "tensor_compare.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <loom/narrow_types.hpp>
#include <loom_apps/dtype.hpp>

namespace loom::conformance {
namespace {

using loom::apps::HostTensor;

// Row-major multi-index of flat element `flat`, e.g. "[0, 2, 1]".
std::string index_text(const std::vector<int64_t>& dims, size_t flat) {
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t extent = dims[d] > 0 ? dims[d] : 1;
    index[d] = static_cast<int64_t>(flat % static_cast<size_t>(extent));
    flat /= static_cast<size_t>(extent);
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

bool close(double a, double e) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (a == e) return true;  // also equal infinities
  if (std::isinf(a) || std::isinf(e)) return false;
  return std::fabs(a - e) <= kAbsTolerance + kRelTolerance * std::fabs(e);
}

// Values of element i as numbers: one for real types, two for complex ones.
size_t components(loom_dtype_t dtype) {
  return dtype == LOOM_DTYPE_COMPLEX64 || dtype == LOOM_DTYPE_COMPLEX128 ? 2 : 1;
}

double component(const HostTensor& t, size_t i, size_t c) {
  if (t.dtype == LOOM_DTYPE_COMPLEX64) return t.as<float>()[2 * i + c];
  if (t.dtype == LOOM_DTYPE_COMPLEX128) return t.as<double>()[2 * i + c];
  return loom::apps::element_as_double(t.dtype, t.data.data(), i);
}

std::optional<std::string> compare_exact_bytes(const HostTensor& a, const HostTensor& e,
                                               size_t count) {
  size_t size = loom::apps::dtype_size(a.dtype);
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    bool equal;
    if (a.dtype == LOOM_DTYPE_BOOL)
      equal = (a.as<uint8_t>()[i] != 0) == (e.as<uint8_t>()[i] != 0);
    else if (loom::sdk::narrow::is_narrow_int(a.dtype))  // by value: a byte may not be normalized
      equal = loom::sdk::narrow::int_value(a.dtype, a.as<uint8_t>()[i]) ==
              loom::sdk::narrow::int_value(e.dtype, e.as<uint8_t>()[i]);
    else
      equal = std::memcmp(a.data.data() + i * size, e.data.data() + i * size, size) == 0;
    if (!equal && differing++ == 0) first = i;
  }
  if (differing == 0) return std::nullopt;
  // 64-bit integers print exactly through int64/uint64, others fit in a double.
  auto text = [&](const HostTensor& t) {
    if (t.dtype == LOOM_DTYPE_INT64) return fmt::format("{}", t.as<int64_t>()[first]);
    if (t.dtype == LOOM_DTYPE_UINT64) return fmt::format("{}", t.as<uint64_t>()[first]);
    return fmt::format("{}", loom::apps::element_as_double(t.dtype, t.data.data(), first));
  };
  return fmt::format("element {} is {}, expected {} ({} of {} elements differ)",
                     index_text(e.dims, first), text(a), text(e), differing, count);
}

}  // namespace

std::optional<std::string> compare_tensors(const HostTensor& actual, const HostTensor& expected) {
  using loom::apps::dtype_name;
  if (actual.dtype != expected.dtype)
    return fmt::format("dtype {}, expected {}", dtype_name(actual.dtype),
                       dtype_name(expected.dtype));
  if (actual.dims != expected.dims)
    return fmt::format("shape {}, expected {}", actual.shape_string(), expected.shape_string());
  size_t count = expected.element_count();

  if (expected.dtype == LOOM_DTYPE_STRING) {
    if (actual.strings.size() != count || expected.strings.size() != count)
      return fmt::format("string tensor holds {} elements, expected {}", actual.strings.size(),
                         count);
    for (size_t i = 0; i < count; ++i)
      if (actual.strings[i] != expected.strings[i])
        return fmt::format("element {} is \"{}\", expected \"{}\"", index_text(expected.dims, i),
                           actual.strings[i], expected.strings[i]);
    return std::nullopt;
  }
  size_t bytes = count * loom::apps::dtype_size(expected.dtype);
  if (actual.data.size() != bytes || expected.data.size() != bytes)
    return fmt::format("tensor holds {} bytes, expected {}", actual.data.size(), bytes);
  if (!loom::apps::dtype_is_float(expected.dtype) && components(expected.dtype) == 1)
    return compare_exact_bytes(actual, expected, count);

  size_t differing = 0, first = 0;
  double first_actual = 0, first_expected = 0;
  for (size_t i = 0; i < count; ++i) {
    for (size_t c = 0; c < components(expected.dtype); ++c) {
      double a = component(actual, i, c), e = component(expected, i, c);
      if (close(a, e)) continue;
      if (differing++ == 0) {
        first = i;
        first_actual = a;
        first_expected = e;
      }
      break;
    }
  }
  if (differing == 0) return std::nullopt;
  return fmt::format(
      "element {} is {:.9g}, expected {:.9g} (|diff| {:.3g} > atol {} + rtol {} * |expected|; "
      "{} of {} elements differ)",
      index_text(expected.dims, first), first_actual, first_expected,
      std::fabs(first_actual - first_expected), kAbsTolerance, kRelTolerance, differing, count);
}

std::optional<std::string> compare_values(const loom::apps::HostValue& actual,
                                          const loom::apps::HostValue& expected) {
  if (actual.kind != expected.kind)
    return fmt::format("got a {}, expected a {}", actual.kind_name(), expected.kind_name());
  bool optional = expected.kind == loom::apps::ValueKind::kOptionalTensor ||
                  expected.kind == loom::apps::ValueKind::kOptionalSequence;
  if (optional && actual.has_value != expected.has_value)
    return fmt::format("got {} optional, expected {}", actual.has_value ? "a present" : "an empty",
                       expected.has_value ? "a present one" : "an empty one");
  if (actual.tensors.size() != expected.tensors.size())
    return fmt::format("got {} tensors, expected {}", actual.tensors.size(),
                       expected.tensors.size());
  bool many = expected.kind == loom::apps::ValueKind::kSequence ||
              expected.kind == loom::apps::ValueKind::kOptionalSequence;
  for (size_t i = 0; i < expected.tensors.size(); ++i)
    if (auto diff = compare_tensors(actual.tensors[i], expected.tensors[i]))
      return many ? fmt::format("element {}: {}", i, *diff) : diff;
  return std::nullopt;
}

}  // namespace loom::conformance
