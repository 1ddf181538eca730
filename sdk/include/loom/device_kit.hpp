// The device kit: a small C++ interface that implements loom_device_api_t once. A device plugin
// derives from kit::Device, kit::Buffer and kit::Executable and names a kit::Family (what
// enumerate and create do); kit::device_api() turns them into the ABI table. What every device
// needs and used to write for itself lives here:
//   - every ABI entry runs inside sdk::guard: no exception crosses the boundary, and the entries
//     without a status (enumerate, get_info, supports_node) swallow failures as the ABI says;
//   - NULL arguments are refused with a message naming the function;
//   - copy_to_host / copy_from_host and run inputs are range-checked against the buffer before
//     the device sees them;
//   - run checks the number of inputs and outputs and each input's dtype against the compiled
//     subgraph, hands the device zeroed outputs and, when the run fails, frees the outputs it
//     had already made (rollback), so the caller never owns half a result;
//   - loom_device_info_t is filled honouring the caller's struct_size, cost hints (ABI 1.9)
//     included;
//   - device options are read by kit::OptionReader (threads, precision and the device's own keys,
//     with one wording for every error), instances are picked by kit::pick_instance.
// Header-only, on top of plugin.hpp and host_memory.hpp. The ABI's handle types stay opaque:
// loom_device_t* is a kit::Device*, loom_buffer_t* a kit::Buffer*, loom_executable_t* a
// kit::Executable* (buffer_of() and handle() convert).
//
//   class MyFamily : public loom::sdk::kit::Family { ... };   // Family("mydev")
//   MyFamily family;
//   const loom_device_api_t kApi = loom::sdk::kit::device_api(family, "My device");
//   extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(...) {
//     return loom::sdk::device_plugin_entry(host, registrar, info, {...}, kApi);
//   }
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <loom/device_plugin.hpp>
#include <loom/host_memory.hpp>
#include <loom/plugin.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace loom::sdk::kit {

// The scheduler's cost hints of an instance (loom_device_info_t's cost_* members, ABI 1.9; the
// units are theirs). 0 = no hint: the host's default applies. They rank placements, they need not
// predict latency; the transfer numbers matter only without LOOM_DEVICE_HOST_MEMORY.
struct CostHints {
  double gflops = 0;               // sustained arithmetic throughput, 1e9 FLOP/s
  double transfer_gbps = 0;        // host <-> device bandwidth, 1e9 bytes/s
  double transfer_latency_us = 0;  // fixed cost of one copy to or from the host
  double launch_us = 0;            // fixed cost of running one executable
};

// One instance as enumerate lists it and get_info describes it.
struct InstanceInfo {
  std::string name;         // "cpu", "opencl:1"
  std::string description;  // hardware, driver, threads...
  std::string unavailable;  // why it cannot be used here; empty when it can
  uint32_t flags = 0;       // LOOM_DEVICE_*
  CostHints cost{};         // what the scheduler should assume of it
};

// Device memory. `size` is what the core may address (copies and input tensors are checked
// against it); `data` is the host address of byte 0 when the memory is host memory, else NULL.
class Buffer {
 public:
  virtual ~Buffer() = default;
  size_t size = 0;
  void* data = nullptr;
};

// Plain host memory: an aligned allocation, or memory shared with whoever made it (a run hands
// its results over without copying them). `keep` holds anything else the bytes need (the
// strings behind a string tensor's views).
class HostBuffer final : public Buffer {
 public:
  std::shared_ptr<void> owner;
  std::shared_ptr<const void> keep;

  static std::unique_ptr<HostBuffer> allocate(size_t size, const std::string& what) {
    auto b = std::make_unique<HostBuffer>();
    b->owner = allocate_host_block(size, what);
    b->data = b->owner.get();
    b->size = size;
    return b;
  }
  static std::unique_ptr<HostBuffer> share(std::shared_ptr<void> owner, void* data, size_t size) {
    auto b = std::make_unique<HostBuffer>();
    b->owner = std::move(owner);
    b->data = data;
    b->size = size;
    return b;
  }
};

// What compile gets: the subgraph (valid during the call) and the core's arena size.
class CompileRequest {
 public:
  explicit CompileRequest(const loom_compile_args_t& args) : args_(args) {}
  const loom_graph_t& graph() const { return *args_.graph; }
  size_t arena_size() const { return args_.arena_size; }
  // Tells the host (ABI 1.3) that constant value `id`'s bytes are no longer read: the device
  // holds its own copy. Call it during compile only; does nothing for an older host.
  void constant_copied(int32_t id) const {
    if (LOOM_HAS_MEMBER(&args_, loom_compile_args_t, host_user) && args_.constant_copied)
      args_.constant_copied(args_.host_user, id);
  }
  // Tells the host (ABI 1.8) that the executable also runs when graph input `input` has
  // another extent on `axis` (see loom_compile_args_t::free_axis for what the device then
  // promises). Call it during compile only; does nothing for an older host.
  void free_axis(int32_t input, int32_t axis) const {
    if (LOOM_HAS_MEMBER(&args_, loom_compile_args_t, free_axis) && args_.free_axis)
      args_.free_axis(args_.host_user, input, axis);
  }
  const loom_compile_args_t& raw() const { return args_; }

 private:
  const loom_compile_args_t& args_;
};

// A compiled subgraph.
class Executable {
 public:
  virtual ~Executable() = default;
  // Runs the subgraph. The kit has checked that the counts match the compiled graph, that each
  // input has the graph's dtype and lies inside its buffer, and has zeroed every output. The
  // device fills args.outputs (buffers from its own allocate, wrapped by handle()); when it
  // throws, the kit frees the outputs already set.
  virtual void run(const loom_run_args_t& args) = 0;

 private:
  friend struct Entries;
  std::vector<loom_dtype_t> input_dtypes_;  // from the compiled graph
  size_t num_outputs_ = 0;
};

// One device instance.
class Device {
 public:
  explicit Device(InstanceInfo info) : info_(std::move(info)) {}
  virtual ~Device() = default;

  const InstanceInfo& info() const { return info_; }
  // The family name the kit created it under ("opencl"), for messages.
  const std::string& family() const { return family_; }

  // Empty when the device can run `node` of `graph` (shapes where known); otherwise why not,
  // shown by --explain. May throw: the exception's text becomes the reason. Thread-safe.
  virtual std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) = 0;
  virtual std::unique_ptr<Executable> compile(const CompileRequest& request) = 0;

  // Device memory of `size` bytes. The default is host memory.
  virtual std::unique_ptr<Buffer> allocate(size_t size) {
    return HostBuffer::allocate(size, family_ + " alloc");
  }
  // Host address of a buffer for the core, or NULL when the core must copy.
  virtual void* host_pointer(Buffer& buffer) {
    return (info_.flags & LOOM_DEVICE_HOST_MEMORY) ? buffer.data : nullptr;
  }
  // Copies between a buffer and host memory; the range is checked, size > 0, pointers set.
  virtual void read(Buffer& src, size_t offset, void* dst, size_t size) {
    if (!src.data) fail(LOOM_ERROR_INTERNAL, family_ + " copy_to_host: buffer has no host memory");
    std::memcpy(dst, static_cast<const char*>(src.data) + offset, size);
  }
  virtual void write(const void* src, Buffer& dst, size_t offset, size_t size) {
    if (!dst.data)
      fail(LOOM_ERROR_INTERNAL, family_ + " copy_from_host: buffer has no host memory");
    std::memcpy(static_cast<char*>(dst.data) + offset, src, size);
  }

 protected:
  InstanceInfo info_;

 private:
  friend struct Entries;
  std::string family_;
};

// loom_device_create_args_t, read: threads is >= 0 (0: the device's default).
struct CreateArgs {
  loom_host_t* host = nullptr;
  int32_t instance = -1;  // index from enumerate, or -1: the best usable one
  int32_t threads = 0;
  const char* options = "";
};

// The device family a plugin registers: lists its instances and creates one.
class Family {
 public:
  explicit Family(std::string name) : name_(std::move(name)) {}
  virtual ~Family() = default;
  const std::string& name() const { return name_; }
  // The instances here, usable or not. A failure is reported as one unavailable instance named
  // after the family, with the exception's text as the reason.
  virtual std::vector<InstanceInfo> enumerate() = 0;
  virtual std::unique_ptr<Device> create(const CreateArgs& args) = 0;

 private:
  std::string name_;
};

// ---- conversions between the ABI's opaque handles and the kit's types ----------------------

template <class B = Buffer>
B& buffer_of(loom_buffer_t* handle) {
  return static_cast<B&>(*reinterpret_cast<Buffer*>(handle));
}
template <class B = Buffer>
const B& buffer_of(const loom_buffer_t* handle) {
  return static_cast<const B&>(*reinterpret_cast<const Buffer*>(handle));
}
inline loom_buffer_t* handle(Buffer* buffer) {
  return reinterpret_cast<loom_buffer_t*>(buffer);
}

// An output tensor of `dtype` and `dims` held by `buffer` (its `size` bytes), released into the
// tensor: the caller of run owns it from here (the kit frees it if the run fails later).
inline void hand_over(std::unique_ptr<Buffer> buffer, loom_dtype_t dtype,
                      std::span<const int64_t> dims, loom_tensor_t& out, bool host_visible) {
  if (dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_INTERNAL,
         "an output of rank " + std::to_string(dims.size()) + " exceeds LOOM_MAX_RANK");
  out = empty_tensor();
  out.dtype = dtype;
  out.rank = static_cast<int32_t>(dims.size());
  std::copy(dims.begin(), dims.end(), out.dims);
  out.byte_size = buffer->size;
  out.data = host_visible ? buffer->data : nullptr;
  out.buffer = handle(buffer.release());
}

// ---- helpers for create ------------------------------------------------------------------

// The instance `requested` asks for among `listed` (enumerate's list): -1 picks the first usable
// one. Fails with NOT_FOUND for an index past the list and UNAVAILABLE for an unusable one,
// naming the reasons.
inline size_t pick_instance(const std::vector<InstanceInfo>& listed, int32_t requested,
                            const std::string& family) {
  if (listed.empty()) fail(LOOM_ERROR_UNAVAILABLE, family + ": no device instance found");
  if (requested < 0) {
    for (size_t i = 0; i < listed.size(); ++i)
      if (listed[i].unavailable.empty()) return i;
    std::string reasons;
    for (const InstanceInfo& i : listed)
      reasons.append(reasons.empty() ? "" : "; ").append(i.name).append(": ").append(i.unavailable);
    fail(LOOM_ERROR_UNAVAILABLE, family + ": no usable device (" + reasons + ")");
  }
  const size_t index = static_cast<size_t>(requested);
  if (index >= listed.size())
    fail(LOOM_ERROR_NOT_FOUND,
         family + ":" + std::to_string(requested) + " does not exist (there " +
             (listed.size() == 1 ? "is 1" : "are " + std::to_string(listed.size())) +
             ": see infer-run --list-devices)");
  if (!listed[index].unavailable.empty())
    fail(LOOM_ERROR_UNAVAILABLE, listed[index].name + ": " + listed[index].unavailable);
  return index;
}

// A thread count: `threads` when set, else the machine's hardware threads.
inline int resolve_threads(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Reads a device's options (sdk::device_options: KEY=VALUE;..., DEVICE.KEY for one device) into
// the variables the device declares, with one wording for every device's errors. Every device
// accepts `threads` and `precision` (declare them, or ignore() them when they have no effect).
//
//   std::string precision = "f32", gemm = "auto";
//   int threads = args.threads;
//   kit::OptionReader("opencl").threads(&threads).precision(&precision)
//       .choice("gemm", {"auto", "tiled", "blocked"}, &gemm).read(args.options);
class OptionReader {
 public:
  explicit OptionReader(std::string device) : device_(std::move(device)) {}

  // threads=N, 0..4096 (0: the device's default).
  OptionReader& threads(int* out) { return add("threads", "N", Kind::kThreads, out); }
  // precision=f32|bf16|f16: the device computes in f32 what it cannot do in the asked one.
  OptionReader& precision(std::string* out) {
    return choice("precision", {"f32", "bf16", "f16"}, out);
  }
  OptionReader& choice(const char* key, std::initializer_list<const char*> values,
                       std::string* out) {
    std::string spelled;
    // Appends, not `"|" + std::string(v)`: GCC 12 at -O3 warns (-Wrestrict) on that form.
    for (const char* v : values) spelled.append(spelled.empty() ? "" : "|").append(v);
    Option& o = add_option(key, spelled, Kind::kChoice, out);
    o.values.assign(values.begin(), values.end());
    return *this;
  }
  // KEY=none or KEY=a,b,...: a comma-separated subset of `values` (each listed once at most).
  OptionReader& subset(const char* key, std::initializer_list<const char*> values,
                       std::vector<std::string>* out) {
    std::string spelled = "none|";
    for (const char* v : values) spelled.append(spelled.back() == '|' ? "" : ",").append(v);
    Option& o = add_option(key, spelled, Kind::kSubset, out);
    o.values.assign(values.begin(), values.end());
    return *this;
  }
  // KEY=0|1 (also true/false, on/off).
  OptionReader& flag(const char* key, bool* out) { return add(key, "0|1", Kind::kFlag, out); }
  // Accepted and without effect on this device (a GPU's `threads`); `spelled` is what the key
  // takes, for the list of known keys ("N").
  OptionReader& ignore(const char* key, const char* spelled) {
    return add(key, spelled, Kind::kIgnored, nullptr);
  }

  // Reads `options`; fails with INVALID_ARGUMENT naming the key and what it accepts.
  void read(const char* options) const {
    for (const DeviceOption& item : device_options(options, device_)) {
      const Option* o = find(item.key);
      if (!o) fail(LOOM_ERROR_INVALID_ARGUMENT, unknown_option_message(device_, item.key, known()));
      const std::string& v = item.value;
      auto bad = [&](const std::string& expected) {
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             device_ + " device: option " + item.key + "='" + v + "' is not " + expected);
      };
      switch (o->kind) {
        case Kind::kThreads: {
          char* stop = nullptr;
          long n = std::strtol(v.c_str(), &stop, 10);
          if (v.empty() || *stop != '\0' || n < 0 || n > 4096) bad("a thread count 0..4096");
          *static_cast<int*>(o->out) = static_cast<int>(n);
          break;
        }
        case Kind::kChoice: {
          if (std::find(o->values.begin(), o->values.end(), v) == o->values.end()) {
            std::string list;
            for (size_t i = 0; i < o->values.size(); ++i)
              list.append(i == 0                      ? ""
                          : i + 1 == o->values.size() ? " or "
                                                      : ", ")
                  .append(o->values[i]);
            bad(list);
          }
          *static_cast<std::string*>(o->out) = v;
          break;
        }
        case Kind::kSubset: {
          std::vector<std::string> picked;
          if (v != "none") {
            std::string_view rest = v;
            while (true) {
              const size_t comma = rest.find(',');
              const std::string item(rest.substr(0, comma));
              if (std::find(o->values.begin(), o->values.end(), item) == o->values.end() ||
                  std::find(picked.begin(), picked.end(), item) != picked.end())
                bad("none or a list of distinct items from " + o->spelled.substr(5));
              picked.push_back(item);
              if (comma == std::string_view::npos) break;
              rest = rest.substr(comma + 1);
            }
          }
          *static_cast<std::vector<std::string>*>(o->out) = std::move(picked);
          break;
        }
        case Kind::kFlag: {
          const bool on = v == "1" || v == "true" || v == "on";
          if (!on && v != "0" && v != "false" && v != "off") bad("0 or 1");
          *static_cast<bool*>(o->out) = on;
          break;
        }
        case Kind::kIgnored:
          break;
      }
    }
  }

  // "threads=N, precision=f32|bf16|f16, gemm=auto|tiled|blocked": the keys unknown-key errors list.
  std::string known() const {
    std::string text;
    for (const Option& o : options_)
      text.append(text.empty() ? "" : ", ").append(o.key).append("=").append(o.spelled);
    return text;
  }

 private:
  enum class Kind { kThreads, kChoice, kSubset, kFlag, kIgnored };
  struct Option {
    std::string key, spelled;
    Kind kind;
    void* out;
    std::vector<std::string> values;
  };
  Option& add_option(const char* key, std::string spelled, Kind kind, void* out) {
    options_.push_back({key, std::move(spelled), kind, out, {}});
    return options_.back();
  }
  OptionReader& add(const char* key, std::string spelled, Kind kind, void* out) {
    add_option(key, std::move(spelled), kind, out);
    return *this;
  }
  const Option* find(const std::string& key) const {
    for (const Option& o : options_)
      if (o.key == key) return &o;
    return nullptr;
  }

  std::string device_;
  std::vector<Option> options_;
};

// ---- the ABI table -------------------------------------------------------------------------

namespace detail {

inline void copy_text(char* dst, size_t capacity, const std::string& text) {
  std::snprintf(dst, capacity, "%s", text.c_str());
}

// Fills `out` with `info`, writing no more than the caller's struct_size (0: the whole struct).
inline void fill_info(const InstanceInfo& info, loom_device_info_t* out) {
  size_t size = out->struct_size ? std::min(out->struct_size, sizeof(loom_device_info_t))
                                 : sizeof(loom_device_info_t);
  loom_device_info_t filled{};
  filled.struct_size = size;
  copy_text(filled.name, sizeof filled.name, info.name);
  copy_text(filled.description, sizeof filled.description, info.description);
  filled.available = info.unavailable.empty();
  copy_text(filled.unavailable_reason, sizeof filled.unavailable_reason, info.unavailable);
  filled.flags = info.flags;
  filled.cost_gflops = info.cost.gflops;
  filled.cost_transfer_gbps = info.cost.transfer_gbps;
  filled.cost_transfer_latency_us = info.cost.transfer_latency_us;
  filled.cost_launch_us = info.cost.launch_us;
  std::memcpy(out, &filled, size);
}

// True when [offset, offset + size) lies inside the buffer (the cheap test before a message).
inline bool in_range(const loom_buffer_t* handle, size_t offset, size_t size) {
  if (!handle) return false;
  const size_t capacity = buffer_of(handle).size;
  return offset <= capacity && size <= capacity - offset;
}

inline void check_range(const loom_buffer_t* handle, size_t offset, size_t size,
                        const std::string& what) {
  if (!handle) fail(LOOM_ERROR_INVALID_ARGUMENT, what + ": buffer is NULL");
  const size_t capacity = buffer_of(handle).size;
  if (offset > capacity || size > capacity - offset)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + ": range [" + std::to_string(offset) + ", +" +
                                          std::to_string(size) + ") exceeds the buffer of " +
                                          std::to_string(capacity) + " bytes");
}

}  // namespace detail

// The loom_device_api_t functions, once. (Plugins build with hidden visibility, so each has its
// own copy: no interposition between plugins built against different SDK versions.)
struct Entries {
  static Family& family(void* user) { return *static_cast<Family*>(user); }
  static Device& device(loom_device_t* d) { return *reinterpret_cast<Device*>(d); }
  static Executable& executable(loom_executable_t* e) { return *reinterpret_cast<Executable*>(e); }

  static void enumerate(void* user, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
    if (!user || !fn) return;
    std::vector<InstanceInfo> listed;
    try {
      listed = family(user).enumerate();
    } catch (const std::exception& e) {
      listed = {InstanceInfo{name_of(user), "", e.what(), 0}};
    } catch (...) {
      listed = {InstanceInfo{name_of(user), "", "enumerating the devices failed", 0}};
    }
    for (const InstanceInfo& i : listed) {
      loom_device_info_t info{};
      info.struct_size = sizeof info;
      detail::fill_info(i, &info);
      fn(fn_user, &info);
    }
  }

  static loom_status_t* create(void* user, const loom_device_create_args_t* args,
                               loom_device_t** out) {
    return guard([&] {
      const std::string name = name_of(user);
      if (!user || !args || !out)
        fail(LOOM_ERROR_INVALID_ARGUMENT, name + ": create without args or out");
      if (args->threads < 0)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             name + " device: negative thread count " + std::to_string(args->threads));
      CreateArgs read{args->host, args->instance, args->threads,
                      args->options ? args->options : ""};
      std::unique_ptr<Device> made = family(user).create(read);
      if (!made) fail(LOOM_ERROR_INTERNAL, name + ": create made no device");
      made->family_ = name;
      *out = reinterpret_cast<loom_device_t*>(made.release());
    });
  }

  static void destroy(loom_device_t* d) { delete reinterpret_cast<Device*>(d); }

  static void get_info(loom_device_t* d, loom_device_info_t* out) {
    if (!d || !out) return;
    try {
      detail::fill_info(device(d).info(), out);
    } catch (...) {
      // get_info must not fail.
    }
  }

  static void supports_node(loom_device_t* d, const loom_graph_t* graph, const loom_node_t* node,
                            loom_support_t* out) {
    if (!out) return;
    std::string reason;
    try {
      reason = (d && graph && node) ? device(d).why_unsupported(*graph, *node)
                                    : "supports_node called without a device, graph or node";
    } catch (const std::exception& e) {
      reason = e.what();
      if (reason.empty()) reason = "the device failed while checking the node";
    } catch (...) {
      reason = "the device failed while checking the node";
    }
    out->supported = reason.empty();
    detail::copy_text(out->reason, sizeof out->reason, reason);
  }

  static loom_status_t* alloc(loom_device_t* d, size_t size, loom_buffer_t** out) {
    return guard([&] {
      if (!d || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "alloc: no device or out");
      std::unique_ptr<Buffer> made = device(d).allocate(size);
      made->size = size;
      *out = handle(made.release());
    });
  }

  static void free_buffer(loom_device_t*, loom_buffer_t* b) { delete reinterpret_cast<Buffer*>(b); }

  static void* buffer_host_ptr(loom_device_t* d, loom_buffer_t* b) {
    if (!d || !b) return nullptr;
    return device(d).host_pointer(buffer_of(b));
  }

  static loom_status_t* copy_to_host(loom_device_t* d, loom_buffer_t* src, size_t offset, void* dst,
                                     size_t size) {
    return guard([&] {
      auto what = [&] { return (d ? device(d).family_ + " " : std::string()) + "copy_to_host"; };
      if (!detail::in_range(src, offset, size)) detail::check_range(src, offset, size, what());
      if (!size) return;
      if (!dst) fail(LOOM_ERROR_INVALID_ARGUMENT, what() + ": dst is NULL");
      if (!d) fail(LOOM_ERROR_INVALID_ARGUMENT, what() + ": device is NULL");
      device(d).read(buffer_of(src), offset, dst, size);
    });
  }

  static loom_status_t* copy_from_host(loom_device_t* d, const void* src, loom_buffer_t* dst,
                                       size_t offset, size_t size) {
    return guard([&] {
      auto what = [&] { return (d ? device(d).family_ + " " : std::string()) + "copy_from_host"; };
      if (!detail::in_range(dst, offset, size)) detail::check_range(dst, offset, size, what());
      if (!size) return;
      if (!src) fail(LOOM_ERROR_INVALID_ARGUMENT, what() + ": src is NULL");
      if (!d) fail(LOOM_ERROR_INVALID_ARGUMENT, what() + ": device is NULL");
      device(d).write(src, buffer_of(dst), offset, size);
    });
  }

  static loom_status_t* compile(loom_device_t* d, const loom_compile_args_t* args,
                                loom_executable_t** out) {
    return guard([&] {
      if (!d || !args || !args->graph || !out)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "compile: missing device, args, graph or out");
      const loom_graph_t& g = *args->graph;
      std::unique_ptr<Executable> made = device(d).compile(CompileRequest(*args));
      if (!made) fail(LOOM_ERROR_INTERNAL, device(d).family_ + " compile made no executable");
      made->input_dtypes_.clear();
      for (size_t i = 0; i < g.num_inputs; ++i) {
        const int32_t id = g.inputs[i];
        made->input_dtypes_.push_back(id >= 0 && static_cast<size_t>(id) < g.num_values
                                          ? g.values[id]->dtype
                                          : LOOM_DTYPE_UNDEFINED);
      }
      made->num_outputs_ = g.num_outputs;
      *out = reinterpret_cast<loom_executable_t*>(made.release());
    });
  }

  static void release_executable(loom_device_t*, loom_executable_t* e) {
    delete reinterpret_cast<Executable*>(e);
  }

  static loom_status_t* run(loom_device_t* d, loom_executable_t* e, const loom_run_args_t* args) {
    return guard([&] {
      if (!d || !e || !args)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "run: missing device, executable or args");
      // Messages are made only on failure: this runs for every run of every subgraph.
      auto what = [&] { return device(d).family_ + " run"; };
      Executable& exe = executable(e);
      const size_t num_inputs = exe.input_dtypes_.size();
      if (args->num_inputs != num_inputs || args->num_outputs != exe.num_outputs_)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             what() + ": the subgraph takes " + std::to_string(num_inputs) + " inputs and " +
                 std::to_string(exe.num_outputs_) + " outputs, got " +
                 std::to_string(args->num_inputs) + " and " + std::to_string(args->num_outputs));
      if ((num_inputs && !args->inputs) || (exe.num_outputs_ && !args->outputs))
        fail(LOOM_ERROR_INVALID_ARGUMENT, what() + ": inputs or outputs are NULL");
      for (size_t i = 0; i < num_inputs; ++i) {
        const loom_tensor_t& t = args->inputs[i];
        const loom_dtype_t want = exe.input_dtypes_[i];
        if (want != LOOM_DTYPE_UNDEFINED && t.dtype != want)
          fail(LOOM_ERROR_INVALID_ARGUMENT, what() + ": input " + std::to_string(i) + " is " +
                                                dtype_name(t.dtype) + ", the subgraph takes " +
                                                dtype_name(want));
        if (t.rank < 0 || t.rank > LOOM_MAX_RANK)
          fail(LOOM_ERROR_INVALID_ARGUMENT,
               what() + ": input " + std::to_string(i) + " has rank " + std::to_string(t.rank));
        if (t.buffer)
          detail::check_range(t.buffer, t.offset, t.byte_size,
                              what() + ": input " + std::to_string(i));
      }
      for (size_t i = 0; i < exe.num_outputs_; ++i) args->outputs[i] = empty_tensor();
      // A run cancelled (or past its deadline) before it starts does not start, on every
      // device; the device polls between its own steps.
      RunControl(args).poll();
      try {
        exe.run(*args);
      } catch (...) {
        // Rollback: the caller owns outputs only when the run succeeds.
        for (size_t i = 0; i < exe.num_outputs_; ++i) {
          delete reinterpret_cast<Buffer*>(args->outputs[i].buffer);
          args->outputs[i] = empty_tensor();
        }
        throw;
      }
    });
  }

 private:
  static std::string name_of(void* user) {
    return user ? family(user).name() : std::string("device");
  }
};

// The ABI table of a device family; `family` must outlive the plugin (a static).
inline loom_device_api_t device_api(Family& family, const char* description) {
  using E = Entries;
  loom_device_api_t api{};
  api.struct_size = sizeof api;
  api.name = family.name().c_str();
  api.description = description;
  api.enumerate = &E::enumerate;
  api.create = &E::create;
  api.destroy = &E::destroy;
  api.get_info = &E::get_info;
  api.supports_node = &E::supports_node;
  api.alloc = &E::alloc;
  api.free_buffer = &E::free_buffer;
  api.buffer_host_ptr = &E::buffer_host_ptr;
  api.copy_to_host = &E::copy_to_host;
  api.copy_from_host = &E::copy_from_host;
  api.compile = &E::compile;
  api.release_executable = &E::release_executable;
  api.run = &E::run;
  api.user = &family;
  return api;
}

}  // namespace loom::sdk::kit
