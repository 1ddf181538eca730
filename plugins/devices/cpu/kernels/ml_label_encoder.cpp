// ai.onnx.ml LabelEncoder (opsets 2 and 4): maps each element of X through keys -> values,
// elements without a key becoming the default.
//   keys: keys_strings, keys_int64s, keys_floats, or (opset 4) keys_tensor (string, integer or
//   floating-point); values likewise (values_tensor). X's type must be of the keys' kind (string,
//   integer or floating point); Y has the values' type and X's shape.
//   Default: default_string / default_int64 / default_float, or default_tensor (opset 4), else
//   the spec's "_Unused", -1 or -0.0. Floating-point keys compare as numbers, a NaN key matching
//   NaN (as onnxruntime does). A key given twice maps to its first value.
// Opset 1 is another operator in all but name: classes_strings lists the classes, a string X
// becomes its class's index (default_int64, -1, when absent) and an int64 X the string at that
// index (default_string, "_Unused", out of range).
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

enum class Kind { kString, kInt, kFloat };

Kind kind_of(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_STRING:
      return Kind::kString;
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return Kind::kFloat;
    default:
      return Kind::kInt;
  }
}

// One list of keys or values, in the representation of its kind.
struct Column {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  size_t size() const { return strings.size() + ints.size() + floats.size(); }
};

// The values of a tensor attribute (a constant) or of a plain list attribute.
Column column_of(const loom_value_info_t& t, const std::string& where, const char* what) {
  Column c;
  c.dtype = t.dtype;
  const size_t count = static_cast<size_t>(sdk::element_count(t.rank, t.dims));
  if (t.dtype == LOOM_DTYPE_STRING) {
    const auto* s = static_cast<const loom_string_t*>(t.data);
    for (size_t i = 0; i < count; ++i)
      c.strings.emplace_back(s[i].data ? s[i].data : "", s[i].size);
    return c;
  }
  if (t.dtype == LOOM_DTYPE_BOOL)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + what + " is bool, not string or number");
  if (count > 0 && !t.data) fail(LOOM_ERROR_INVALID_MODEL, where + ": " + what + " has no data");
  dispatch<kNumeric>(t.dtype, where + " " + what, [&]<typename T>() {
    const T* p = static_cast<const T*>(t.data);
    for (size_t i = 0; i < count; ++i) {
      if constexpr (std::is_integral_v<T>)
        c.ints.push_back(static_cast<int64_t>(p[i]));  // exact, beyond 2^53 too
      else
        c.floats.push_back(convert<double>(p[i]));
    }
  });
  return c;
}

std::optional<Column> read_column(const Attributes& a, const std::string& prefix, bool tensors,
                                  const std::string& where) {
  std::optional<Column> c;
  auto take = [&](Column&& next) {
    if (c) fail(LOOM_ERROR_INVALID_MODEL, where + ": more than one " + prefix + "_* attribute");
    c = std::move(next);
  };
  if (auto s = a.get_strings(prefix + "_strings")) {
    Column n;
    n.dtype = LOOM_DTYPE_STRING;
    for (const loom_string_t& v : *s) n.strings.emplace_back(v.data ? v.data : "", v.size);
    take(std::move(n));
  }
  if (auto i = a.get_ints(prefix + "_int64s")) {
    Column n;
    n.dtype = LOOM_DTYPE_INT64;
    n.ints.assign(i->begin(), i->end());
    take(std::move(n));
  }
  if (auto f = a.get_floats(prefix + "_floats")) {
    Column n;
    n.dtype = LOOM_DTYPE_FLOAT32;
    n.floats.assign(f->begin(), f->end());
    take(std::move(n));
  }
  if (tensors)
    if (const loom_value_info_t* t = a.get_tensor(prefix + "_tensor"))
      take(column_of(*t, where, (prefix + "_tensor").c_str()));
  return c;
}

void label_encoder(KernelContext& ctx) {
  const std::string where = ctx.where();
  const Attributes& a = ctx.attrs();
  const bool tensors = ctx.opset() >= 4;
  std::optional<Column> keys = read_column(a, "keys", tensors, where);
  std::optional<Column> values = read_column(a, "values", tensors, where);
  if (!keys || !values)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": keys_* and values_* attributes are required");
  if (keys->size() != values->size())
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + std::to_string(keys->size()) + " keys but " +
                                       std::to_string(values->size()) + " values");
  const loom_tensor_t& x = ctx.required_input(0);
  const Kind key_kind = kind_of(keys->dtype);
  if (kind_of(x.dtype) != key_kind || x.dtype == LOOM_DTYPE_BOOL)
    fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": X is " + sdk::dtype_name(x.dtype) +
                                          " but the keys are " + sdk::dtype_name(keys->dtype));

  // The default, in the values' representation.
  Column fallback;
  fallback.dtype = values->dtype;
  const loom_value_info_t* default_tensor = tensors ? a.get_tensor("default_tensor") : nullptr;
  if (default_tensor) {
    fallback = column_of(*default_tensor, where, "default_tensor");
    if (fallback.size() != 1 || kind_of(fallback.dtype) != kind_of(values->dtype))
      fail(LOOM_ERROR_INVALID_MODEL,
           where + ": default_tensor must hold one value of the values' type");
    fallback.dtype = values->dtype;
  } else {
    switch (kind_of(values->dtype)) {
      case Kind::kString:
        fallback.strings = {a.get_string("default_string", "_Unused")};
        break;
      case Kind::kInt:
        fallback.ints = {a.get_int("default_int64", -1)};
        break;
      case Kind::kFloat:
        fallback.floats = {a.get_float("default_float", -0.0f)};
        break;
    }
  }

  // Key -> index of its value (the first of a repeated key).
  std::unordered_map<std::string, size_t> by_string;
  std::map<int64_t, size_t> by_int;
  std::map<double, size_t> by_float;
  std::optional<size_t> nan_index;
  for (size_t i = 0; i < keys->size(); ++i) {
    if (key_kind == Kind::kString) {
      by_string.emplace(keys->strings[i], i);
    } else if (key_kind == Kind::kInt) {
      by_int.emplace(keys->ints[i], i);
    } else if (std::isnan(keys->floats[i])) {
      if (!nan_index) nan_index = i;
    } else {
      by_float.emplace(keys->floats[i], i);
    }
  }

  const auto count = static_cast<size_t>(sdk::element_count(x));
  // Index into values, or values->size() for the default.
  std::vector<size_t> found(count, values->size());
  if (key_kind == Kind::kString) {
    const auto* in = static_cast<const loom_string_t*>(x.data);
    for (size_t i = 0; i < count; ++i) {
      auto it = by_string.find(std::string(in[i].data ? in[i].data : "", in[i].size));
      if (it != by_string.end()) found[i] = it->second;
    }
  } else {
    dispatch<kNumeric>(x.dtype, where, [&]<typename T>() {
      const T* in = sdk::data_of<const T>(x);
      for (size_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<T>) {
          auto it = by_int.find(static_cast<int64_t>(in[i]));
          if (it != by_int.end()) found[i] = it->second;
        } else {
          const double v = convert<double>(in[i]);
          if (std::isnan(v)) {
            if (nan_index) found[i] = *nan_index;
          } else if (auto it = by_float.find(v); it != by_float.end()) {
            found[i] = it->second;
          }
        }
      }
    });
  }

  const std::vector<int64_t> dims = misc::dims_of(x);
  if (values->dtype == LOOM_DTYPE_STRING) {
    Tensor y = make_tensor(LOOM_DTYPE_STRING, dims);
    auto* views = static_cast<loom_string_t*>(y.view.data);
    for (size_t i = 0; i < count; ++i) {
      (*y.strings)[i] = found[i] < values->size() ? values->strings[found[i]] : fallback.strings[0];
      views[i] = {(*y.strings)[i].data(), (*y.strings)[i].size()};
    }
    ctx.set_output(0, std::move(y));
    return;
  }
  loom_tensor_t& y = ctx.allocate_output(0, values->dtype, dims);
  const bool ints = kind_of(values->dtype) == Kind::kInt;
  dispatch<kNumeric>(values->dtype, where, [&]<typename T>() {
    T* out = sdk::data_of<T>(y);
    for (size_t i = 0; i < count; ++i) {
      const Column& from = found[i] < values->size() ? *values : fallback;
      const size_t at = found[i] < values->size() ? found[i] : 0;
      if constexpr (std::is_integral_v<T>)
        out[i] = static_cast<T>(ints ? from.ints[at] : static_cast<int64_t>(from.floats[at]));
      else
        out[i] = convert<T>(ints ? static_cast<double>(from.ints[at]) : from.floats[at]);
    }
  });
}

void label_encoder_v1(KernelContext& ctx) {
  const Attributes& a = ctx.attrs();
  std::vector<std::string> classes;
  if (auto listed = a.get_strings("classes_strings"))
    for (const loom_string_t& c : *listed) classes.emplace_back(c.data ? c.data : "", c.size);
  const loom_tensor_t& x = ctx.required_input(0);
  const std::vector<int64_t> dims = misc::dims_of(x);
  const auto count = static_cast<size_t>(sdk::element_count(x));
  if (x.dtype == LOOM_DTYPE_STRING) {
    std::unordered_map<std::string, int64_t> index;
    for (size_t i = 0; i < classes.size(); ++i)
      index.emplace(classes[i], static_cast<int64_t>(i));  // a repeated class keeps its first
    const int64_t fallback = a.get_int("default_int64", -1);
    loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_INT64, dims);
    const auto* in = static_cast<const loom_string_t*>(x.data);
    auto* out = sdk::data_of<int64_t>(y);
    for (size_t i = 0; i < count; ++i) {
      auto it = index.find(std::string(in[i].data ? in[i].data : "", in[i].size));
      out[i] = it == index.end() ? fallback : it->second;
    }
    return;
  }
  if (x.dtype != LOOM_DTYPE_INT64)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be string or int64 (opset 1), got " + sdk::dtype_name(x.dtype));
  const std::string fallback = a.get_string("default_string", "_Unused");
  Tensor y = make_tensor(LOOM_DTYPE_STRING, dims);
  auto* views = static_cast<loom_string_t*>(y.view.data);
  const auto* in = sdk::data_of<const int64_t>(x);
  for (size_t i = 0; i < count; ++i) {
    const bool known = in[i] >= 0 && static_cast<uint64_t>(in[i]) < classes.size();
    (*y.strings)[i] = known ? classes[static_cast<size_t>(in[i])] : fallback;
    views[i] = {(*y.strings)[i].data(), (*y.strings)[i].size()};
  }
  ctx.set_output(0, std::move(y));
}

}  // namespace

LOOM_CPU_KERNEL_DOMAIN("ai.onnx.ml", "LabelEncoder", 1, label_encoder_v1, nullptr);
LOOM_CPU_KERNEL_DOMAIN("ai.onnx.ml", "LabelEncoder", 2, label_encoder, nullptr);

}  // namespace loom::cpu
