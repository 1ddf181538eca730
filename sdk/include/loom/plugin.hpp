// loom/plugin.hpp -- header-only C++20 helpers for plugin authors.
//
// Nothing here crosses the ABI: it wraps loom/plugin.h so a plugin can be written with
// exceptions and spans inside, and every entry point turns exceptions into status objects
// (loom::sdk::guard). Only the C ABI is stable; these helpers are compiled into each plugin.
#pragma once

#include <loom/plugin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::sdk {

// The host API the plugin was loaded with; set by the entry function (set_host) before any
// other helper runs. One host per process.
inline const loom_host_api_t*& host_api() {
  static const loom_host_api_t* api = nullptr;
  return api;
}
inline void set_host(const loom_host_api_t* api) {
  host_api() = api;
}

// An error with a status code; thrown inside plugins, converted at the ABI boundary.
class Error : public std::runtime_error {
 public:
  Error(loom_status_code_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  loom_status_code_t code() const noexcept { return code_; }

 private:
  loom_status_code_t code_;
};

[[noreturn]] inline void fail(loom_status_code_t code, const std::string& message) {
  throw Error(code, message);
}

inline loom_status_t* make_status(loom_status_code_t code, const std::string& message) {
  const loom_host_api_t* api = host_api();
  return api ? api->status_new(code, message.c_str()) : nullptr;
}

// Runs fn and converts any exception into a status. Use at every ABI entry point.
template <typename Fn>
loom_status_t* guard(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_status(LOOM_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return make_status(LOOM_ERROR_INTERNAL, e.what());
  } catch (...) {
    return make_status(LOOM_ERROR_INTERNAL, "unknown exception in plugin");
  }
}

// Throws if a status returned by the host is an error (and frees it).
inline void check(loom_status_t* status) {
  if (!status) return;
  const loom_host_api_t* api = host_api();
  loom_status_code_t code = api->status_code(status);
  std::string message = api->status_message(status);
  api->status_free(status);
  throw Error(code, message);
}

inline void log(loom_log_level_t level, const char* source, const std::string& message) {
  if (const loom_host_api_t* api = host_api()) api->log(level, source, message.c_str());
}

// ---- data types -------------------------------------------------------------------------

inline size_t dtype_size(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_UINT32:
      return 4;
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_BOOL:
    // ABI 1.6's narrow types: one element per byte (see loom_dtype_t).
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
      return 1;
    case LOOM_DTYPE_UINT16:
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return 2;
    case LOOM_DTYPE_INT64:
    case LOOM_DTYPE_UINT64:
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_COMPLEX64:
      return 8;
    case LOOM_DTYPE_COMPLEX128:
      return 16;
    case LOOM_DTYPE_STRING:
      return sizeof(loom_string_t);
    default:
      return 0;
  }
}

inline const char* dtype_name(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT32:
      return "float32";
    case LOOM_DTYPE_UINT8:
      return "uint8";
    case LOOM_DTYPE_INT8:
      return "int8";
    case LOOM_DTYPE_UINT16:
      return "uint16";
    case LOOM_DTYPE_INT16:
      return "int16";
    case LOOM_DTYPE_INT32:
      return "int32";
    case LOOM_DTYPE_INT64:
      return "int64";
    case LOOM_DTYPE_STRING:
      return "string";
    case LOOM_DTYPE_BOOL:
      return "bool";
    case LOOM_DTYPE_FLOAT16:
      return "float16";
    case LOOM_DTYPE_FLOAT64:
      return "float64";
    case LOOM_DTYPE_UINT32:
      return "uint32";
    case LOOM_DTYPE_UINT64:
      return "uint64";
    case LOOM_DTYPE_COMPLEX64:
      return "complex64";
    case LOOM_DTYPE_COMPLEX128:
      return "complex128";
    case LOOM_DTYPE_BFLOAT16:
      return "bfloat16";
    // The names ONNX gives them (TensorProto.DataType, lower case).
    case LOOM_DTYPE_FLOAT8E4M3FN:
      return "float8e4m3fn";
    case LOOM_DTYPE_FLOAT8E4M3FNUZ:
      return "float8e4m3fnuz";
    case LOOM_DTYPE_FLOAT8E5M2:
      return "float8e5m2";
    case LOOM_DTYPE_FLOAT8E5M2FNUZ:
      return "float8e5m2fnuz";
    case LOOM_DTYPE_UINT4:
      return "uint4";
    case LOOM_DTYPE_INT4:
      return "int4";
    case LOOM_DTYPE_FLOAT4E2M1:
      return "float4e2m1";
    case LOOM_DTYPE_FLOAT8E8M0:
      return "float8e8m0";
    case LOOM_DTYPE_UINT2:
      return "uint2";
    case LOOM_DTYPE_INT2:
      return "int2";
    case LOOM_DTYPE_FLOAT6E2M3:
      return "float6e2m3";
    case LOOM_DTYPE_FLOAT6E3M2:
      return "float6e3m2";
    default:
      return "undefined";
  }
}

// ---- graph views ------------------------------------------------------------------------

// Read access to a node's attributes with defaults, throwing clear errors on type mismatch.
class Attributes {
 public:
  explicit Attributes(const loom_node_t& node) : node_(node) {}

  const loom_attribute_t* find(std::string_view name) const {
    for (size_t i = 0; i < node_.num_attributes; ++i)
      if (name == node_.attributes[i]->name) return node_.attributes[i];
    return nullptr;
  }
  bool has(std::string_view name) const { return find(name) != nullptr; }

  int64_t get_int(std::string_view name, int64_t fallback) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_INT);
    return a ? a->i : fallback;
  }
  float get_float(std::string_view name, float fallback) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_FLOAT);
    return a ? a->f : fallback;
  }
  std::string get_string(std::string_view name, std::string fallback) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_STRING);
    return a ? std::string(a->s, a->s_size) : fallback;
  }
  std::optional<std::span<const int64_t>> get_ints(std::string_view name) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_INTS);
    if (!a) return std::nullopt;
    return std::span<const int64_t>(a->ints, a->count);
  }
  std::optional<std::span<const float>> get_floats(std::string_view name) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_FLOATS);
    if (!a) return std::nullopt;
    return std::span<const float>(a->floats, a->count);
  }
  std::optional<std::span<const loom_string_t>> get_strings(std::string_view name) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_STRINGS);
    if (!a) return std::nullopt;
    return std::span<const loom_string_t>(a->strings, a->count);
  }
  const loom_value_info_t* get_tensor(std::string_view name) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_TENSOR);
    return a ? a->tensor : nullptr;
  }
  const loom_graph_t* get_graph(std::string_view name) const {
    const loom_attribute_t* a = typed(name, LOOM_ATTR_GRAPH);
    return a ? a->graph : nullptr;
  }

 private:
  const loom_attribute_t* typed(std::string_view name, loom_attr_type_t type) const {
    const loom_attribute_t* a = find(name);
    if (a && a->type != type)
      fail(LOOM_ERROR_INVALID_MODEL, std::string(node_.op_type) + " node '" + node_.name +
                                         "': attribute '" + std::string(name) +
                                         "' has the wrong type");
    return a;
  }
  const loom_node_t& node_;
};

// Value of input `i` of `node` in `graph`, or nullptr if omitted.
inline const loom_value_info_t* node_input(const loom_graph_t& graph, const loom_node_t& node,
                                           size_t i) {
  if (i >= node.num_inputs || node.inputs[i] < 0) return nullptr;
  return graph.values[node.inputs[i]];
}
inline const loom_value_info_t* node_output(const loom_graph_t& graph, const loom_node_t& node,
                                            size_t i) {
  if (i >= node.num_outputs || node.outputs[i] < 0) return nullptr;
  return graph.values[node.outputs[i]];
}

// ---- tensors ----------------------------------------------------------------------------

// ---- checked size arithmetic ------------------------------------------------------------
//
// Every size computed from a model's data (shapes fed at run time, shapes a kernel derives from
// input values, counts and offsets built from them) goes through these. A hostile model can ask
// for extents whose product wraps int64 back to a small number; an unchecked product then sizes
// a buffer smaller than the loops that index it (docs/limits.md).

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of the extents, or nullopt when one is negative or the product overflows int64. A
// zero extent anywhere makes the product 0 however large the others are.
inline std::optional<int64_t> try_element_count(std::span<const int64_t> dims) {
  for (int64_t d : dims)
    if (d < 0) return std::nullopt;
  for (int64_t d : dims)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

// count * element_size, or nullopt when count is negative or the product does not fit size_t.
inline std::optional<size_t> try_byte_size(int64_t count, size_t element_size) {
  if (count < 0) return std::nullopt;
  size_t r;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), element_size, &r)) return std::nullopt;
  return r;
}

// "[2, 3, 4]" for error messages.
inline std::string shape_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Element count of a shape: -1 when an extent is unknown (negative, as in a declared shape
// with a symbolic dimension); throws LOOM_ERROR_INVALID_ARGUMENT naming the shape when the
// count overflows int64.
inline int64_t element_count(std::span<const int64_t> dims) {
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) return -1;
  std::optional<int64_t> n = try_element_count(dims);
  if (!n)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "shape " + shape_text(dims) + " has more elements than a 64-bit count holds");
  return *n;
}
inline int64_t element_count(int32_t rank, const int64_t* dims) {
  return element_count(std::span<const int64_t>(dims, rank > 0 ? static_cast<size_t>(rank) : 0));
}
inline int64_t element_count(const loom_tensor_t& t) {
  return element_count(t.rank, t.dims);
}

// Bytes of a tensor of `dtype` and `dims`; throws LOOM_ERROR_INVALID_ARGUMENT when an extent is
// negative or the size does not fit.
inline size_t byte_size(loom_dtype_t dtype, std::span<const int64_t> dims) {
  int64_t count = element_count(dims);
  if (count < 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "a tensor of shape " + shape_text(dims) + " cannot be allocated: an extent is negative");
  std::optional<size_t> bytes = try_byte_size(count, dtype_size(dtype));
  if (!bytes)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "a tensor of shape " + shape_text(dims) + " has more bytes than memory can address");
  return *bytes;
}

// ---- run limits and cancellation (ABI 1.4) ---------------------------------------------------

// "1.5 GiB" for limit messages.
inline std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " bytes";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, units[u]);
  return text;
}

// The limits of one device run, read from loom_run_args_t::control when the host offers it
// (a 1.3 host offers none: no bounds, never cancelled). Devices keep one per run and call
// poll() between steps and check_tensor_bytes() before each run-time allocation.
class RunControl {
 public:
  RunControl() = default;
  explicit RunControl(const loom_run_args_t* args) {
    if (args && LOOM_HAS_MEMBER(args, loom_run_args_t, control) && args->control &&
        args->control->struct_size >= sizeof(loom_run_control_t))
      control_ = args->control;
  }
  explicit RunControl(const loom_run_control_t* control) : control_(control) {}

  // Throws the host's status (LOOM_ERROR_CANCELLED) when the run must stop.
  void poll() const {
    if (control_ && control_->poll) check(control_->poll(control_->user));
  }
  // Throws LOOM_ERROR_LIMIT_EXCEEDED, naming `what` and the limit, when one tensor of `bytes`
  // is more than the run allows.
  void check_tensor_bytes(uint64_t bytes, const std::string& what) const {
    if (!control_ || !control_->max_tensor_bytes || bytes <= control_->max_tensor_bytes) return;
    fail(LOOM_ERROR_LIMIT_EXCEEDED,
         what + " needs " + bytes_text(bytes) + ", more than the tensor limit of " +
             bytes_text(control_->max_tensor_bytes) +
             " (session option max_tensor_bytes, infer-run --max-tensor-bytes)");
  }
  // Throws LOOM_ERROR_LIMIT_EXCEEDED when `live` bytes of run-time allocations exceed the bound.
  void check_run_bytes(uint64_t live, const std::string& what) const {
    if (!control_ || !control_->max_run_bytes || live <= control_->max_run_bytes) return;
    fail(LOOM_ERROR_LIMIT_EXCEEDED,
         what + " would bring the run's allocations to " + bytes_text(live) +
             ", more than the run limit of " + bytes_text(control_->max_run_bytes) +
             " (session option max_run_bytes, infer-run --max-run-bytes)");
  }
  // True when the host profiles this run (1.5): the device then reports each step with
  // profile(). Check it before reading the clock, so that an unprofiled run pays nothing.
  bool profiling() const {
    return control_ && LOOM_HAS_MEMBER(control_, loom_run_control_t, profile) &&
           control_->profile;
  }
  // Reports one finished step (start and end from now_ns()); `nodes` are indices of the
  // compiled graph's nodes that the step computed. Does nothing when the run is not profiled.
  void profile(const char* name, const char* detail, std::span<const int32_t> nodes,
               uint64_t start_ns, uint64_t end_ns) const {
    if (!profiling()) return;
    loom_profile_step_t step;
    std::memset(&step, 0, sizeof step);
    step.struct_size = sizeof step;
    step.name = name ? name : "";
    step.detail = detail;
    step.num_nodes = nodes.size();
    step.nodes = nodes.data();
    step.start_ns = start_ns;
    step.end_ns = end_ns;
    control_->profile(control_->user, &step);
  }
  // The clock of loom_profile_step_t: CLOCK_MONOTONIC in nanoseconds.
  static uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  // 0: no bound.
  int64_t max_loop_iterations() const { return control_ ? control_->max_loop_iterations : 0; }
  uint64_t max_run_bytes() const { return control_ ? control_->max_run_bytes : 0; }
  const loom_run_control_t* raw() const { return control_; }

 private:
  const loom_run_control_t* control_ = nullptr;
};
inline std::span<const int64_t> shape_of(const loom_tensor_t& t) {
  return {t.dims, static_cast<size_t>(t.rank)};
}
template <typename T>
T* data_of(const loom_tensor_t& t) {
  return static_cast<T*>(t.data);
}

// A loom_tensor_t with struct_size set and everything else zero.
inline loom_tensor_t empty_tensor() {
  loom_tensor_t t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  return t;
}

// For loom_plugin_entry: fails with LOOM_ERROR_INCOMPATIBLE, naming both versions, when the host
// speaks another major ABI version than the one this plugin was built against.
inline void require_host_abi_major(const loom_host_api_t* host, const std::string& plugin) {
  if (LOOM_ABI_MAJOR(host->abi_version) == LOOM_ABI_VERSION_MAJOR) return;
  auto text = [](uint32_t v) {
    return std::to_string(LOOM_ABI_MAJOR(v)) + "." + std::to_string(LOOM_ABI_MINOR(v));
  };
  fail(LOOM_ERROR_INCOMPATIBLE, plugin + " plugin speaks ABI " + text(LOOM_ABI_VERSION) +
                                    " but the host speaks ABI " + text(host->abi_version) +
                                    "; rebuild the plugin for this host");
}

// One "key=value" item of the device options (loom_device_create_args_t.options).
struct DeviceOption {
  std::string key;  // without the device prefix
  std::string value;
};

// The options string reaches every device of a session, so it follows one convention:
//   key=value          common to all devices: every device understands `threads` (a count) and
//                      `precision` (f32, bf16, f16; a device computes in f32 what it cannot do
//                      in the asked precision)
//   DEVICE.key=value   for the device family DEVICE only (e.g. onednn.winograd=off)
// Returns the items meant for `device`: the unprefixed ones and its own prefixed ones (prefix
// removed); other devices' items are left out. A device then rejects a key it does not know,
// naming the keys it does (see unknown_option_message). Throws Error for an item without '='.
inline std::vector<DeviceOption> device_options(const char* options, std::string_view device) {
  std::vector<DeviceOption> result;
  std::string_view text = options ? options : "";
  while (!text.empty()) {
    size_t end = text.find(';');
    std::string_view item = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw Error(LOOM_ERROR_INVALID_ARGUMENT, std::string(device) + " device: option '" +
                                                   std::string(item) + "' is not KEY=VALUE");
    std::string_view key = item.substr(0, eq);
    size_t dot = key.find('.');
    if (dot != std::string_view::npos) {
      if (key.substr(0, dot) != device) continue;  // another device's option
      key = key.substr(dot + 1);
    }
    result.push_back({std::string(key), std::string(item.substr(eq + 1))});
  }
  return result;
}

// The error text for an option key `device` does not know; `known` lists its keys.
inline std::string unknown_option_message(std::string_view device, const std::string& key,
                                          std::string_view known) {
  return std::string(device) + " device: unknown option '" + key +
         "' (known: " + std::string(known) +
         "; an option for one device only is written DEVICE.KEY=VALUE)";
}

}  // namespace loom::sdk
